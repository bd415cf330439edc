// Command winogen generates kernels/winograd_nchw_amd64.s and its Go
// declarations: the AVX-512 transforms of the NCHW Winograd convolution
// (winograd_nchw.go), 16 tiles at a time, one tile per lane. They add and
// subtract in the order of the definitions (winogradInput, winogradOutput
// in winograd.go), so they give the bits of the portable loops.
//
// It lives in kernels/internal/avo, the one module of the avo generators,
// so that package kernels never depends on avo.
// Run it through `go generate ./kernels/` from the main module.
package main

import (
	"fmt"

	"github.com/gopir/gopir/kernels/internal/avo/emit"
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("!purego")
	input()
	output()
	outputPool()
	Generate()
}

// bt applies Bᵀ to the column (a, b, c, d) into out:
// (a−c, b+c, c−b, b−d), winogradInput's order.
func bt(a, b, c, d VecPhysical, out []VecPhysical) {
	VSUBPS(c, a, out[0])
	VADDPS(c, b, out[1])
	VSUBPS(b, c, out[2])
	VSUBPS(d, b, out[3])
}

// input emits winoInputF32AVX512, of signature func(v, p *float32, desc
// *int64, groups, wp, vs, pstep int): for each group g < groups of up to
// 16 consecutive tiles of one tile row, described by desc[7g:7g+7] = (src,
// panel1, off1, mask1, panel2, off2, mask2), lane l's tile has its 4×4
// patch at columns 2l, 2l+1, 2l+2, 2l+3 of the four rows from p + src
// bytes (rows wp elements apart; 34 columns are read). Each row's columns
// are split into even and odd ones (VPERMT2PS), which gives the patches'
// columns 0 to 3 for the 16 lanes without a gather. V = Bᵀ d B of the
// lanes goes to position k at v + panel·pstep + off + k·vs bytes, twice:
// the lanes of mask1 at (panel1, off1) and those of mask2 at (panel2,
// off2) — a group whose tiles run into the next B panel (off2 is the
// lane's byte offset less 4 per lane of the first store, so lane l lands
// at its own column).
func input() {
	emit.Func("winoInputF32AVX512", "func(v, p *float32, desc *int64, groups, wp, vs, pstep int)",
		"winoInputF32AVX512 is the input transform of a tile row's 16 tiles at a time (winoInputVec).")
	v, p, desc, groups, wp, vs, pstep := RDI, RSI, RDX, R8, R9, R10, R11
	emit.Params("v p desc groups wp vs pstep", v, p, desc, groups, wp, vs, pstep)
	src, dst := R12, R13
	even, odd := emit.EvenOddLanes("wino")
	z := emit.Z()
	zEven, zOdd := Z30, Z31 // set per group: the column transform reuses them
	SHLQ(U8(2), wp)         // bytes
	TESTQ(groups, groups)
	JE(LabelRef("done"))
	Label("group")
	VMOVDQU32(even, zEven)
	VMOVDQU32(odd, zOdd)
	MOVQ(p, src)
	ADDQ(Mem{Base: desc}, src)
	// d[4r+q] in Z0..Z15: row r's columns 2l+q for lanes l.
	for r := range 4 {
		d := z[4*r : 4*r+4]
		VMOVUPS(Mem{Base: src}, d[0])
		VMOVUPS(Mem{Base: src}, d[1])
		VMOVUPS(Mem{Base: src, Disp: 8}, d[2])
		VMOVUPS(Mem{Base: src, Disp: 8}, d[3])
		VPERMT2PS(Mem{Base: src, Disp: 64}, zEven, d[0])
		VPERMT2PS(Mem{Base: src, Disp: 64}, zOdd, d[1])
		VPERMT2PS(Mem{Base: src, Disp: 72}, zEven, d[2])
		VPERMT2PS(Mem{Base: src, Disp: 72}, zOdd, d[3])
		if r < 3 {
			ADDQ(wp, src)
		}
	}
	// Columns: t[4i+j] in Z16..Z31.
	t := z[16:32]
	for j := range 4 {
		bt(z[j], z[4+j], z[8+j], z[12+j], []VecPhysical{t[j], t[4+j], t[8+j], t[12+j]})
	}
	// Rows: v[4i+j] back in Z0..Z15.
	for i := range 4 {
		bt(t[4*i], t[4*i+1], t[4*i+2], t[4*i+3], z[4*i:4*i+4])
	}
	// The two stores: (panel, off, mask) at desc+8, +16, +24 and +32, +40, +48.
	for part := range 2 {
		base := 8 + 24*part
		MOVQ(Mem{Base: desc, Disp: base + 16}, RAX)
		TESTQ(RAX, RAX)
		JE(LabelRef(fmt.Sprintf("skip%d", part)))
		KMOVW(EAX, K2)
		MOVQ(Mem{Base: desc, Disp: base}, dst)
		IMULQ(pstep, dst)
		ADDQ(Mem{Base: desc, Disp: base + 8}, dst)
		ADDQ(v, dst)
		for k := range 16 {
			VMOVUPS(z[k], K2, Mem{Base: dst})
			if k < 15 {
				ADDQ(vs, dst)
			}
		}
		Label(fmt.Sprintf("skip%d", part))
	}
	ADDQ(U8(56), desc)
	DECQ(groups)
	JNE(LabelRef("group"))
	Label("done")
	VZEROUPPER()
	RET()
}

// output emits winoOutputF32AVX512, of signature func(s, m *float32,
// groups, ms, sn int): for each group g < groups of 16 tiles, the 16
// vectors at m + k·ms bytes + 64g (position k) give Y = Aᵀ M A, whose
// values y00, y01, y10, y11 go to s + i·sn bytes + 64g, i = 0 … 3.
func output() {
	emit.Func("winoOutputF32AVX512", "func(s, m *float32, groups, ms, sn int)",
		"winoOutputF32AVX512 is the output transform of 16 tiles at a time (winoOutputChunk).")
	s, m, groups, ms, sn := RDI, RSI, R8, R9, R10
	emit.Params("s m groups ms sn", s, m, groups, ms, sn)
	src, dst := R11, R12
	z := emit.Z()
	TESTQ(groups, groups)
	JE(LabelRef("done"))
	Label("group")
	MOVQ(m, src)
	for k := range 16 {
		VMOVUPS(Mem{Base: src}, z[k])
		if k < 15 {
			ADDQ(ms, src)
		}
	}
	// t[j] = m0j + m1j + m2j, t[4+j] = m1j − m2j − m3j.
	t := z[16:24]
	for j := range 4 {
		VADDPS(z[4+j], z[j], t[j])
		VADDPS(z[8+j], t[j], t[j])
		VSUBPS(z[8+j], z[4+j], t[4+j])
		VSUBPS(z[12+j], t[4+j], t[4+j])
	}
	y := z[24:28]
	for i := range 2 {
		r := t[4*i : 4*i+4]
		VADDPS(r[1], r[0], y[2*i])
		VADDPS(r[2], y[2*i], y[2*i])
		VSUBPS(r[2], r[1], y[2*i+1])
		VSUBPS(r[3], y[2*i+1], y[2*i+1])
	}
	MOVQ(s, dst)
	for i := range 4 {
		VMOVUPS(y[i], Mem{Base: dst})
		if i < 3 {
			ADDQ(sn, dst)
		}
	}
	ADDQ(U8(64), m)
	ADDQ(U8(64), s)
	DECQ(groups)
	JNE(LabelRef("group"))
	Label("done")
	VZEROUPPER()
	RET()
}

// outputPool emits winoOutputPoolF32AVX512, of signature func(dst, m,
// bias *float32, groups, last, ms, relu int): output() followed, in
// registers, by the epilogue and the pool — each value plus *bias (when
// bias is not nil, the sum rounded as epiPlanes's add), then ReLU when
// relu is not 0 (as epiPlanesF32AVX512Relu: v where v > 0 or NaN, its
// sign cleared, else +0), then the tile's four values folded by maxPair
// in row-major order (MaxPool2DValues's rule) into 16 pooled values at
// dst + 64g; the last group stores its first last lanes only.
func outputPool() {
	emit.Func("winoOutputPoolF32AVX512", "func(dst, m, bias *float32, groups, last, ms, relu int)",
		"winoOutputPoolF32AVX512 is the output transform with the bias, ReLU and 2×2 pool in registers (winoPoolVec).")
	dst, m, bias, groups, last, ms, relu := RDI, RSI, RDX, R8, R9, R10, R11
	emit.Params("dst m bias groups last ms relu", dst, m, bias, groups, last, ms, relu)
	src := R12
	z := emit.Z()
	zBias, zZero, zAbs := Z28, Z29, Z30
	VPXORD(zBias, zBias, zBias)
	TESTQ(bias, bias)
	JE(LabelRef("nobias"))
	VBROADCASTSS(Mem{Base: bias}, zBias)
	Label("nobias")
	VPXORD(zZero, zZero, zZero)
	MOVL(U32(0x7fffffff), EAX)
	VPBROADCASTD(EAX, zAbs)
	// K4: all lanes, or the last group's first last lanes.
	MOVQ(last, RCX)
	MOVL(U32(1), EAX)
	SHLL(CL, EAX)
	DECL(EAX)
	KMOVW(EAX, K5)
	TESTQ(groups, groups)
	JE(LabelRef("done"))
	Label("group")
	MOVQ(m, src)
	for k := range 16 {
		VMOVUPS(Mem{Base: src}, z[k])
		if k < 15 {
			ADDQ(ms, src)
		}
	}
	t := z[16:24]
	for j := range 4 {
		VADDPS(z[4+j], z[j], t[j])
		VADDPS(z[8+j], t[j], t[j])
		VSUBPS(z[8+j], z[4+j], t[4+j])
		VSUBPS(z[12+j], t[4+j], t[4+j])
	}
	y := z[24:28]
	for i := range 2 {
		r := t[4*i : 4*i+4]
		VADDPS(r[1], r[0], y[2*i])
		VADDPS(r[2], y[2*i], y[2*i])
		VSUBPS(r[2], r[1], y[2*i+1])
		VSUBPS(r[3], y[2*i+1], y[2*i+1])
	}
	TESTQ(bias, bias)
	JE(LabelRef("act"))
	for _, v := range y {
		VADDPS(zBias, v, v)
	}
	Label("act")
	TESTQ(relu, relu)
	JE(LabelRef("pool"))
	for _, v := range y {
		VCMPPS(U8(6), zZero, v, K1) // !(v <= 0): v > 0 or NaN
		VPANDD_Z(zAbs, v, K1, v)
	}
	Label("pool")
	emit.MaxPair(y[0], y[1])
	emit.MaxPair(y[0], y[2])
	emit.MaxPair(y[0], y[3])
	CMPQ(groups, U8(1))
	JNE(LabelRef("whole"))
	VMOVUPS(y[0], K5, Mem{Base: dst})
	JMP(LabelRef("done"))
	Label("whole")
	VMOVUPS(y[0], Mem{Base: dst})
	ADDQ(U8(64), m)
	ADDQ(U8(64), dst)
	DECQ(groups)
	JMP(LabelRef("group"))
	Label("done")
	VZEROUPPER()
	RET()
}
