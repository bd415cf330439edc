package main

import (
	"github.com/gopir/gopir/kernels/internal/avo/emit"
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// resizeDup2 emits resizeDup2F32AVX(dst *float32, ld int, src *float32,
// n, rows int): dst[r·ld + 2i] = dst[r·ld + 2i+1] = src[i] for i < n and
// r < rows, n%4 == 0: the rows of nearest 2× upsampling (resize.go). Each
// group of eight is unpacked against itself (s0 s0 s1 s1 | s4 s4 s5 s5 and
// s2 s2 s3 s3 | s6 s6 s7 s7), its halves put back in order and stored in
// every row; a last group of four takes the unpacking alone.
func resizeDup2() {
	emit.Func("resizeDup2F32AVX", "func(dst *float32, ld int, src *float32, n, rows int)",
		"resizeDup2F32AVX sets dst[r·ld + 2i] = dst[r·ld + 2i+1] = src[i] for i < n and r < rows, n%4 == 0.")
	dst, ld, src, n, rows, p, r := RDI, RDX, RSI, RCX, R8, R9, R10
	emit.Params("dst ld src n rows", dst, ld, src, n, rows)
	SHLQ(U8(2), ld) // in bytes
	eachRow := func(name string, store func(p GPPhysical)) {
		MOVQ(dst, p)
		MOVQ(rows, r)
		Label(name)
		store(p)
		ADDQ(ld, p)
		DECQ(r)
		JNE(LabelRef(name))
	}
	SUBQ(U8(8), n)
	JL(LabelRef("dup2_four"))
	Label("dup2_eight")
	VMOVUPS(Mem{Base: src}, Y0)
	VUNPCKLPS(Y0, Y0, Y1)
	VUNPCKHPS(Y0, Y0, Y2)
	VPERM2F128(U8(0x20), Y2, Y1, Y3)
	VPERM2F128(U8(0x31), Y2, Y1, Y4)
	eachRow("dup2_rows8", func(p GPPhysical) {
		VMOVUPS(Y3, Mem{Base: p})
		VMOVUPS(Y4, Mem{Base: p, Disp: 32})
	})
	ADDQ(U8(32), src)
	ADDQ(U8(64), dst)
	SUBQ(U8(8), n)
	JGE(LabelRef("dup2_eight"))
	Label("dup2_four")
	ADDQ(U8(8), n)
	JE(LabelRef("dup2_done"))
	VMOVUPS(Mem{Base: src}, X0)
	VUNPCKLPS(X0, X0, X1)
	VUNPCKHPS(X0, X0, X2)
	eachRow("dup2_rows4", func(p GPPhysical) {
		VMOVUPS(X1, Mem{Base: p})
		VMOVUPS(X2, Mem{Base: p, Disp: 16})
	})
	Label("dup2_done")
	VZEROUPPER()
	RET()
}
