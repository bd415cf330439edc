package main

import (
	"github.com/gopir/gopir/kernels/internal/avo/emit"
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The col2im kernels add, for one channel and kernel row, the kernel
// columns' terms of rows input rows (dst, dstStride apart; src, srcStride
// apart): per 16-column chunk of a row they load the chunk, add in turn
// the kw kernel columns' terms and store it once, where the scalar loop
// loads and stores an element per term. tab holds per chunk its store
// mask, then one entry per kernel column. Adds are merge-masked with the
// chunk as their first operand, as x += v is, so untouched lanes keep
// their bits and every element gets its terms in the order of the kernel
// columns, as the scatter loop adds them. The two kernels differ only in
// how a kernel column's terms are loaded: col2imLoop is the rest.

// col2imGatherF32 emits col2imGatherF32AVX512(dst, src *float32, tab
// *int64, dstStride, srcStride, rows, chunks, kw int), unit column stride:
// a kernel column's entry is a lane mask and the element offset of lane 0
// in src (relative to the row's src).
func col2imGatherF32() {
	emit.Func("col2imGatherF32AVX512", "func(dst, src *float32, tab *int64, dstStride, srcStride, rows, chunks, kw int)",
		"col2imGatherF32AVX512 adds the kernel columns' terms of rows input rows, a 16-column chunk at a time (see col2imGather).")
	dst, src, tab, ds, ss, rows, chunks, kw := RDI, RSI, RDX, R8, R9, R10, R11, R12
	emit.Params("dst src tab dstStride srcStride rows chunks kw", dst, src, tab, ds, ss, rows, chunks, kw)
	col2imLoop(dst, src, tab, ds, ss, rows, chunks, kw, 16, func(tp GPPhysical) {
		KMOVW(Mem{Base: tp}, K1)
		MOVQ(Mem{Base: tp, Disp: 8}, RAX)
		VADDPS(Mem{Base: src, Index: RAX, Scale: 4}, Z0, K1, Z0)
	})
}

// col2imStride2F32 emits col2imStride2F32AVX512(dst, src *float32, tab
// *int64, idx *[16]int32, dstStride, srcStride, rows, chunks, kw int),
// column stride 2, the input gradient of ppyoloe_s's 3×3/2 layers. A
// kernel column's terms fall on every other lane, lane L taking src
// element base + L>>1: its entry holds the lanes that take a term, the src
// elements they read (of the eight from base, loaded under that mask, so
// no other element is touched) and base (relative to the row's src); idx
// holds L>>1 for the permute that spreads the eight over the lanes.
func col2imStride2F32() {
	emit.Func("col2imStride2F32AVX512", "func(dst, src *float32, tab *int64, idx *[16]int32, dstStride, srcStride, rows, chunks, kw int)",
		"col2imStride2F32AVX512 adds the kernel columns' terms of rows input rows with column stride 2, a 16-column chunk at a time (see col2imStride2).")
	dst, src, tab, ix, ds, ss, rows, chunks, kw := RDI, RSI, RDX, R15, R8, R9, R10, R11, R12
	emit.Params("dst src tab idx dstStride srcStride rows chunks kw", dst, src, tab, ix, ds, ss, rows, chunks, kw)
	perm := Z31
	VMOVDQU32(Mem{Base: ix}, perm)
	col2imLoop(dst, src, tab, ds, ss, rows, chunks, kw, 24, func(tp GPPhysical) {
		KMOVW(Mem{Base: tp}, K1)
		KMOVW(Mem{Base: tp, Disp: 8}, K3)
		MOVQ(Mem{Base: tp, Disp: 16}, RAX)
		VMOVUPS_Z(Mem{Base: src, Index: RAX, Scale: 4}, K3, Z1)
		VPERMPS(Z1, perm, Z1)
		VADDPS(Z1, Z0, K1, Z0)
	})
}

// col2imLoop emits the rows × chunks × kernel columns loop of a col2im
// kernel whose tab entries are entry bytes a kernel column; addTerm adds
// the column whose entry tp points at into Z0. Strides come in elements.
func col2imLoop(dst, src, tab, ds, ss, rows, chunks, kw GPPhysical, entry int, addTerm func(tp GPPhysical)) {
	SHLQ(U8(2), ds)
	SHLQ(U8(2), ss)
	TESTQ(rows, rows)
	JE(LabelRef("done"))
	TESTQ(chunks, chunks)
	JE(LabelRef("done"))
	tp, d, c, j := R13, RBX, RCX, R14
	Label("row")
	MOVQ(tab, tp)
	MOVQ(dst, d)
	MOVQ(chunks, c)
	Label("chunk")
	KMOVW(Mem{Base: tp}, K2)
	VMOVUPS_Z(Mem{Base: d}, K2, Z0)
	ADDQ(U8(8), tp)
	MOVQ(kw, j)
	TESTQ(j, j)
	JE(LabelRef("store"))
	Label("col")
	addTerm(tp)
	ADDQ(U8(entry), tp)
	DECQ(j)
	JNE(LabelRef("col"))
	Label("store")
	VMOVUPS(Z0, K2, Mem{Base: d})
	ADDQ(U8(64), d)
	DECQ(c)
	JNE(LabelRef("chunk"))
	ADDQ(ds, dst)
	ADDQ(ss, src)
	DECQ(rows)
	JNE(LabelRef("row"))
	Label("done")
	VZEROUPPER()
	RET()
}
