// Command avxgen generates kernels/avx_amd64.s and its Go declarations:
// loops that need AVX2 only (YMM registers), each computing what its
// portable Go loop computes, so results are bitwise the same with or
// without them:
//   - float32 sums along rows (reduce_rows.go), eight rows at a time, each
//     row's four float64 lanes in one YMM register; element i of a row
//     adds into lane i mod 4 in the order of i, as redSumContig does;
//   - float32 add and multiply of the elementwise kernels (elementwise.go
//     in this directory);
//   - the row copy of nearest 2× upsampling (resize.go).
//
// It lives in kernels/internal/avo, the one module of the avo generators,
// so that package kernels never depends on avo.
// Run it through `go generate ./kernels/` from the main module.
package main

import (
	"github.com/gopir/gopir/kernels/internal/avo/emit"
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("!purego")
	sumRows8()
	ewLoopsF32()
	resizeDup2()
	Generate()
}

// sumRows8 emits redSumRows8F32AVX(x *float32, ld, n int, l *[8][4]float64):
// l[r][i%4] += float64(x[r·ld + i]) for r < 8 and i < n, in the order of
// i, n a multiple of 8. Eight independent chains hide the additions'
// latency that one row's four lanes cannot.
func sumRows8() {
	emit.Func("redSumRows8F32AVX", "func(x *float32, ld, n int, l *[8][4]float64)",
		"redSumRows8F32AVX adds x[r·ld + i] into l[r][i%4] for r < 8 and i < n, in the order of i, n%8 == 0.")
	x, ld, n, l := RSI, RDX, RCX, RDI
	emit.Params("x ld n l", x, ld, n, l)
	SHLQ(U8(2), ld) // in bytes
	rows := []GPPhysical{RSI, RBX, R8, R9, R10, R11, R12, R13}
	for r := 1; r < 8; r++ {
		LEAQ(Mem{Base: rows[r-1], Index: ld, Scale: 1}, rows[r])
	}
	acc := []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7}
	for r, y := range acc {
		VMOVUPD(Mem{Base: l, Disp: 32 * r}, y)
	}
	XORQ(RAX, RAX)
	SHRQ(U8(3), n)
	JE(LabelRef("done"))
	Label("loop")
	for step := range 2 {
		for r, y := range acc {
			VCVTPS2PD(Mem{Base: rows[r], Index: RAX, Scale: 4, Disp: 16 * step}, Y8)
			VADDPD(Y8, y, y)
		}
	}
	ADDQ(U8(8), RAX)
	DECQ(n)
	JNE(LabelRef("loop"))
	Label("done")
	for r, y := range acc {
		VMOVUPD(y, Mem{Base: l, Disp: 32 * r})
	}
	VZEROUPPER()
	RET()
}
