// Command expgen generates kernels/exp_amd64.s and its Go declarations:
// AVX-512 loops of float32 SiLU and its gradient, the activation of
// ppyoloe_s, which spent a fifth of its training step in them before they
// existed and a seventh with their first form (a gather from a 64-entry
// table, two divisions in the gradient). They run
// ewNegExpArg32's exponential eight float64 lanes at a time and compute
// exactly what the portable loops (ewSiluBlock32, ewgSiluRun32) compute,
// operation for operation, so results are bitwise the same with or
// without them.
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
	cTiny           // -1e300
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
	inv, shifter, ln2, one, half, sixth, c24, c120, minArg, maxArg, negZero, tiny, bias, zero VecPhysical
	tabLo, tabHi                                                                              VecPhysical
}

func loadConsts(c GPPhysical) regs {
	r := regs{Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31}
	for i, z := range []VecPhysical{r.inv, r.shifter, r.ln2, r.one, r.half, r.sixth, r.c24, r.c120,
		r.minArg, r.maxArg, r.negZero, r.tiny, r.bias, r.zero} {
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

// siluF32 emits siluF32AVX512(out, x *float32, n int, c *expConsts):
// ewSiluBlock32 on n elements, n a multiple of 8; out may be x.
func siluF32() {
	TEXT("siluF32AVX512", NOSPLIT, "func(out, x *float32, n int, c *[32]float64)")
	Pragma("noescape")
	Doc("siluF32AVX512 is ewSiluBlock32 on n%8 == 0 elements, eight at a time; out may be x.")
	out, x, n, c := RDI, RSI, RCX, RDX
	Load(Param("out"), out)
	Load(Param("x"), x)
	Load(Param("n"), n)
	Load(Param("c"), c)
	r := loadConsts(c)
	XORQ(RAX, RAX)
	SHRQ(U8(3), n)
	JE(LabelRef("done"))
	Label("loop")
	xi, e := Z0, Z1
	VCVTPS2PD(Mem{Base: x, Index: RAX, Scale: 4}, xi)
	negExpArg(r, xi, e, Z2, Z3, Z4, Z5, Z6)
	// x/(1+e), or -0 where x < -1e300 (x = -Inf)
	VADDPD(r.one, e, e)
	VDIVPD(e, xi, e)
	VCMPPD(U8(0x11), r.tiny, xi, K2) // x < -1e300, ordered
	VMOVAPD(r.negZero, K2, e)
	VCVTPD2PS(e, Y7)
	VMOVUPS(Y7, Mem{Base: out, Index: RAX, Scale: 4})
	ADDQ(U8(8), RAX)
	DECQ(n)
	JNE(LabelRef("loop"))
	Label("done")
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
