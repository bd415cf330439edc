// Command col2imgen generates kernels/col2im_amd64.s and its Go
// declarations: the AVX-512 col2im of convolutions with column stride 2,
// the input gradient of ppyoloe_s's 3×3/2 layers, where the scalar
// scatter loop took more time than the GEMM before it (32→48 on 160×160
// at batch 8: about 60% of the input gradient). It computes exactly what
// the scalar loop (col2imRows) computes, term for term in the same order.
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
	col2imStride2F32()
	Generate()
}

// col2imStride2F32 emits col2imStride2F32AVX512(dst, src *float32, tab
// *int64, idx *[16]int32, dstStride, srcStride, rows, chunks, kw int):
// the col2im of one channel and kernel row with column stride 2. For each
// of rows input rows (dst, dstStride apart; src, srcStride apart) and each
// 16-column chunk of the row, it loads the chunk, adds in turn the kw
// kernel columns' terms and stores it once. With stride 2 the terms of
// one kernel column fall on every other lane, lane L taking src element
// base + L>>1: tab holds per chunk its store mask, then per kernel column
// the lanes that take a term, the src elements they read (of the eight
// from base, loaded under that mask, so no other element is touched) and
// base (relative to the row's src); idx holds L>>1. Adds are
// merge-masked with the chunk as their first operand, as x += v is, so
// untouched lanes keep their bits and every element gets its terms in the
// order of the kernel columns.
func col2imStride2F32() {
	TEXT("col2imStride2F32AVX512", NOSPLIT, "func(dst, src *float32, tab *int64, idx *[16]int32, dstStride, srcStride, rows, chunks, kw int)")
	Pragma("noescape")
	Doc("col2imStride2F32AVX512 adds the kernel columns' terms of rows input rows with column stride 2, a 16-column chunk at a time (see col2imStride2).")
	dst, src, tab, ix, ds, ss, rows, chunks, kw := RDI, RSI, RDX, R15, R8, R9, R10, R11, R12
	Load(Param("dst"), dst)
	Load(Param("src"), src)
	Load(Param("tab"), tab)
	Load(Param("idx"), ix)
	Load(Param("dstStride"), ds)
	Load(Param("srcStride"), ss)
	Load(Param("rows"), rows)
	Load(Param("chunks"), chunks)
	Load(Param("kw"), kw)
	perm := Z31
	VMOVDQU32(Mem{Base: ix}, perm)
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
	KMOVW(Mem{Base: tp}, K1)
	KMOVW(Mem{Base: tp, Disp: 8}, K3)
	MOVQ(Mem{Base: tp, Disp: 16}, RAX)
	VMOVUPS_Z(Mem{Base: src, Index: RAX, Scale: 4}, K3, Z1)
	VPERMPS(Z1, perm, Z1)
	VADDPS(Z1, Z0, K1, Z0)
	ADDQ(U8(24), tp)
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
