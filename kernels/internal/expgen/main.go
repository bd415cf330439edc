// Command expgen generates kernels/exp_amd64.s and its Go declarations:
// AVX-512 loops of float32 SiLU and its gradient, the activation of
// ppyoloe_s, which spent a fifth of its training step in them before they
// existed and a seventh with their first form (a gather from a 64-entry
// table, two divisions in the gradient). SiLU runs ewSiluF32At's float32
// arithmetic sixteen lanes at a time; the gradient runs ewNegExpArg32's
// float64 exponential eight lanes at a time (its 1 + x·(1−s) cancels
// near x = −1.28, which float32 would not resolve). Both compute exactly
// what the portable loops (ewSiluGo32, ewgSiluRun32) compute, operation
// for operation, so results are bitwise the same with or without them.
//
// It lives in its own module so that package kernels never depends on avo.
// Run it through `go generate ./kernels/` from the main module.
package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The layout of the constants the loops take (expConsts in package
// kernels): float64s by index, then the 2^(j/16) table.
const (
	cInv     = iota // 16/ln2
	cShifter        // 1.5·2^52
	cLn2            // ln2/16
	cOne            // 1
	cHalf           // 1/2
	cSixth          // 1/6
	cC24            // 1/24
	cC120           // 1/120
	cMinArg         // -120
	cMaxArg         // 120
	cNegZero        // -0 (the sign bit)
	cBias           // 1023, as int64 bits
	cZero           // 0
	cTable   = 16   // 16 entries
)

func main() {
	ConstraintExpr("!purego")
	siluF32()
	siluGradF32()
	Generate()
}

// regs are the broadcast constants and the table, whose 16 entries fill
// two registers, so that a permute (VPERMI2PD) looks them up instead of a
// gather from memory (a quarter of the forward loop's time).
type regs struct {
	inv, shifter, ln2, one, half, sixth, c24, c120, minArg, maxArg, negZero, bias, zero VecPhysical
	tabLo, tabHi                                                                        VecPhysical
}

func loadConsts(c GPPhysical) regs {
	r := regs{Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z30, Z31}
	for i, z := range []VecPhysical{r.inv, r.shifter, r.ln2, r.one, r.half, r.sixth, r.c24, r.c120,
		r.minArg, r.maxArg, r.negZero, r.bias, r.zero} {
		VBROADCASTSD(Mem{Base: c, Disp: 8 * i}, z)
	}
	VMOVUPD(Mem{Base: c, Disp: 8 * cTable}, r.tabLo)
	VMOVUPD(Mem{Base: c, Disp: 8 * (cTable + 8)}, r.tabHi)
	return r
}

// negExpArg emits b = e^-clamp(x, -120, 120) for the eight float64 lanes
// of x, as ewNegExpArg32 computes it; t0..t4 scratch.
func negExpArg(r regs, x, b, t0, t1, t2, t3, t4 VecPhysical) {
	// clamp: x < lo ? lo : x, then x > hi ? hi : x (NaN stays NaN)
	VMAXPD(x, r.minArg, b)
	VMINPD(b, r.maxArg, b)
	VXORPD(r.negZero, b, b) // negation flips the sign bit
	// k = (b·inv + shifter) − shifter; r = b − k·ln2/16
	k, rr := t0, t1
	VMULPD(r.inv, b, k)
	VADDPD(r.shifter, k, k)
	VSUBPD(r.shifter, k, k)
	VMULPD(r.ln2, k, t2)
	VSUBPD(t2, b, rr)
	ki := k
	VCVTTPD2QQ(k, ki)
	// p = (1 + r) + r²·((1/2 + r/6) + r²·(1/24 + r/120))
	r2 := t2
	VMULPD(rr, rr, r2)
	VMULPD(r.c120, rr, t3)
	VADDPD(r.c24, t3, t3)
	VMULPD(r2, t3, t3)
	VMULPD(r.sixth, rr, t4)
	VADDPD(r.half, t4, t4)
	VADDPD(t3, t4, t4)
	VMULPD(r2, t4, t4)
	VADDPD(r.one, rr, rr)
	VADDPD(t4, rr, rr) // p
	// b = p · 2^((ki&15)/16) · 2^(ki>>4): the permute reads the index's
	// low four bits
	VMOVDQA64(ki, t3)
	VPERMI2PD(r.tabHi, r.tabLo, t3)
	VPSRAQ(U8(4), ki, ki)
	VPADDQ(r.bias, ki, ki)
	VPSLLQ(U8(52), ki, ki)
	VMULPD(t3, rr, rr)
	VMULPD(ki, rr, b)
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

// siluF32 emits siluF32AVX512(out, x *float32, n int, c *siluConsts32)
// int: ewSiluF32At sixteen float32 lanes at a time, step for step, on
// blocks of 16 of the n elements (n a multiple of 16); it stops before
// the first block with an x under -80 or NaN, which the float32 formula
// does not take, and returns how many elements it did. out may be x.
func siluF32() {
	TEXT("siluF32AVX512", NOSPLIT, "func(out, x *float32, n int, c *[48]float32) int")
	Pragma("noescape")
	Doc("siluF32AVX512 is ewSiluF32At on blocks of 16 of n%16 == 0 elements up to the first block with an",
		"element under siluLo32 or NaN; it returns how many it did. out may be x.")
	out, x, n, c := RDI, RSI, RCX, RDX
	Load(Param("out"), out)
	Load(Param("x"), x)
	Load(Param("n"), n)
	Load(Param("c"), c)
	inv, shifter, ln2Hi, ln2Lo, c24, c6, half, one, lo, negZero, bias := Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26
	for i, z := range []VecPhysical{inv, shifter, ln2Hi, ln2Lo, c24, c6, half, one, lo, negZero, bias} {
		VBROADCASTSS(Mem{Base: c, Disp: 4 * i}, z)
	}
	tabHi, tabLo := Z27, Z28
	VMOVUPS(Mem{Base: c, Disp: 4 * sTabHi}, tabHi)
	VMOVUPS(Mem{Base: c, Disp: 4 * sTabLo}, tabLo)
	XORQ(RAX, RAX)
	SHRQ(U8(4), n)
	JE(LabelRef("done"))
	Label("loop")
	xi, t, k, r, p, q, hi, tlo := Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7
	VMOVUPS(Mem{Base: x, Index: RAX, Scale: 4}, xi)
	VCMPPS(U8(0x19), lo, xi, K1) // !(x >= -80): NGE, unordered
	KORTESTW(K1, K1)
	JNE(LabelRef("done"))
	// t = max(-x, -80)
	VXORPS(negZero, xi, t)
	VMAXPS(t, lo, t)
	// k = (t·inv + shifter) − shifter; r = (t − k·hi) − k·lo
	VMULPS(inv, t, k)
	VADDPS(shifter, k, k)
	VSUBPS(shifter, k, k)
	VMULPS(ln2Hi, k, r)
	VSUBPS(r, t, r)
	VMULPS(ln2Lo, k, p)
	VSUBPS(p, r, r)
	VCVTTPS2DQ(k, k)
	// q = r²·((r/24 + 1/6)·r + 1/2) + r
	VMULPS(c24, r, p)
	VADDPS(c6, p, p)
	VMULPS(r, p, p)
	VADDPS(half, p, p)
	VMULPS(r, r, q)
	VMULPS(p, q, q)
	VADDPS(r, q, q)
	// e = (hi + (lo + hi·q)) · 2^(k>>4), the table indexed by k's low
	// four bits
	VPERMPS(tabHi, k, hi)
	VPERMPS(tabLo, k, tlo)
	VMULPS(q, hi, q)
	VADDPS(q, tlo, q)
	VADDPS(q, hi, q)
	VPSRAD(U8(4), k, k)
	VPADDD(bias, k, k)
	VPSLLD(U8(23), k, k)
	VMULPS(k, q, q)
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

// siluGradF32 emits siluGradF32AVX512(out, x, dy *float32, n int, c
// *expConsts): ewgSiluRun32's element formula on n elements, n a multiple
// of 8; out may be x or dy.
func siluGradF32() {
	TEXT("siluGradF32AVX512", NOSPLIT, "func(out, x, dy *float32, n int, c *[32]float64)")
	Pragma("noescape")
	Doc("siluGradF32AVX512 is ewgSiluRun32's formula on n%8 == 0 elements, eight at a time; out may be x or dy.")
	out, x, dy, n, c := RDI, RSI, R9, RCX, RDX
	Load(Param("out"), out)
	Load(Param("x"), x)
	Load(Param("dy"), dy)
	Load(Param("n"), n)
	Load(Param("c"), c)
	r := loadConsts(c)
	XORQ(RAX, RAX)
	SHRQ(U8(3), n)
	JE(LabelRef("done"))
	Label("loop")
	xi, e, g, sig, sn := Z0, Z1, Z7, Z8, Z9
	VCVTPS2PD(Mem{Base: x, Index: RAX, Scale: 4}, xi)
	VCVTPS2PD(Mem{Base: dy, Index: RAX, Scale: 4}, g)
	negExpArg(r, xi, e, Z2, Z3, Z4, Z5, Z6)
	// sig, sn = 1/(1+e), e·sig; 0, 1 where x < -120
	VADDPD(r.one, e, Z2)
	VDIVPD(Z2, r.one, sig)
	VMULPD(sig, e, sn)
	VCMPPD(U8(0x11), r.minArg, xi, K2) // x < -120, ordered
	VMOVAPD(r.zero, K2, sig)
	VMOVAPD(r.one, K2, sn)
	// g·sig·(1 + x·sn)
	VMULPD(sig, g, Z3)
	VMULPD(sn, xi, Z4)
	VADDPD(r.one, Z4, Z4)
	VMULPD(Z4, Z3, Z3)
	// ±Inf: g·1 or g·0, the limits of silu'
	VFPCLASSPDZ(U8(0x18), xi, K3)    // +Inf or -Inf
	VCMPPD(U8(0x1e), r.zero, xi, K4) // x > 0, ordered
	VMOVAPD(r.zero, Z5)
	VMOVAPD(r.one, K4, Z5)
	VMULPD(Z5, g, Z5)
	VMOVAPD(Z5, K3, Z3)
	VCVTPD2PS(Z3, Y10)
	VMOVUPS(Y10, Mem{Base: out, Index: RAX, Scale: 4})
	ADDQ(U8(8), RAX)
	DECQ(n)
	JNE(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}
