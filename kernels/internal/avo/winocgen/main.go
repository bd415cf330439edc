// Command winocgen generates kernels/winograd_nchwc_amd64.s and its Go
// declarations: the vector transforms of Winograd's F(2×2, 3×3) on the
// blocked layout (winograd_nchwc.go), with AVX-512 for blocks of 16
// channels (one zmm) and AVX for blocks of 8 (one ymm). Each pixel of a
// 4×4 patch, or each position of a transformed tile, is one vector of a
// channel block, so a transform is the definition's additions
// (kernels/winograd.go) on whole vectors, in the same order: the results
// are bitwise those of the Go loops.
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
	for _, b := range []int{16, 8} {
		input(b)
		output(b)
	}
	Generate()
}

// suffix names a kernel's instruction set by its block.
func suffix(b int) string {
	if b == 16 {
		return fmt.Sprintf("%dAVX512", b)
	}
	return fmt.Sprintf("%dAVX2", b)
}

// regs are the vector registers of blocks of b: zmm for 16, ymm for 8.
func regs(b int) []VecPhysical {
	if b == 16 {
		return emit.Z()
	}
	return emit.Y()
}

// posAddr returns the address of position i < 16 of a transformed tile
// whose positions are ld bytes apart, from the registers posRegs sets.
type posAddr func(i int, disp int) Mem

// posRegs sets up the addressing of 16 positions ld bytes apart from
// base: base8 = base + 8·ld, ld3 = 3·ld, ld5, ld7.
func posRegs(base, base8, ld, ld3, ld5, ld7 GPPhysical) posAddr {
	LEAQ(Mem{Base: ld, Index: ld, Scale: 2}, ld3)
	LEAQ(Mem{Base: ld, Index: ld, Scale: 4}, ld5)
	LEAQ(Mem{Base: ld3, Index: ld, Scale: 4}, ld7)
	return func(i, disp int) Mem {
		b := base
		if i >= 8 {
			b, i = base8, i-8
		}
		m := []Mem{{Base: b}, {Base: b, Index: ld, Scale: 1}, {Base: b, Index: ld, Scale: 2},
			{Base: b, Index: ld3, Scale: 1}, {Base: b, Index: ld, Scale: 4}, {Base: b, Index: ld5, Scale: 1},
			{Base: b, Index: ld3, Scale: 2}, {Base: b, Index: ld7, Scale: 1}}[i]
		m.Disp = disp
		return m
	}
}

// input emits winocInput<b>: V = Bᵀ d B (winogradInput) of one 4×4 patch
// per channel block, for blocks consecutive blocks.
func input(b int) {
	name := "winocInput" + suffix(b)
	emit.Func(name, "func(x *float32, ld, bstride, blocks int, v *float32, vld int)",
		fmt.Sprintf("%s writes V = Bᵀ d B of the 4×4 patches d of pixels x[k·bstride + r·ld + q·%d:][:%d] (r, q < 4)", name, b, b),
		fmt.Sprintf("to v[p·vld + k·%d:][:%d] for each position p < 16 and block k < blocks, as winogradInput computes each lane.", b, b))
	x, ld, bs, n, v, vld := RSI, RDX, R8, RCX, RDI, R9
	emit.Params("x ld bstride blocks v vld", x, ld, bs, n, v, vld)
	SHLQ(U8(2), ld)
	SHLQ(U8(2), bs)
	SHLQ(U8(2), vld)
	ld3 := R10
	LEAQ(Mem{Base: ld, Index: ld, Scale: 2}, ld3)
	v8 := R11
	at := posRegs(v, v8, vld, R12, R13, R14)
	z := regs(b)
	t, s := z[:4], z[4:8]
	row := func(r, q int) Mem {
		m := []Mem{{Base: x}, {Base: x, Index: ld, Scale: 1}, {Base: x, Index: ld, Scale: 2}, {Base: x, Index: ld3, Scale: 1}}[r]
		m.Disp = q * b * 4
		return m
	}
	TESTQ(n, n)
	JE(LabelRef("done"))
	LEAQ(Mem{Base: v, Index: vld, Scale: 8}, v8)
	Label("loop")
	// Row i of Bᵀ d from the patch's rows, column by column, then row i
	// of (Bᵀ d) B from it.
	first := [4][2]int{{0, 2}, {1, 2}, {2, 1}, {1, 3}}
	for i := range 4 {
		for j := range 4 {
			VMOVUPS(row(first[i][0], j), t[j])
			if i == 1 {
				VADDPS(row(first[i][1], j), t[j], t[j])
			} else {
				VSUBPS(row(first[i][1], j), t[j], t[j])
			}
		}
		VSUBPS(t[2], t[0], s[0])
		VADDPS(t[2], t[1], s[1])
		VSUBPS(t[1], t[2], s[2])
		VSUBPS(t[3], t[1], s[3])
		for j := range 4 {
			VMOVUPS(s[j], at(4*i+j, 0))
		}
	}
	ADDQ(bs, x)
	ADDQ(U8(b*4), v)
	ADDQ(U8(b*4), v8)
	DECQ(n)
	JNE(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

// output emits winocOutput<b>: Y = Aᵀ m A (winogradOutput) of one
// transformed tile per channel block, plus the bias where there is one,
// for blocks consecutive blocks.
func output(b int) {
	name := "winocOutput" + suffix(b)
	emit.Func(name, "func(m *float32, mld, blocks int, y *float32, ld, bstride int, bias *float32)",
		fmt.Sprintf("%s writes Y = Aᵀ m A (+ bias[k·%d:][:%d] where bias is not nil) of the tiles m[p·mld + k·%d:][:%d] (p < 16)", name, b, b, b, b),
		fmt.Sprintf("to y[k·bstride + r·ld + q·%d:][:%d] (r, q < 2) for each block k < blocks, as winogradOutput computes each lane.", b, b))
	m, mld, n, y, ld, bs, bias := RSI, RDX, RCX, RDI, R8, R9, RBX
	emit.Params("m mld blocks y ld bstride bias", m, mld, n, y, ld, bs, bias)
	SHLQ(U8(2), mld)
	SHLQ(U8(2), ld)
	SHLQ(U8(2), bs)
	m8 := R11
	at := posRegs(m, m8, mld, R12, R13, R14)
	z := regs(b)
	t, s, bv := z[:8], z[8:10], z[10]
	TESTQ(n, n)
	JE(LabelRef("done"))
	LEAQ(Mem{Base: m, Index: mld, Scale: 8}, m8)
	Label("loop")
	// Aᵀ m: t[j] = m0j + m1j + m2j, t[4+j] = m1j − m2j − m3j.
	for j := range 4 {
		VMOVUPS(at(j, 0), t[j])
		VADDPS(at(4+j, 0), t[j], t[j])
		VADDPS(at(8+j, 0), t[j], t[j])
		VMOVUPS(at(4+j, 0), t[4+j])
		VSUBPS(at(8+j, 0), t[4+j], t[4+j])
		VSUBPS(at(12+j, 0), t[4+j], t[4+j])
	}
	TESTQ(bias, bias)
	JE(LabelRef("nobias"))
	VMOVUPS(Mem{Base: bias}, bv)
	ADDQ(U8(b*4), bias)
	Label("nobias")
	for i := range 2 {
		r := t[4*i : 4*i+4]
		VADDPS(r[1], r[0], s[0])
		VADDPS(r[2], s[0], s[0])
		VSUBPS(r[2], r[1], s[1])
		VSUBPS(r[3], s[1], s[1])
		TESTQ(bias, bias)
		JE(LabelRef(fmt.Sprintf("store%d", i)))
		VADDPS(bv, s[0], s[0])
		VADDPS(bv, s[1], s[1])
		Label(fmt.Sprintf("store%d", i))
		dst := Mem{Base: y}
		if i == 1 {
			dst = Mem{Base: y, Index: ld, Scale: 1}
		}
		VMOVUPS(s[0], dst)
		dst.Disp = b * 4
		VMOVUPS(s[1], dst)
	}
	ADDQ(bs, y)
	ADDQ(U8(b*4), m)
	ADDQ(U8(b*4), m8)
	DECQ(n)
	JNE(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}
