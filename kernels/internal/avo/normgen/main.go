// Command normgen generates kernels/norm_amd64.s and its Go declarations:
// AVX-512 loops of float32 batch norm (norm.go, norm_grad.go): the
// per-channel sums of the statistics and of the gradient, in float64
// lanes, and the element-wise apply and input gradient. Each computes
// exactly what its portable Go loop computes, operation for operation and
// lane for lane (element i of a row adds into lane i mod 32), so results
// are bitwise the same with or without them.
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
	bnSum()
	bnSqDev()
	bnGradSums()
	bnApply()
	bnGradX()
	Generate()
}

// lanes are the four accumulators of 32 float64 lanes: element 8·r + j of
// each block of 32 adds into lane j of register r.
var lanes = []VecPhysical{Z0, Z1, Z2, Z3}

// loadLanes and storeLanes move the 32 lanes at l to and from regs.
func loadLanes(l GPPhysical, regs []VecPhysical) {
	for r, z := range regs {
		VMOVUPD(Mem{Base: l, Disp: 64 * r}, z)
	}
}

func storeLanes(l GPPhysical, regs []VecPhysical) {
	for r, z := range regs {
		VMOVUPD(z, Mem{Base: l, Disp: 64 * r})
	}
}

// blocks32 emits the loop over n/32 blocks of 32 float32 elements, RAX
// the index of the block's first element; body(r) handles elements
// 8·r … 8·r+7 of the block.
func blocks32(n GPPhysical, body func(r int)) {
	XORQ(RAX, RAX)
	SHRQ(U8(5), n)
	JE(LabelRef("done"))
	Label("loop")
	for r := range 4 {
		body(r)
	}
	ADDQ(U8(32), RAX)
	DECQ(n)
	JNE(LabelRef("loop"))
	Label("done")
}

// at is element 8·r of the current block of p.
func at(p GPPhysical, r int) Mem { return Mem{Base: p, Index: RAX, Scale: 4, Disp: 32 * r} }

// bnSum emits bnSumF32AVX512(x *float32, n int, l *[32]float64):
// l[i%32] += float64(x[i]), n a multiple of 32.
func bnSum() {
	emit.Func("bnSumF32AVX512", "func(x *float32, n int, l *[32]float64)",
		"bnSumF32AVX512 adds x[i] into l[i%32] for i < n, n%32 == 0.")
	x, n, l := RSI, RCX, RDI
	emit.Params("x n l", x, n, l)
	loadLanes(l, lanes)
	blocks32(n, func(r int) {
		VCVTPS2PD(at(x, r), Z8)
		VADDPD(Z8, lanes[r], lanes[r])
	})
	storeLanes(l, lanes)
	VZEROUPPER()
	RET()
}

// bnSqDev emits bnSqDevF32AVX512(x *float32, n int, m *float64, l
// *[32]float64): d = float64(x[i]) − m, l[i%32] += d·d, n a multiple of 32.
func bnSqDev() {
	emit.Func("bnSqDevF32AVX512", "func(x *float32, n int, m *float64, l *[32]float64)",
		"bnSqDevF32AVX512 adds (x[i] − m)² into l[i%32] for i < n, n%32 == 0, in float64.")
	x, n, m, l := RSI, RCX, RDX, RDI
	emit.Params("x n m l", x, n, m, l)
	VBROADCASTSD(Mem{Base: m}, Z16)
	loadLanes(l, lanes)
	blocks32(n, func(r int) {
		VCVTPS2PD(at(x, r), Z8)
		VSUBPD(Z16, Z8, Z8)
		VMULPD(Z8, Z8, Z8)
		VADDPD(Z8, lanes[r], lanes[r])
	})
	storeLanes(l, lanes)
	VZEROUPPER()
	RET()
}

// bnGradSums emits bnGradSumsF32AVX512(dy, x *float32, n int, m *float64,
// sdy, sdyx *[32]float64): sdy[i%32] += float64(dy[i]) and sdyx[i%32] +=
// float64(dy[i])·(float64(x[i]) − m), n a multiple of 32.
func bnGradSums() {
	emit.Func("bnGradSumsF32AVX512", "func(dy, x *float32, n int, m *float64, sdy, sdyx *[32]float64)",
		"bnGradSumsF32AVX512 adds dy[i] into sdy[i%32] and dy[i]·(x[i] − m) into sdyx[i%32] for i < n, n%32 == 0, in float64.")
	dy, x, n, m, sdy, sdyx := RSI, RBX, RCX, RDX, RDI, R8
	emit.Params("dy x n m sdy sdyx", dy, x, n, m, sdy, sdyx)
	VBROADCASTSD(Mem{Base: m}, Z16)
	prod := []VecPhysical{Z4, Z5, Z6, Z7}
	loadLanes(sdy, lanes)
	loadLanes(sdyx, prod)
	blocks32(n, func(r int) {
		VCVTPS2PD(at(dy, r), Z8)
		VCVTPS2PD(at(x, r), Z9)
		VADDPD(Z8, lanes[r], lanes[r])
		VSUBPD(Z16, Z9, Z9)
		VMULPD(Z9, Z8, Z9)
		VADDPD(Z9, prod[r], prod[r])
	})
	storeLanes(sdy, lanes)
	storeLanes(sdyx, prod)
	VZEROUPPER()
	RET()
}

// eight emits the loop over n/8 groups of 8 float32 elements, RAX their
// first index; body handles the group at Mem index RAX.
func eight(n GPPhysical, body func()) {
	XORQ(RAX, RAX)
	SHRQ(U8(3), n)
	JE(LabelRef("done"))
	Label("loop")
	body()
	ADDQ(U8(8), RAX)
	DECQ(n)
	JNE(LabelRef("loop"))
	Label("done")
}

// bnApply emits bnApplyF32AVX512(x, y *float32, n int, c *[2]float64):
// y[i] = float32(float64(x[i])·c[0] + c[1]), n a multiple of 8; y may be x.
func bnApply() {
	emit.Func("bnApplyF32AVX512", "func(x, y *float32, n int, c *[2]float64)",
		"bnApplyF32AVX512 sets y[i] = float32(float64(x[i])·c[0] + c[1]) for i < n, n%8 == 0; y may be x.")
	x, y, n, c := RSI, RDI, RCX, RDX
	emit.Params("x y n c", x, y, n, c)
	VBROADCASTSD(Mem{Base: c}, Z16)
	VBROADCASTSD(Mem{Base: c, Disp: 8}, Z17)
	eight(n, func() {
		VCVTPS2PD(at(x, 0), Z0)
		VMULPD(Z16, Z0, Z0)
		VADDPD(Z17, Z0, Z0)
		VCVTPD2PS(Z0, Y1)
		VMOVUPS(Y1, at(y, 0))
	})
	VZEROUPPER()
	RET()
}

// bnGradX emits bnGradXF32AVX512(dy, x, dx *float32, n int, c
// *[5]float64), the training-mode input gradient of batch norm with
// c = (k, mean, invStd, a, b): x̂ = (float64(x[i]) − mean)·invStd,
// dx[i] = float32(k·((float64(dy[i]) − a) − x̂·b)), n a multiple of 8; dx
// may be dy or x.
func bnGradX() {
	emit.Func("bnGradXF32AVX512", "func(dy, x, dx *float32, n int, c *[5]float64)",
		"bnGradXF32AVX512 sets dx[i] = float32(k·((dy[i] − a) − (x[i] − mean)·invStd·b)) for i < n, n%8 == 0, c = (k, mean, invStd, a, b), in float64; dx may be dy or x.")
	dy, x, dx, n, c := RSI, RBX, RDI, RCX, RDX
	emit.Params("dy x dx n c", dy, x, dx, n, c)
	k, mean, is, a, b := Z16, Z17, Z18, Z19, Z20
	for i, z := range []VecPhysical{k, mean, is, a, b} {
		VBROADCASTSD(Mem{Base: c, Disp: 8 * i}, z)
	}
	eight(n, func() {
		VCVTPS2PD(at(dy, 0), Z0)
		VCVTPS2PD(at(x, 0), Z1)
		VSUBPD(mean, Z1, Z1)
		VMULPD(is, Z1, Z1) // x̂
		VSUBPD(a, Z0, Z0)
		VMULPD(b, Z1, Z1)
		VSUBPD(Z1, Z0, Z0)
		VMULPD(k, Z0, Z0)
		VCVTPD2PS(Z0, Y2)
		VMOVUPS(Y2, at(dx, 0))
	})
	VZEROUPPER()
	RET()
}
