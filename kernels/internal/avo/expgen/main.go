// Command expgen generates kernels/exp_amd64.s and its Go declarations:
// AVX-512 loops of float32 SiLU and its gradient (and the sigmoid,
// SiLU's loop with 1 as the dividend), the activation of
// ppyoloe_s, which spent a fifth of its training step in them before they
// existed and a seventh with their first form (a gather from a 64-entry
// table, two divisions in the gradient). SiLU runs ewSiluF32At's float32
// arithmetic sixteen lanes at a time, the gradient ewgSiluF32At's (both on
// siluNegExp32's exponential; the gradient's polynomial near its root
// takes its coefficients as broadcast memory operands). Both compute
// exactly what the portable loops (ewSiluGo32, ewgSiluGo32) compute,
// rounding for rounding (the exponential's two shortcuts, a multiply-add
// whose product is exact and the integer k read from the bits of a sum,
// round nothing differently), so results are bitwise the same with or
// without them; TestSiluVecBitsEveryFloat32 checks every float32. The same exponential, masked to 0 beyond e^-80, is
// SoftmaxF32's (softmaxExp32), sixteen lanes at a time likewise.
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
	siluF32()
	siluBiasF32()
	sigmoidF32()
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
	sBias           // 127·16 − the shifter's bits, as int32 bits
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
	emit.Func("siluF32AVX512", "func(out, x *float32, n int, c *[64]float32) int",
		"siluF32AVX512 is ewSiluF32At on blocks of 16 of n%16 == 0 elements up to the first block with an",
		"element under siluLo32 or NaN; it returns how many it did. out may be x.")
	siluLoop(false, false)
}

// sigmoidF32 emits sigmoidF32AVX512(out, x *float32, n int, c
// *siluConsts32) int: ewSigmoidF32At, 1/(1+e^-x) on the SiLU's
// exponential, sixteen float32 lanes at a time, step for step, on blocks
// of 16 of the n elements (n a multiple of 16); it stops before the
// first block with an x under -80 or NaN, which the float32 formula does
// not take, and returns how many elements it did. out may be x. It is
// SiLU's loop with 1 in place of x as the dividend.
func sigmoidF32() {
	emit.Func("sigmoidF32AVX512", "func(out, x *float32, n int, c *[64]float32) int",
		"sigmoidF32AVX512 is ewSigmoidF32At on blocks of 16 of n%16 == 0 elements up to the first block",
		"with an element under siluLo32 or NaN; it returns how many it did. out may be x.")
	siluLoop(false, true)
}

// siluBiasF32 emits siluBiasF32AVX512(out, x *float32, n int, b
// *float32, c *siluConsts32) int: siluF32AVX512 on x + *b, the sum
// rounded to float32 as the epilogue's separate bias pass rounds it, so
// that a convolution's bias and SiLU take one pass over its output
// instead of two. It stops before the first block with a sum under -80
// or NaN, leaving that block as it was (out may be x), and returns how
// many elements it did.
func siluBiasF32() {
	emit.Func("siluBiasF32AVX512", "func(out, x *float32, n int, b *float32, c *[64]float32) int",
		"siluBiasF32AVX512 is ewSiluF32At(x + *b) on blocks of 16 of n%16 == 0 elements up to the first",
		"block with a sum under siluLo32 or NaN, which it leaves as it was; it returns how many it did.",
		"out may be x.")
	siluLoop(true, false)
}

// siluWays is how many blocks of 16 the SiLU loops take per iteration,
// their steps interleaved: with one block's chain of about thirty
// dependent operations at a time the loop waited on latencies (L1-resident,
// ns per value: 1 block 0.27, 2 0.245, 3 0.215, 4 0.20).
const siluWays = 4

// siluLoop emits the body siluF32, siluBiasF32 and sigmoidF32 share,
// with the parameter b added to each element as it is loaded when bias
// is set, and 1/(1+e) in place of x/(1+e) when sigmoid is set:
// siluWays blocks at a time while that many are left and none of them
// holds an element the loop stops at, then block by block, which stops
// before the first such block.
func siluLoop(bias, sigmoid bool) {
	out, x, n, c := RDI, RSI, RCX, RDX
	emit.Params("out x n", out, x, n)
	var bp GPPhysical
	if bias {
		bp = RBX
		Load(Param("b"), bp)
	}
	Load(Param("c"), c)
	// The factors and addends stay in memory, broadcast by the
	// instructions, to leave registers for siluWays blocks.
	shifter, one, lo, negZero, expBias := Z16, Z23, Z24, Z25, Z26
	VBROADCASTSS(Mem{Base: c, Disp: 4 * sShifter}, shifter)
	for i, z := range []VecPhysical{one, lo, negZero, expBias} {
		VBROADCASTSS(Mem{Base: c, Disp: 4 * (sOne + i)}, z)
	}
	tabHi, tabLo, add := Z27, Z28, Z29
	VMOVUPS(Mem{Base: c, Disp: 4 * sTabHi}, tabHi)
	VMOVUPS(Mem{Base: c, Disp: 4 * sTabLo}, tabLo)
	if bias {
		VBROADCASTSS(Mem{Base: bp}, add)
	}
	at := func(i int) Mem { return Mem{Base: c, Disp: 4 * i} }
	e32 := exp32{at(sInv), shifter, at(sLn2Hi), at(sLn2Lo), at(sC24), at(sC6), at(sHalf), lo, negZero, expBias, tabHi, tabLo}
	free := []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15, Z17, Z18, Z19, Z20, Z21, Z22, Z30, Z31}
	var blocks []expLanes
	for j := range siluWays {
		z := free[6*j:]
		// hi and tlo take t's and p's registers: both are dead by then.
		blocks = append(blocks, expLanes{x: z[0], e: z[1], t: z[2], k: z[3], r: z[4], p: z[5], hi: z[2], tlo: z[5]})
	}
	masks := []OpmaskPhysical{K1, K2, K3, K4, K5, K6, K7}
	// load emits the loads of blocks from element RAX on and the masks
	// of their elements under -80 or NaN, ORed into K1.
	load := func(blocks []expLanes) {
		for j, b := range blocks {
			m := Mem{Base: x, Index: RAX, Scale: 4, Disp: 64 * j}
			if bias {
				VADDPS(m, add, b.x)
			} else {
				VMOVUPS(m, b.x)
			}
		}
		for j, b := range blocks {
			VCMPPS(U8(0x19), lo, b.x, masks[j]) // !(x >= -80): NGE, unordered
		}
		for j := 1; j < len(blocks); j++ {
			KORW(masks[j], K1, K1)
		}
	}
	// silu emits x/(1+e), or 1/(1+e), for blocks and the stores.
	silu := func(blocks []expLanes) {
		e32.negExp(blocks...)
		for _, b := range blocks {
			VADDPS(one, b.e, b.e)
		}
		for _, b := range blocks {
			if sigmoid {
				VDIVPS(b.e, one, b.e)
			} else {
				VDIVPS(b.e, b.x, b.e)
			}
		}
		for j, b := range blocks {
			VMOVUPS(b.e, Mem{Base: out, Index: RAX, Scale: 4, Disp: 64 * j})
		}
	}
	XORQ(RAX, RAX)
	SHRQ(U8(4), n)
	JE(LabelRef("done"))
	CMPQ(n, U8(siluWays))
	JB(LabelRef("block"))
	Label("ways")
	load(blocks)
	KORTESTW(K1, K1)
	JNE(LabelRef("block"))
	silu(blocks)
	ADDQ(U8(16*siluWays), RAX)
	SUBQ(U8(siluWays), n)
	CMPQ(n, U8(siluWays))
	JAE(LabelRef("ways"))
	TESTQ(n, n)
	JE(LabelRef("done"))
	Label("block")
	load(blocks[:1])
	KORTESTW(K1, K1)
	JNE(LabelRef("done"))
	silu(blocks[:1])
	ADDQ(U8(16), RAX)
	DECQ(n)
	JNE(LabelRef("block"))
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
	emit.Func("softmaxExpF32AVX512", "func(out, d *float32, n int, c *[64]float32)",
		"softmaxExpF32AVX512 is softmaxExp32 on n%16 == 0 elements d >= 0. out may be d.")
	out, d, n, c := RDI, RSI, RCX, RDX
	emit.Params("out d n c", out, d, n, c)
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
	e32.negExp(expLanes{x: di, e: e, t: Z2, k: Z3, r: Z4, p: Z5, hi: Z6, tlo: Z7})
	VMOVAPS_Z(e, K1, e)
	VMOVUPS(e, Mem{Base: out, Index: RAX, Scale: 4})
	ADDQ(U8(16), RAX)
	DECQ(n)
	JNE(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

// exp32 holds siluNegExp32's constants: registers, or for the factors
// and addends, registers or memory the instructions broadcast from.
type exp32 struct {
	inv                             Op
	shifter                         VecPhysical
	ln2Hi, ln2Lo, c24, c6, half     Op
	lo, negZero, bias, tabHi, tabLo VecPhysical
}

// bcst emits the instruction form that broadcasts c from memory when c
// is memory, else the plain one.
func bcst(plain, broadcast func(...Op), c Op, ops ...Op) {
	if _, ok := c.(Mem); ok {
		broadcast(append([]Op{c}, ops...)...)
		return
	}
	plain(append([]Op{c}, ops...)...)
}

// expLanes are one block's registers for negExp: x in, e out, the rest
// scratch.
type expLanes struct {
	x, e, t, k, r, p, hi, tlo VecPhysical
}

// negExp emits e = siluNegExp32(x) for each block of sixteen float32
// lanes, x >= -80, each step for every block before the next step, so
// that the blocks' chains overlap.
func (c exp32) negExp(blocks ...expLanes) {
	each := func(step func(b expLanes)) {
		for _, b := range blocks {
			step(b)
		}
	}
	// t = max(-x, -80)
	each(func(b expLanes) { VXORPS(c.negZero, b.x, b.t) })
	each(func(b expLanes) { VMAXPS(b.t, c.lo, b.t) })
	// k = (t·inv + shifter) − shifter; r = (t − k·hi) − k·lo, with t −
	// k·hi in one multiply-add: k·hi is exact, so it is the same sum.
	// The k register keeps t·inv + shifter, whose bits are the shifter's
	// (a multiple of 16) plus k: the table's index and the scale's
	// exponent come from them without a conversion.
	each(func(b expLanes) { bcst(VMULPS, VMULPS_BCST, c.inv, b.t, b.k) })
	each(func(b expLanes) { VADDPS(c.shifter, b.k, b.k) })
	each(func(b expLanes) { VSUBPS(c.shifter, b.k, b.r) })
	each(func(b expLanes) { bcst(VMULPS, VMULPS_BCST, c.ln2Lo, b.r, b.p) })
	each(func(b expLanes) { bcst(VFNMADD231PS, VFNMADD231PS_BCST, c.ln2Hi, b.r, b.t) })
	each(func(b expLanes) { VSUBPS(b.p, b.t, b.r) })
	// q = r²·((r/24 + 1/6)·r + 1/2) + r
	each(func(b expLanes) { bcst(VMULPS, VMULPS_BCST, c.c24, b.r, b.p) })
	each(func(b expLanes) { bcst(VADDPS, VADDPS_BCST, c.c6, b.p, b.p) })
	each(func(b expLanes) { VMULPS(b.r, b.p, b.p) })
	each(func(b expLanes) { bcst(VADDPS, VADDPS_BCST, c.half, b.p, b.p) })
	each(func(b expLanes) { VMULPS(b.r, b.r, b.e) })
	each(func(b expLanes) { VMULPS(b.p, b.e, b.e) })
	each(func(b expLanes) { VADDPS(b.r, b.e, b.e) })
	// e = (hi + (lo + hi·q)) · 2^(k>>4), the table indexed by k's low
	// four bits; 2^(k>>4)'s bits are ((k + s + c) >> 4) << 23, s the
	// shifter's bits and c = 127·16 − s.
	each(func(b expLanes) { VPERMPS(c.tabHi, b.k, b.hi) })
	each(func(b expLanes) { VPERMPS(c.tabLo, b.k, b.tlo) })
	each(func(b expLanes) { VMULPS(b.e, b.hi, b.e) })
	each(func(b expLanes) { VADDPS(b.e, b.tlo, b.e) })
	each(func(b expLanes) { VADDPS(b.e, b.hi, b.e) })
	each(func(b expLanes) { VPADDD(c.bias, b.k, b.k) })
	each(func(b expLanes) { VPSRAD(U8(4), b.k, b.k) })
	each(func(b expLanes) { VPSLLD(U8(23), b.k, b.k) })
	each(func(b expLanes) { VMULPS(b.k, b.e, b.e) })
}

// siluGradF32 emits siluGradF32AVX512(out, x, dy *float32, n int, c
// *siluConsts32) int: dy·ewgSiluF32At(x) sixteen float32 lanes at a time,
// step for step, on blocks of 16 of the n elements (n a multiple of 16);
// it stops before the first block with an x under -80 or NaN, which the
// float32 formula does not take, and returns how many elements it did.
// out may be x or dy.
func siluGradF32() {
	emit.Func("siluGradF32AVX512", "func(out, x, dy *float32, n int, c *[64]float32) int",
		"siluGradF32AVX512 is dy·ewgSiluF32At(x) on blocks of 16 of n%16 == 0 elements up to the first block",
		"with an x under siluLo32 or NaN; it returns how many it did. out may be x or dy.")
	out, x, dy, n, c := RDI, RSI, R9, RCX, RDX
	emit.Params("out x dy n c", out, x, dy, n, c)
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
	e32.negExp(expLanes{x: xi, e: e, t: Z2, k: Z3, r: Z4, p: Z5, hi: Z6, tlo: Z7})
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
