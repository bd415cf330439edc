// Command softmaxgen generates kernels/softmax_f32_amd64.s and its Go
// declarations: the AVX-512 loops of SoftmaxF32 over runs of short
// contiguous lines (softmax_f32.go), around the exponentials: each line's
// maximum and max − x, and each line's float64 sum and division. Each
// computes exactly what its Go loop computes (the sums in the same four
// chains, the tail into the first, combined as (s0 + s1) + (s2 + s3)), so
// results are bitwise the same with or without them.
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
	maxSub()
	normalize()
	Generate()
}

// counted emits a loop that runs body count times (none when count is
// 0), cnt its counter, name its label.
func counted(name string, count, cnt GPPhysical, body func()) {
	MOVQ(count, cnt)
	TESTQ(cnt, cnt)
	JE(LabelRef(name + "done"))
	Label(name)
	body()
	DECQ(cnt)
	JNE(LabelRef(name))
	Label(name + "done")
}

// maxSub emits softmaxMaxSubF32AVX512(x, d *float32, lines, n, mask int)
// int: for each line of n elements of x in turn, m = its maximum and
// d = m − x along it (mask: the lanes of a line's last partial vector of
// 16), until a line that holds a NaN or whose maximum is ±Inf or zero
// (where Go's max and the AVX-512 one may differ in sign, or the line
// takes Softmax's formula); it returns the lines done.
func maxSub() {
	emit.Func("softmaxMaxSubF32AVX512", "func(x, d *float32, lines, n, mask int) int",
		"softmaxMaxSubF32AVX512 sets d = max − x along each line of n elements of x,",
		"up to the first line with a NaN or whose maximum is ±Inf or ±0, and returns the lines done.")
	x, d, lines, n := RSI, RDI, RCX, RDX
	emit.Params("x d lines n", x, d, lines, n)
	full, rem, done, p, q, cnt := R8, R9, R10, R11, R12, R13
	MOVQ(n, full)
	SHRQ(U8(4), full)
	MOVQ(n, rem)
	ANDQ(U8(15), rem)
	Load(Param("mask"), RAX)
	KMOVW(EAX, K1)
	MOVL(U32(0xff800000), EAX)
	VPBROADCASTD(EAX, Z31) // −Inf, the masked-off lanes of a partial vector
	XORQ(done, done)
	CMPQ(lines, U8(0))
	JE(LabelRef("out"))
	Label("line")
	// m over the line, and a NaN flag.
	VMOVUPS(Z31, Z0)
	KXORW(K2, K2, K2)
	MOVQ(x, p)
	counted("maxloop", full, cnt, func() {
		VMOVUPS(Mem{Base: p}, Z1)
		VMAXPS(Z1, Z0, Z0)
		VCMPPS(U8(3), Z1, Z1, K3) // unordered: NaN
		KORW(K3, K2, K2)
		ADDQ(U8(64), p)
	})
	TESTQ(rem, rem)
	JE(LabelRef("hmax"))
	VMOVUPS(Z31, Z1)
	VMOVUPS(Mem{Base: p}, K1, Z1)
	VMAXPS(Z1, Z0, Z0)
	VCMPPS(U8(3), Z1, Z1, K3)
	KORW(K3, K2, K2)
	Label("hmax")
	KORTESTW(K2, K2)
	JNE(LabelRef("out"))
	VEXTRACTF64X4(U8(1), Z0, Y1)
	VMAXPS(Y1, Y0, Y0)
	VEXTRACTF128(U8(1), Y0, X1)
	VMAXPS(X1, X0, X0)
	VPERMILPS(U8(0x4e), X0, X1)
	VMAXPS(X1, X0, X0)
	VPERMILPS(U8(0xb1), X0, X1)
	VMAXPS(X1, X0, X0)
	VMOVD(X0, EAX)
	ANDL(U32(0x7fffffff), EAX)
	JE(LabelRef("out")) // ±0
	CMPL(EAX, U32(0x7f800000))
	JAE(LabelRef("out")) // ±Inf
	VBROADCASTSS(X0, Z0)
	// d = m − x.
	MOVQ(x, p)
	MOVQ(d, q)
	counted("subloop", full, cnt, func() {
		VMOVUPS(Mem{Base: p}, Z1)
		VSUBPS(Z1, Z0, Z1)
		VMOVUPS(Z1, Mem{Base: q})
		ADDQ(U8(64), p)
		ADDQ(U8(64), q)
	})
	// The last n%16 one at a time: in place, a masked store would overlap
	// the next line's first loads, which then wait for it.
	counted("subtail", rem, cnt, func() {
		VMOVSS(Mem{Base: p}, X1)
		VSUBSS(X1, X0, X1)
		VMOVSS(X1, Mem{Base: q})
		ADDQ(U8(4), p)
		ADDQ(U8(4), q)
	})
	LEAQ(Mem{Base: x, Index: n, Scale: 4}, x)
	LEAQ(Mem{Base: d, Index: n, Scale: 4}, d)
	INCQ(done)
	CMPQ(done, lines)
	JNE(LabelRef("line"))
	Label("out")
	Store(done, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// normalize emits softmaxNormalizeF32AVX512(e *float32, lines, n int, one
// *float64): each line of n elements divided by its sum, taken in float64
// as softmaxF32Normalize does: four chains over the elements below
// n − n%4 (one YMM register), the rest added into the first in order,
// then (s0 + s1) + (s2 + s3); e·(1/s) rounded to float32.
func normalize() {
	emit.Func("softmaxNormalizeF32AVX512", "func(e *float32, lines, n int, one *float64)",
		"softmaxNormalizeF32AVX512 divides each line of n elements of e by its sum, as softmaxF32Normalize does.")
	e, lines, n, one := RSI, RCX, RDX, RDI
	emit.Params("e lines n one", e, lines, n, one)
	quads, tail, eights, rem, p, cnt := R8, R9, R10, R11, R12, R13
	MOVQ(n, quads)
	SHRQ(U8(2), quads)
	MOVQ(n, tail)
	ANDQ(U8(3), tail)
	MOVQ(n, eights)
	SHRQ(U8(3), eights)
	MOVQ(n, rem)
	ANDQ(U8(7), rem)
	VMOVSD(Mem{Base: one}, X5)
	VXORPD(X6, X6, X6)
	TESTQ(lines, lines)
	JE(LabelRef("out"))
	Label("line")
	VXORPD(Y0, Y0, Y0)
	MOVQ(e, p)
	counted("quadloop", quads, cnt, func() {
		VCVTPS2PD(Mem{Base: p}, Y1)
		VADDPD(Y1, Y0, Y0)
		ADDQ(U8(16), p)
	})
	VEXTRACTF128(U8(1), Y0, X2) // s2, s3
	counted("tailloop", tail, cnt, func() {
		VCVTSS2SD(Mem{Base: p}, X6, X1) // X6's upper lane, not X1's: no chain from line to line
		VADDSD(X1, X0, X0)              // into s0, s1 kept
		ADDQ(U8(4), p)
	})
	VHADDPD(X2, X0, X0) // s0 + s1, s2 + s3
	VPERMILPD(U8(1), X0, X1)
	VADDSD(X1, X0, X0)
	VDIVSD(X0, X5, X3)
	VBROADCASTSD(X3, Z3)
	MOVQ(e, p)
	counted("scaleloop", eights, cnt, func() {
		VCVTPS2PD(Mem{Base: p}, Z1)
		VMULPD(Z3, Z1, Z1)
		VCVTPD2PS(Z1, Y1)
		VMOVUPS(Y1, Mem{Base: p})
		ADDQ(U8(32), p)
	})
	// The last n%8 one at a time: a masked store would overlap the next
	// line's first loads, which then wait for it.
	counted("scaletail", rem, cnt, func() {
		VCVTSS2SD(Mem{Base: p}, X6, X1)
		VMULSD(X3, X1, X1)
		VCVTSD2SS(X1, X6, X1)
		VMOVSS(X1, Mem{Base: p})
		ADDQ(U8(4), p)
	})
	Label("next")
	LEAQ(Mem{Base: e, Index: n, Scale: 4}, e)
	DECQ(lines)
	JNE(LabelRef("line"))
	Label("out")
	VZEROUPPER()
	RET()
}
