// Command expgen generates kernels/exp_amd64.s and its Go declarations:
// AVX-512 loops of float32 SiLU and its gradient, the activation of
// ppyoloe_s, which spent a fifth of its training step in them before they
// existed and a seventh with their first form (a gather from a 64-entry
// table, two divisions in the gradient). SiLU runs ewSiluF32At's float32
// arithmetic sixteen lanes at a time, the gradient ewgSiluF32At's (both on
// siluNegExp32's exponential; the gradient's polynomial near its root
// takes its coefficients as broadcast memory operands). Both compute
// exactly what the portable loops (ewSiluGo32, ewgSiluGo32) compute,
// operation for operation, so results are bitwise the same with or
// without them. The same exponential, masked to 0 beyond e^-80, is
// SoftmaxF32's (softmaxExp32), sixteen lanes at a time likewise.
//
// It lives in its own module so that package kernels never depends on avo.
// Run it through `go generate ./kernels/` from the main module.
package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("!purego")
	siluF32()
	siluBiasF32()
	siluGradF32()
	softmaxExpF32()
	Generate()
}

// The layout of siluF32AVX512's constants (siluConsts32 in package
// kernels): float32s by index, then 2^(j/16) as float32 pairs, the high
// parts then the low ones.
const (
	sInv     = iota // 16/ln2
	sShifter        // 1.5·2^23
	sLn2Hi          // ln2/16, high part
	sLn2Lo          // ln2/16, low part
	sC24            // 1/24
	sC6             // 1/6
	sHalf           // 1/2
	sOne            // 1
	sLo             // -80, the clamp of -x and the least x the loop takes
	sNegZero        // -0 (the sign bit)
	sBias           // 127, as int32 bits
	sTabHi   = 16   // 16 entries
	sTabLo   = 32   // 16 entries
)

// The gradient's constants (ewgSiluF32At's) follow in the same array.
const (
	gHi     = 48 + iota // 80, where x stops
	gSplit              // -0.75, below which s·((1+x) − x·s)
	gRootHi             // x0, high part
	gRootLo             // x0, low part
	gBand               // the polynomial's half-width
	gPoly               // its coefficients, lowest degree first
)

// gPolyLen is the number of the polynomial's coefficients.
const gPolyLen = 8

// siluF32 emits siluF32AVX512(out, x *float32, n int, c *siluConsts32)
// int: ewSiluF32At sixteen float32 lanes at a time, step for step, on
// blocks of 16 of the n elements (n a multiple of 16); it stops before
// the first block with an x under -80 or NaN, which the float32 formula
// does not take, and returns how many elements it did. out may be x.
func siluF32() {
	TEXT("siluF32AVX512", NOSPLIT, "func(out, x *float32, n int, c *[64]float32) int")
	Pragma("noescape")
	Doc("siluF32AVX512 is ewSiluF32At on blocks of 16 of n%16 == 0 elements up to the first block with an",
		"element under siluLo32 or NaN; it returns how many it did. out may be x.")
	siluLoop(false)
}

// siluBiasF32 emits siluBiasF32AVX512(out, x *float32, n int, b
// *float32, c *siluConsts32) int: siluF32AVX512 on x + *b, the sum
// rounded to float32 as the epilogue's separate bias pass rounds it, so
// that a convolution's bias and SiLU take one pass over its output
// instead of two. It stops before the first block with a sum under -80
// or NaN, leaving that block as it was (out may be x), and returns how
// many elements it did.
func siluBiasF32() {
	TEXT("siluBiasF32AVX512", NOSPLIT, "func(out, x *float32, n int, b *float32, c *[64]float32) int")
	Pragma("noescape")
	Doc("siluBiasF32AVX512 is ewSiluF32At(x + *b) on blocks of 16 of n%16 == 0 elements up to the first",
		"block with a sum under siluLo32 or NaN, which it leaves as it was; it returns how many it did.",
		"out may be x.")
	siluLoop(true)
}

// siluLoop emits the body siluF32 and siluBiasF32 share, with the
// parameter b added to each element as it is loaded when bias is set.
func siluLoop(bias bool) {
	out, x, n, c := RDI, RSI, RCX, RDX
	Load(Param("out"), out)
	Load(Param("x"), x)
	Load(Param("n"), n)
	var bp GPPhysical
	if bias {
		bp = RBX
		Load(Param("b"), bp)
	}
	Load(Param("c"), c)
	inv, shifter, ln2Hi, ln2Lo, c24, c6, half, one, lo, negZero, expBias := Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26
	for i, z := range []VecPhysical{inv, shifter, ln2Hi, ln2Lo, c24, c6, half, one, lo, negZero, expBias} {
		VBROADCASTSS(Mem{Base: c, Disp: 4 * i}, z)
	}
	tabHi, tabLo, add := Z27, Z28, Z29
	VMOVUPS(Mem{Base: c, Disp: 4 * sTabHi}, tabHi)
	VMOVUPS(Mem{Base: c, Disp: 4 * sTabLo}, tabLo)
	if bias {
		VBROADCASTSS(Mem{Base: bp}, add)
	}
	e32 := exp32{inv, shifter, ln2Hi, ln2Lo, c24, c6, half, lo, negZero, expBias, tabHi, tabLo}
	XORQ(RAX, RAX)
	SHRQ(U8(4), n)
	JE(LabelRef("done"))
	Label("loop")
	xi, t, k, r, p, q, hi, tlo := Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7
	if bias {
		VADDPS(Mem{Base: x, Index: RAX, Scale: 4}, add, xi)
	} else {
		VMOVUPS(Mem{Base: x, Index: RAX, Scale: 4}, xi)
	}
	VCMPPS(U8(0x19), lo, xi, K1) // !(x >= -80): NGE, unordered
	KORTESTW(K1, K1)
	JNE(LabelRef("done"))
	e32.negExp(xi, q, t, k, r, p, hi, tlo)
	// x/(1+e)
	VADDPS(one, q, q)
	VDIVPS(q, xi, q)
	VMOVUPS(q, Mem{Base: out, Index: RAX, Scale: 4})
	ADDQ(U8(16), RAX)
	DECQ(n)
	JNE(LabelRef("loop"))
	Label("done")
	Store(RAX, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// softmaxExpF32 emits softmaxExpF32AVX512(out, d *float32, n int, c
// *siluConsts32): softmaxExp32(d) sixteen float32 lanes at a time, step for
// step, on the n elements (n a multiple of 16): siluNegExp32(d) = e^-d
// where d <= 80, else 0. d is a line's maximum less each element (>= 0,
// never NaN: softmaxF32 keeps lines without a finite maximum away). out
// may be d.
func softmaxExpF32() {
	TEXT("softmaxExpF32AVX512", NOSPLIT, "func(out, d *float32, n int, c *[64]float32)")
	Pragma("noescape")
	Doc("softmaxExpF32AVX512 is softmaxExp32 on n%16 == 0 elements d >= 0. out may be d.")
	out, d, n, c := RDI, RSI, RCX, RDX
	Load(Param("out"), out)
	Load(Param("d"), d)
	Load(Param("n"), n)
	Load(Param("c"), c)
	inv, shifter, ln2Hi, ln2Lo, c24, c6, half, lo, negZero, bias := Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z24, Z25, Z26
	for i, z := range []VecPhysical{inv, shifter, ln2Hi, ln2Lo, c24, c6, half} {
		VBROADCASTSS(Mem{Base: c, Disp: 4 * i}, z)
	}
	for i, z := range []VecPhysical{lo, negZero, bias} {
		VBROADCASTSS(Mem{Base: c, Disp: 4 * (sLo + i)}, z)
	}
	tabHi, tabLo := Z27, Z28
	VMOVUPS(Mem{Base: c, Disp: 4 * sTabHi}, tabHi)
	VMOVUPS(Mem{Base: c, Disp: 4 * sTabLo}, tabLo)
	e32 := exp32{inv, shifter, ln2Hi, ln2Lo, c24, c6, half, lo, negZero, bias, tabHi, tabLo}
	hiArg := Z29 // 80 = -siluLo32: beyond it the result is 0
	VXORPS(negZero, lo, hiArg)
	XORQ(RAX, RAX)
	SHRQ(U8(4), n)
	JE(LabelRef("done"))
	Label("loop")
	di, e := Z0, Z1
	VMOVUPS(Mem{Base: d, Index: RAX, Scale: 4}, di)
	VCMPPS(U8(0x02), hiArg, di, K1) // d <= 80
	e32.negExp(di, e, Z2, Z3, Z4, Z5, Z6, Z7)
	VMOVAPS_Z(e, K1, e)
	VMOVUPS(e, Mem{Base: out, Index: RAX, Scale: 4})
	ADDQ(U8(16), RAX)
	DECQ(n)
	JNE(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

// exp32 holds the registers of siluNegExp32's constants.
type exp32 struct {
	inv, shifter, ln2Hi, ln2Lo, c24, c6, half, lo, negZero, bias, tabHi, tabLo VecPhysical
}

// negExp emits e = siluNegExp32(x) for sixteen float32 lanes, x >= -80;
// t, k, r, p, hi and tlo are scratch.
func (c exp32) negExp(x, e, t, k, r, p, hi, tlo VecPhysical) {
	q := e
	// t = max(-x, -80)
	VXORPS(c.negZero, x, t)
	VMAXPS(t, c.lo, t)
	// k = (t·inv + shifter) − shifter; r = (t − k·hi) − k·lo
	VMULPS(c.inv, t, k)
	VADDPS(c.shifter, k, k)
	VSUBPS(c.shifter, k, k)
	VMULPS(c.ln2Hi, k, r)
	VSUBPS(r, t, r)
	VMULPS(c.ln2Lo, k, p)
	VSUBPS(p, r, r)
	VCVTTPS2DQ(k, k)
	// q = r²·((r/24 + 1/6)·r + 1/2) + r
	VMULPS(c.c24, r, p)
	VADDPS(c.c6, p, p)
	VMULPS(r, p, p)
	VADDPS(c.half, p, p)
	VMULPS(r, r, q)
	VMULPS(p, q, q)
	VADDPS(r, q, q)
	// e = (hi + (lo + hi·q)) · 2^(k>>4), the table indexed by k's low
	// four bits
	VPERMPS(c.tabHi, k, hi)
	VPERMPS(c.tabLo, k, tlo)
	VMULPS(q, hi, q)
	VADDPS(q, tlo, q)
	VADDPS(q, hi, q)
	VPSRAD(U8(4), k, k)
	VPADDD(c.bias, k, k)
	VPSLLD(U8(23), k, k)
	VMULPS(k, q, q)
}

// siluGradF32 emits siluGradF32AVX512(out, x, dy *float32, n int, c
// *siluConsts32) int: dy·ewgSiluF32At(x) sixteen float32 lanes at a time,
// step for step, on blocks of 16 of the n elements (n a multiple of 16);
// it stops before the first block with an x under -80 or NaN, which the
// float32 formula does not take, and returns how many elements it did.
// out may be x or dy.
func siluGradF32() {
	TEXT("siluGradF32AVX512", NOSPLIT, "func(out, x, dy *float32, n int, c *[64]float32) int")
	Pragma("noescape")
	Doc("siluGradF32AVX512 is dy·ewgSiluF32At(x) on blocks of 16 of n%16 == 0 elements up to the first block",
		"with an x under siluLo32 or NaN; it returns how many it did. out may be x or dy.")
	out, x, dy, n, c := RDI, RSI, R9, RCX, RDX
	Load(Param("out"), out)
	Load(Param("x"), x)
	Load(Param("dy"), dy)
	Load(Param("n"), n)
	Load(Param("c"), c)
	inv, shifter, ln2Hi, ln2Lo, c24, c6, half, one, lo, negZero, bias := Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26
	for i, z := range []VecPhysical{inv, shifter, ln2Hi, ln2Lo, c24, c6, half, one, lo, negZero, bias} {
		VBROADCASTSS(Mem{Base: c, Disp: 4 * i}, z)
	}
	tabHi, tabLo := Z27, Z28
	VMOVUPS(Mem{Base: c, Disp: 4 * sTabHi}, tabHi)
	VMOVUPS(Mem{Base: c, Disp: 4 * sTabLo}, tabLo)
	e32 := exp32{inv, shifter, ln2Hi, ln2Lo, c24, c6, half, lo, negZero, bias, tabHi, tabLo}
	xHi, split, rootHi, rootLo, band := Z29, Z30, Z31, Z14, Z15
	for i, z := range []VecPhysical{xHi, split, rootHi, rootLo, band} {
		VBROADCASTSS(Mem{Base: c, Disp: 4 * (gHi + i)}, z)
	}
	XORQ(RAX, RAX)
	SHRQ(U8(4), n)
	JE(LabelRef("done"))
	Label("loop")
	xi, e, s, ga, gb, d, p := Z0, Z1, Z8, Z9, Z10, Z11, Z12
	VMOVUPS(Mem{Base: x, Index: RAX, Scale: 4}, xi)
	VCMPPS(U8(0x19), lo, xi, K1) // !(x >= -80): NGE, unordered
	KORTESTW(K1, K1)
	JNE(LabelRef("done"))
	VMINPS(xHi, xi, xi)
	e32.negExp(xi, e, Z2, Z3, Z4, Z5, Z6, Z7)
	// s = 1/(1+e)
	VADDPS(one, e, s)
	VDIVPS(s, one, s)
	// ga = s·((1+x) − x·s)
	VADDPS(one, xi, ga)
	VMULPS(s, xi, Z2)
	VSUBPS(Z2, ga, ga)
	VMULPS(ga, s, ga)
	// gb = s + x·(s·(e·s))
	VMULPS(s, e, gb)
	VMULPS(gb, s, gb)
	VMULPS(gb, xi, gb)
	VADDPS(gb, s, gb)
	VCMPPS(U8(0x11), split, xi, K2) // x < -0.75, ordered
	VMOVAPS(ga, K2, gb)
	// d = (x − x0hi) − x0lo; within the band d·h(d), h by Horner
	VSUBPS(rootHi, xi, d)
	VSUBPS(rootLo, d, d)
	VBROADCASTSS(Mem{Base: c, Disp: 4 * (gPoly + gPolyLen - 1)}, p)
	for k := gPolyLen - 2; k >= 0; k-- {
		VMULPS(d, p, p)
		VADDPS_BCST(Mem{Base: c, Disp: 4 * (gPoly + k)}, p, p)
	}
	VMULPS(p, d, p)
	VANDNPS(d, negZero, d)        // |d|
	VCMPPS(U8(0x12), band, d, K3) // |d| <= band, ordered
	VMOVAPS(p, K3, gb)
	// dy·g
	VMULPS(Mem{Base: dy, Index: RAX, Scale: 4}, gb, gb)
	VMOVUPS(gb, Mem{Base: out, Index: RAX, Scale: 4})
	ADDQ(U8(16), RAX)
	DECQ(n)
	JNE(LabelRef("loop"))
	Label("done")
	Store(RAX, ReturnIndex(0))
	VZEROUPPER()
	RET()
}
