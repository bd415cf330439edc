// Command layoutgen generates kernels/nchwc_layout_amd64.s and its Go
// declarations: the AVX-512 loops of the blocked layout's data movement
// (nchwc_layout.go), and the AVX2 reorders of blocks of 8, and of the column sums that the mean over a blocked
// map's pixels takes (reduce.go). Each computes exactly what its portable
// Go loop computes, so results are bitwise the same with or without it.
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
	reorder(true, 0, 16)
	reorder(false, 0, 16)
	reorder(false, 0, 8)
	reorder(false, 8, 8)
	reorder8(true)
	reorder8(false)
	sumRows4x16()
	Generate()
}

// rowAddr returns the address of row i < 16 of a 16×16 block whose rows
// are ld bytes apart, from the registers set by rowRegs.
type rowAddr func(i int) Mem

// rowRegs sets up the addressing of 16 rows ld bytes apart from base:
// base and base8 (row 8), ld, ld3 = 3·ld, ld5, ld7.
func rowRegs(base, base8, ld, ld3, ld5, ld7 GPPhysical) rowAddr {
	LEAQ(Mem{Base: ld, Index: ld, Scale: 2}, ld3)
	LEAQ(Mem{Base: ld, Index: ld, Scale: 4}, ld5)
	LEAQ(Mem{Base: ld3, Index: ld, Scale: 4}, ld7)
	return func(i int) Mem {
		b := base
		if i >= 8 {
			b, i = base8, i-8
		}
		switch i {
		case 0:
			return Mem{Base: b}
		case 1:
			return Mem{Base: b, Index: ld, Scale: 1}
		case 2:
			return Mem{Base: b, Index: ld, Scale: 2}
		case 3:
			return Mem{Base: b, Index: ld3, Scale: 1}
		case 4:
			return Mem{Base: b, Index: ld, Scale: 4}
		case 5:
			return Mem{Base: b, Index: ld5, Scale: 1}
		case 6:
			return Mem{Base: b, Index: ld3, Scale: 2}
		}
		return Mem{Base: b, Index: ld7, Scale: 1}
	}
}

// reorder emits nchwcToBlockF32AVX512 (to) or nchwcFromBlockF32AVX512:
// the reorders of one block of 16 channels over tiles of 16 pixels, the
// channels' rows ld elements apart in the plain layout, each tile a
// 16×16 transpose, then a last tile of rem < 16 pixels through masks.
// From the blocked layout it may write only the channels [first,
// first+count): nchwcFromBlock{Lo,Hi}F32AVX512, the halves that rows a
// multiple of 4 KB apart are written in (reorderPixelsVec).
func reorder(to bool, first, count int) {
	switch {
	case to:
		emit.Func("nchwcToBlockF32AVX512", "func(x, y *float32, ld, tiles, rem int)",
			"nchwcToBlockF32AVX512 sets y[16·p + c] = x[c·ld + p] for c < 16, p < 16·tiles + rem, rem < 16.")
	case count == 16:
		emit.Func("nchwcFromBlockF32AVX512", "func(x, y *float32, ld, tiles, rem int)",
			"nchwcFromBlockF32AVX512 sets y[c·ld + p] = x[16·p + c] for c < 16, p < 16·tiles + rem, rem < 16.")
	case first == 0:
		emit.Func("nchwcFromBlockLoF32AVX512", "func(x, y *float32, ld, tiles, rem int)",
			"nchwcFromBlockLoF32AVX512 is nchwcFromBlockF32AVX512 for the channels c < 8 only.")
	default:
		emit.Func("nchwcFromBlockHiF32AVX512", "func(x, y *float32, ld, tiles, rem int)",
			"nchwcFromBlockHiF32AVX512 is nchwcFromBlockF32AVX512 for the channels 8 ≤ c < 16 only.")
	}
	x, y, ld, n := RSI, RDI, RDX, RBX
	emit.Params("x y ld tiles", x, y, ld, n)
	SHLQ(U8(2), ld)
	plain, plain8 := x, R12
	blocked := y
	if !to {
		plain, blocked = y, x
	}
	at := rowRegs(plain, plain8, ld, R8, R9, R10)
	z := emit.Z()
	r, t := z[:16], z[16:]
	TESTQ(n, n)
	JE(LabelRef("tail"))
	Label("loop")
	LEAQ(Mem{Base: plain, Index: ld, Scale: 8}, plain8)
	for i := range 16 {
		if to {
			VMOVUPS(at(i), r[i])
		} else {
			VMOVUPS(Mem{Base: blocked, Disp: 64 * i}, r[i])
		}
	}
	emit.Transpose16(r, t)
	for i := range 16 {
		if to {
			VMOVUPS(r[i], Mem{Base: blocked, Disp: 64 * i})
		} else if i >= first && i < first+count {
			VMOVUPS(r[i], at(i))
		}
	}
	ADDQ(U8(64), plain)
	ADDQ(U32(1024), blocked)
	DECQ(n)
	JNE(LabelRef("loop"))

	// The last rem pixels: the plain rows' first rem lanes (K1), the
	// blocked layout's first rem pixel vectors.
	Label("tail")
	Load(Param("rem"), RCX)
	TESTQ(RCX, RCX)
	JE(LabelRef("done"))
	MOVQ(U32(1), R11)
	SHLQ(CL, R11)
	DECQ(R11)
	KMOVW(R11L, K1)
	LEAQ(Mem{Base: plain, Index: ld, Scale: 8}, plain8)
	for i := range 16 {
		if to {
			VMOVUPS_Z(at(i), K1, r[i])
			continue
		}
		CMPQ(RCX, U8(i))
		JE(LabelRef("loaded"))
		VMOVUPS(Mem{Base: blocked, Disp: 64 * i}, r[i])
	}
	if !to {
		Label("loaded")
	}
	emit.Transpose16(r, t)
	for i := range 16 {
		if !to {
			if i >= first && i < first+count {
				VMOVUPS(r[i], K1, at(i))
			}
			continue
		}
		CMPQ(RCX, U8(i))
		JE(LabelRef("done"))
		VMOVUPS(r[i], Mem{Base: blocked, Disp: 64 * i})
	}
	Label("done")
	VZEROUPPER()
	RET()
}

// reorder8 emits nchwcToBlock8F32AVX2 (to) or nchwcFromBlock8F32AVX2:
// the reorders of one block of 8 channels over tiles of 8 pixels, each
// an 8×8 transpose in ymm registers; package kernels moves the last
// pixels.
func reorder8(to bool) {
	if to {
		emit.Func("nchwcToBlock8F32AVX2", "func(x, y *float32, ld, tiles int)",
			"nchwcToBlock8F32AVX2 sets y[8·p + c] = x[c·ld + p] for c < 8, p < 8·tiles.")
	} else {
		emit.Func("nchwcFromBlock8F32AVX2", "func(x, y *float32, ld, tiles int)",
			"nchwcFromBlock8F32AVX2 sets y[c·ld + p] = x[8·p + c] for c < 8, p < 8·tiles.")
	}
	x, y, ld, n := RSI, RDI, RDX, RBX
	emit.Params("x y ld tiles", x, y, ld, n)
	SHLQ(U8(2), ld)
	plain, blocked := x, y
	if !to {
		plain, blocked = y, x
	}
	at := rowRegs(plain, R12, ld, R8, R9, R10)
	v := emit.Y()
	r, t := v[:8], v[8:]
	TESTQ(n, n)
	JE(LabelRef("done"))
	Label("loop")
	for i := range 8 {
		if to {
			VMOVUPS(at(i), r[i])
		} else {
			VMOVUPS(Mem{Base: blocked, Disp: 32 * i}, r[i])
		}
	}
	col := emit.Transpose8(r, t)
	for i := range 8 {
		if to {
			VMOVUPS(col[i], Mem{Base: blocked, Disp: 32 * i})
		} else {
			VMOVUPS(col[i], at(i))
		}
	}
	ADDQ(U8(32), plain)
	ADDQ(U32(256), blocked)
	DECQ(n)
	JNE(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

// sumRows4x16 emits redSumRows4x16F32AVX512: redAddRows4 on rows of 16
// float32 columns ld elements apart, groups of four rows in turn, the
// sums in float64 lanes as there: acc += (x0 + x1) + (x2 + x3).
func sumRows4x16() {
	emit.Func("redSumRows4x16F32AVX512", "func(x *float32, ld, groups int, acc *[16]float64)",
		"redSumRows4x16F32AVX512 adds rows 4g…4g+3 of x (16 columns, ld apart) into acc as redAddRows4 does, for g < groups.")
	x, ld, n, acc := RSI, RDX, RCX, RDI
	emit.Params("x ld groups acc", x, ld, n, acc)
	SHLQ(U8(2), ld)
	ld3 := R8
	LEAQ(Mem{Base: ld, Index: ld, Scale: 2}, ld3)
	lo, hi := Z0, Z1
	VMOVUPD(Mem{Base: acc}, lo)
	VMOVUPD(Mem{Base: acc, Disp: 64}, hi)
	TESTQ(n, n)
	JE(LabelRef("done"))
	Label("loop")
	rows := []Mem{{Base: x}, {Base: x, Index: ld, Scale: 1}, {Base: x, Index: ld, Scale: 2}, {Base: x, Index: ld3, Scale: 1}}
	for h, a := range []VecPhysical{lo, hi} {
		v := []VecPhysical{Z2, Z3, Z4, Z5}
		for i, m := range rows {
			m.Disp = 32 * h
			VCVTPS2PD(m, v[i])
		}
		VADDPD(v[1], v[0], v[0])
		VADDPD(v[3], v[2], v[2])
		VADDPD(v[2], v[0], v[0])
		VADDPD(v[0], a, a)
	}
	LEAQ(Mem{Base: x, Index: ld, Scale: 4}, x)
	DECQ(n)
	JNE(LabelRef("loop"))
	Label("done")
	VMOVUPD(lo, Mem{Base: acc})
	VMOVUPD(hi, Mem{Base: acc, Disp: 64})
	VZEROUPPER()
	RET()
}
