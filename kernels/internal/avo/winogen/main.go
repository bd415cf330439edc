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
	"github.com/gopir/gopir/kernels/internal/avo/emit"
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("!purego")
	input()
	output()
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

// input emits winoInputF32AVX512, of signature func(v, p *float32, idx
// *int32, groups, wp, vs, pstep, gpp int): for each group g < groups of
// 16 tiles, lane l's tile has its 4×4 patch at p + idx[16g+l] (rows wp
// elements apart); V = Bᵀ d B of the 16 tiles goes to 16 vectors, position
// k at dst + k·vs bytes, where dst starts at v and moves on by 64 bytes a
// group, and by pstep bytes past every gpp groups (the next B panel).
func input() {
	emit.Func("winoInputF32AVX512", "func(v, p *float32, idx *int32, groups, wp, vs, pstep, gpp int)",
		"winoInputF32AVX512 is the input transform of 16 tiles at a time (winoInputChunk).")
	v, p, idx, groups, wp, vs, pstep, gpp := RDI, RSI, RDX, R8, R9, R10, R11, R12
	emit.Params("v p idx groups wp vs pstep gpp", v, p, idx, groups, wp, vs, pstep, gpp)
	inPanel, dst := R13, R14
	z := emit.Z()
	zW, zOne := Z28, Z29 // set per group: the column transform reuses them
	// The panel's groups move dst on by 64 bytes each: pstep less that.
	MOVQ(gpp, RAX)
	SHLQ(U8(6), RAX)
	SUBQ(RAX, pstep)
	MOVQ(U64(1), RAX)
	XORQ(inPanel, inPanel)
	TESTQ(groups, groups)
	JE(LabelRef("done"))
	Label("group")
	VPBROADCASTD(R9L, zW)
	VPBROADCASTD(EAX, zOne)
	// Gather the 16 patches: d[4r+q] in Z0..Z15, indices in Z16..Z19.
	row, col := Z16, []VecPhysical{Z16, Z17, Z18, Z19}
	VMOVDQU32(Mem{Base: idx}, row)
	for r := range 4 {
		if r > 0 {
			VPADDD(zW, col[0], col[0])
		}
		for q := 1; q < 4; q++ {
			VPADDD(zOne, col[q-1], col[q])
		}
		for q := range 4 {
			KXNORW(K1, K1, K1)
			VGATHERDPS(Mem{Base: p, Index: col[q], Scale: 4}, K1, z[4*r+q])
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
	MOVQ(v, dst)
	for k := range 16 {
		VMOVUPS(z[k], Mem{Base: dst})
		if k < 15 {
			ADDQ(vs, dst)
		}
	}
	ADDQ(U8(64), idx)
	ADDQ(U8(64), v)
	INCQ(inPanel)
	CMPQ(inPanel, gpp)
	JL(LabelRef("next"))
	ADDQ(pstep, v)
	XORQ(inPanel, inPanel)
	Label("next")
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
