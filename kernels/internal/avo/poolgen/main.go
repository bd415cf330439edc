// Command poolgen generates kernels/pool_amd64.s and its Go declarations:
// the AVX-512 loops of the index-free max pooling (pool_values.go). Each
// computes exactly what its portable Go loop computes, so results are
// bitwise the same with or without it.
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
	maxTapsF32(false)
	maxTapsF32(true)
	maxPool2x2F32()
	maxPool3x3S2F32()
	Generate()
}

// lowMask sets k to the low min(cnt, 16) bits for cnt in CX (0 < cnt),
// clobbering R11.
func lowMask(k OpmaskPhysical) {
	MOVQ(U32(1), R11)
	SHLQ(CL, R11)
	DECQ(R11)
	KMOVW(R11L, k)
}

// pairMasks sets K5 and K6 to the low and high 16 bits of a mask of the
// low CX bits (CX ≤ 32): the lanes of two registers. Clobbers R11.
func pairMasks() {
	MOVQ(U32(1), R11)
	SHLQ(CL, R11)
	DECQ(R11)
	KMOVW(R11L, K5)
	SHRQ(U8(16), R11)
	KMOVW(R11L, K6)
}

// chunk sets CX to min(16, rem) for rem in R12.
func chunk() {
	MOVQ(R12, RCX)
	CMPQ(RCX, U8(16))
	JLE(LabelRef("part"))
	MOVQ(U32(16), RCX)
	Label("part")
}

// combine applies maxPair(best, v) lane-wise into best (emit.MaxPair,
// K1..K3 its temporaries).
func combine(best, v VecPhysical) { emit.MaxPair(best, v) }

// combineFast is combine through one VMAXPS where neither best nor v
// holds a NaN in any lane: VMAXPS(src1 v, src2 best) takes v where v >
// best and best otherwise (equal values, ±0 among them, keep the earlier
// one), which is maxPair without NaNs. Where a lane has a NaN it jumps to
// combine; labels are named after name.
func combineFast(best, v VecPhysical, name string) {
	VCMPPS(U8(3), v, best, K1) // best or v is NaN
	KORTESTW(K1, K1)
	JNE(LabelRef(name + "nan"))
	VMAXPS(best, v, best)
	JMP(LabelRef(name + "done"))
	Label(name + "nan")
	combine(best, v)
	Label(name + "done")
}

// maxTapsF32 emits maxTapsF32AVX512 (stride 1) or, with s2,
// maxTapsS2F32AVX512 (stride 2), of signature func(dst, src *float32,
// offs *int64, taps, n, rows, dstStride, srcStride int): for each row r <
// rows and i < n, dst[r·dstStride + i] is src[r·srcStride + offs[0] + s·i]
// folded by maxPair with src[r·srcStride + offs[t] + s·i] for t = 1 …
// taps−1 in that order (s the stride; taps ≥ 1). 16 outputs at a time, the
// last chunk of a row under a mask; with stride 2 a tap's 16 elements come
// from 31 consecutive ones split with VPERMT2PS.
func maxTapsF32(s2 bool) {
	name := "maxTapsF32AVX512"
	if s2 {
		name = "maxTapsS2F32AVX512"
	}
	emit.Func(name, "func(dst, src *float32, offs *int64, taps, n, rows, dstStride, srcStride int)",
		name+" is maxTaps's loop on float32 rows, 16 outputs at a time.")
	dst, src, offs, taps, n, rows, dstStride := RDI, RSI, RDX, R8, R9, R10, RBX
	rem, d, sp, t := R12, R13, R14, RAX
	emit.Params("dst src offs taps n rows dstStride", dst, src, offs, taps, n, rows, dstStride)
	SHLQ(U8(3), taps)      // bytes of offs
	SHLQ(U8(2), dstStride) // bytes
	if s2 {
		even, _ := emit.EvenOddLanes("pool")
		VMOVDQU32(even, Z16)
	}
	TESTQ(n, n)
	JE(LabelRef("done"))
	TESTQ(rows, rows)
	JE(LabelRef("done"))
	Label("row")
	MOVQ(dst, d)
	MOVQ(src, sp)
	MOVQ(n, rem)
	Label("loop")
	chunk()
	lowMask(K4)
	if s2 {
		// 2·cnt−1 inputs per tap, over two registers.
		ADDQ(RCX, RCX)
		DECQ(RCX)
		pairMasks()
	}
	load := func(z VecPhysical) {
		// z = the tap whose offset is at offs+t.
		MOVQ(Mem{Base: offs, Index: t, Scale: 1}, R11)
		if !s2 {
			VMOVUPS_Z(Mem{Base: sp, Index: R11, Scale: 4}, K4, z)
			return
		}
		LEAQ(Mem{Base: sp, Index: R11, Scale: 4}, R11)
		VMOVUPS_Z(Mem{Base: R11}, K5, z)
		VMOVUPS_Z(Mem{Base: R11, Disp: 64}, K6, Z2)
		VPERMT2PS(Z2, Z16, z)
	}
	XORQ(t, t)
	load(Z0)
	ADDQ(U8(8), t)
	CMPQ(t, taps)
	JGE(LabelRef("store"))
	Label("tap")
	load(Z1)
	combineFast(Z0, Z1, "tap")
	ADDQ(U8(8), t)
	CMPQ(t, taps)
	JL(LabelRef("tap"))
	Label("store")
	VMOVUPS(Z0, K4, Mem{Base: d})
	ADDQ(U8(64), d)
	if s2 {
		ADDQ(U32(128), sp)
	} else {
		ADDQ(U8(64), sp)
	}
	SUBQ(U8(16), rem)
	JG(LabelRef("loop"))
	ADDQ(dstStride, dst)
	Load(Param("srcStride"), R11)
	LEAQ(Mem{Base: src, Index: R11, Scale: 4}, src)
	DECQ(rows)
	JNE(LabelRef("row"))
	Label("done")
	VZEROUPPER()
	RET()
}

// maxPool2x2F32 emits maxPool2x2ValuesF32AVX512(x, out *float32, w, oh,
// ow int): 2×2 max pooling with stride 2 and no padding of one plane of
// width w (2·ow ≤ w, 2·oh rows) in one pass, as the two passes would do
// it: per window a, b (row 2y), c, d (row 2y+1) combined in that order.
// 16 outputs at a time from 32 columns of each row, split into even and
// odd columns by VSHUFPS within 128-bit lanes (outputs 2L, 2L+1, 8+2L,
// 8+2L+1 in lane L) and put in order by one VPERMPS of the result: four
// in-lane shuffles and a permute cost less than the four two-register
// permutes that split them in order. Whole chunks load without masks;
// the last, partial chunk of a row loads and stores under them.
func maxPool2x2F32() {
	emit.Func("maxPool2x2ValuesF32AVX512", "func(x, out *float32, w, oh, ow int)",
		"maxPool2x2ValuesF32AVX512 is MaxPool2DValues on one float32 plane for 2×2 windows with stride 2, 16 outputs at a time.")
	x, out, w, oh, ow := RSI, RDI, R8, R9, R10
	emit.Params("x out w oh ow", x, out, w, oh, ow)
	order := GLOBL("poolShufOrder", RODATA|NOPTR)
	for i, lane := range []int{0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15} {
		DATA(4*i, U32(lane))
	}
	VMOVDQU32(order, Z16)
	TESTQ(oh, oh)
	JE(LabelRef("done"))
	TESTQ(ow, ow)
	JE(LabelRef("done"))
	pIn, pOut := R13, R14
	Label("row")
	MOVQ(x, pIn)
	MOVQ(out, pOut)
	MOVQ(ow, R12)
	KXNORW(K4, K4, K4) // whole chunks store all 16 lanes
	Label("loop")
	LEAQ(Mem{Base: pIn, Index: w, Scale: 4}, RAX)
	CMPQ(R12, U8(16))
	JL(LabelRef("part"))
	VMOVUPS(Mem{Base: pIn}, Z0)
	VMOVUPS(Mem{Base: pIn, Disp: 64}, Z1)
	VMOVUPS(Mem{Base: RAX}, Z2)
	VMOVUPS(Mem{Base: RAX, Disp: 64}, Z3)
	JMP(LabelRef("split"))
	Label("part")
	MOVQ(R12, RCX)
	lowMask(K4)
	ADDQ(RCX, RCX)
	pairMasks()
	VMOVUPS_Z(Mem{Base: pIn}, K5, Z0)
	VMOVUPS_Z(Mem{Base: pIn, Disp: 64}, K6, Z1)
	VMOVUPS_Z(Mem{Base: RAX}, K5, Z2)
	VMOVUPS_Z(Mem{Base: RAX, Disp: 64}, K6, Z3)
	Label("split")
	a, b, c, d := Z4, Z5, Z6, Z7
	VSHUFPS(U8(0x88), Z1, Z0, a)
	VSHUFPS(U8(0xdd), Z1, Z0, b)
	VSHUFPS(U8(0x88), Z3, Z2, c)
	VSHUFPS(U8(0xdd), Z3, Z2, d)
	// Without a NaN among the window's elements (the lanes a mask drops
	// are zeros) maxPair is VMAXPS with the later element first.
	VCMPPS(U8(3), Z2, Z0, K1)
	VCMPPS(U8(3), Z3, Z1, K2)
	KORTESTW(K1, K2)
	JNE(LabelRef("nan"))
	VMAXPS(a, b, a)
	VMAXPS(a, c, a)
	VMAXPS(a, d, a)
	JMP(LabelRef("store"))
	Label("nan")
	combine(a, b)
	combine(a, c)
	combine(a, d)
	Label("store")
	VPERMPS(a, Z16, a)
	VMOVUPS(a, K4, Mem{Base: pOut})
	ADDQ(U32(128), pIn)
	ADDQ(U8(64), pOut)
	SUBQ(U8(16), R12)
	JG(LabelRef("loop"))
	LEAQ(Mem{Base: x, Index: w, Scale: 8}, x)
	LEAQ(Mem{Base: out, Index: ow, Scale: 4}, out)
	DECQ(oh)
	JNE(LabelRef("row"))
	Label("done")
	VZEROUPPER()
	RET()
}

// maxPool3x3S2F32 emits maxPool3x3S2ValuesF32AVX512(x, out *float32,
// planes, h, w, oh, ow int): 3×3 max pooling with stride 2 and padding 1
// (ResNet's) of planes consecutive h×w planes into oh×ow ones
// (oh = ⌈h/2⌉, ow = ⌈w/2⌉) in one pass, per window the rows' maxima
// first (columns 2i−1, 2i, 2i+1), then the rows 2y−1, 2y, 2y+1 in that
// order. A tap in the padding reads its nearest element in the window
// instead: a repeated element folded by maxPair changes nothing (it is
// the fold so far or loses to it), so the result is the clipped
// window's, bit for bit. 16 outputs at a time, from 32 consecutive
// elements of each row split into even and odd lanes; the odd lane before
// a chunk comes from the chunk before (or is the row's first element).
func maxPool3x3S2F32() {
	emit.Func("maxPool3x3S2ValuesF32AVX512", "func(x, out *float32, planes, h, w, oh, ow int)",
		"maxPool3x3S2ValuesF32AVX512 is MaxPool2DValues on float32 planes for 3×3 windows with stride 2 and padding 1, 16 outputs at a time.")
	x, out, w, ow, y := RSI, RDI, R8, R9, R10
	r0, r1, r2 := RAX, RBX, RDX
	op, rem, left := R13, R12, R14
	emit.Params("x out w ow", x, out, w, ow)
	planes := AllocLocal(8)
	Load(Param("planes"), R11)
	MOVQ(R11, planes)
	TESTQ(R11, R11)
	JE(LabelRef("done"))
	Load(Param("oh"), R11)
	TESTQ(R11, R11)
	JE(LabelRef("done"))
	TESTQ(ow, ow)
	JE(LabelRef("done"))
	ev, od := emit.EvenOddLanes("pool")
	VMOVDQU32(ev, Z16)
	VMOVDQU32(od, Z17)

	Label("plane")
	XORQ(y, y)
	Label("row")
	// r1 = row 2y, r0 = row 2y−1 (2y at the top), r2 = row 2y+1 (2y at
	// the bottom).
	MOVQ(y, r1)
	IMULQ(w, r1)
	LEAQ(Mem{Base: x, Index: r1, Scale: 8}, r1)
	MOVQ(r1, r0)
	TESTQ(y, y)
	JE(LabelRef("top"))
	MOVQ(w, R11)
	SHLQ(U8(2), R11)
	SUBQ(R11, r0)
	Label("top")
	MOVQ(r1, r2)
	LEAQ(Mem{Base: y, Index: y, Scale: 1, Disp: 1}, R11)
	Load(Param("h"), RCX)
	CMPQ(R11, RCX)
	JGE(LabelRef("bottom"))
	LEAQ(Mem{Base: r2, Index: w, Scale: 4}, r2)
	Label("bottom")
	rows := []GPPhysical{r0, r1, r2}
	prev := []VecPhysical{Z20, Z21, Z22} // the odd lanes of the chunk before
	for k, r := range rows {
		VBROADCASTSS(Mem{Base: r}, prev[k])
	}
	MOVQ(out, op)
	MOVQ(ow, rem)
	MOVQ(w, left)

	Label("chunk")
	chunk()
	lowMask(K4) // outputs
	// K5, K6: the min(32, left) elements from 2i on; K7: the odd lanes
	// that are inside the row.
	MOVQ(left, RCX)
	CMPQ(RCX, U8(32))
	JLE(LabelRef("elems"))
	MOVQ(U32(32), RCX)
	Label("elems")
	pairMasks()
	MOVQ(left, RCX)
	SHRQ(U8(1), RCX)
	CMPQ(RCX, U8(16))
	JLE(LabelRef("odd"))
	MOVQ(U32(16), RCX)
	Label("odd")
	lowMask(K7)
	even := []VecPhysical{Z0, Z3, Z6}
	odd := []VecPhysical{Z1, Z4, Z7}
	before := []VecPhysical{Z2, Z5, Z8}
	// The rows 8 below r2, which the hardware prefetcher left to the
	// loads (at batch 64, 16 MB of input: 1.9–4.3 ms against 0.57–1.0
	// with this, 4 rows below 0.61–1.1).
	MOVQ(w, R11)
	SHLQ(U8(5), R11)
	PREFETCHT0(Mem{Base: r2, Index: R11, Scale: 1})
	PREFETCHT0(Mem{Base: r2, Index: R11, Scale: 1, Disp: 64})
	for k, r := range rows {
		VMOVUPS_Z(Mem{Base: r}, K5, Z10)
		VMOVUPS_Z(Mem{Base: r, Disp: 64}, K6, Z11)
		VMOVAPS(Z10, even[k])
		VPERMT2PS(Z11, Z16, even[k])
		VMOVAPS(Z10, odd[k])
		VPERMT2PS(Z11, Z17, odd[k])
		// before = the odd lane left of each even one: prev's last, then
		// odd's first 15.
		VALIGND(U8(15), prev[k], odd[k], before[k])
		VMOVAPS(odd[k], prev[k])
	}
	// A NaN in any lane a window reads (the odd lane before a chunk's
	// first one included) takes the slow fold.
	KXORW(K1, K1, K1)
	for k := range rows {
		VCMPPS(U8(3), odd[k], even[k], K2)
		KORW(K2, K1, K1)
		VCMPPS(U8(3), before[k], before[k], K2)
		KORW(K2, K1, K1)
	}
	// An odd lane past the row's end repeats the even one.
	KNOTW(K7, K7)
	for k := range rows {
		VMOVAPS(even[k], K7, odd[k])
	}
	KORTESTW(K1, K1)
	JNE(LabelRef("nan"))
	for k := range rows {
		VMAXPS(before[k], even[k], before[k])
		VMAXPS(before[k], odd[k], before[k])
	}
	VMAXPS(before[0], before[1], before[0])
	VMAXPS(before[0], before[2], before[0])
	JMP(LabelRef("store"))
	Label("nan")
	for k := range rows {
		combine(before[k], even[k])
		combine(before[k], odd[k])
	}
	combine(before[0], before[1])
	combine(before[0], before[2])
	Label("store")
	VMOVUPS(before[0], K4, Mem{Base: op})
	for _, r := range rows {
		ADDQ(U32(128), r)
	}
	ADDQ(U8(64), op)
	SUBQ(U8(32), left)
	SUBQ(U8(16), rem)
	JG(LabelRef("chunk"))

	LEAQ(Mem{Base: out, Index: ow, Scale: 4}, out)
	INCQ(y)
	Load(Param("oh"), R11)
	CMPQ(y, R11)
	JL(LabelRef("row"))
	Load(Param("h"), R11)
	IMULQ(w, R11)
	LEAQ(Mem{Base: x, Index: R11, Scale: 4}, x)
	DECQ(planes)
	JNE(LabelRef("plane"))
	Label("done")
	VZEROUPPER()
	RET()
}
