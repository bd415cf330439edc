package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// indirectTabStride is the bytes between the offsets that an indirect
// kernel reads: the convolution's im2col row table holds four int32 per
// row (kOff, di, dj, 0; convKTab), the offset first.
const indirectTabStride = 16

// indirectName is the name of the indirect variant of h full-width rows.
func (f family) indirectName(h int) string {
	return fmt.Sprintf("%si_%dx%d", f.name, h, f.nv*f.lanes())
}

// indirectKernel emits <name>i_<h>x<nr>(k int, a, b *T, koff *int32, c *T,
// ldc int, alpha, beta T): the h×nr kernel with B read in place instead of
// from a packed panel — its row for k step s is the nr consecutive
// elements at b + koff[s·4] (elements; offsets indirectTabStride bytes
// apart). A convolution whose panel of nr output columns reads nr
// consecutive input elements for every im2col row (unit column stride, no
// padding inside the panel) runs this on the input with the im2col row
// table, and packs nothing. The multiply-adds and the store are those of
// kernel(h, nv) in the same order, so the bits are the same.
func (f family) indirectKernel(h int) {
	v := f.nv
	name := f.indirectName(h)
	TEXT(name, NOSPLIT, fmt.Sprintf("func(k int, a, b *%s, koff *int32, c *%s, ldc int, alpha, beta %s)", f.typ(), f.typ(), f.typ()))
	Pragma("noescape")
	Doc(fmt.Sprintf("%s is %s with B's rows read in place at b + koff[4s] (see indirectKernel in the generator).",
		name, f.kernelName(h, v)))

	es, vb := f.es(), f.vb()
	astep := f.mr * es
	acc := func(i, j int) VecPhysical { return f.vec(i*v + j) }
	bv := func(j int) VecPhysical { return f.vec(h*v + j) }
	tv := f.vec(h*v + v)

	n, pa, pb, pt, pc, ldc, off := RCX, RSI, RDI, R10, RDX, R8, R11
	Load(Param("k"), n)
	Load(Param("a"), pa)
	Load(Param("b"), pb)
	Load(Param("koff"), pt)
	Load(Param("c"), pc)
	Load(Param("ldc"), ldc)
	SHLQ(U8(map[int]int{4: 2, 8: 3}[es]), ldc)

	f.warmAndZero(h, v, pc, ldc, acc)

	step := func(u int) {
		aOff := u * astep
		if f.prefA > 0 && aOff%64 < astep {
			PREFETCHT0(Mem{Base: pa, Disp: aOff + f.prefA})
		}
		MOVLQSX(Mem{Base: pt, Disp: u * indirectTabStride}, off)
		for j := 0; j < v; j++ {
			VMOVUPS(Mem{Base: pb, Index: off, Scale: uint8(es), Disp: j * vb}, bv(j))
		}
		for i := 0; i < h; i++ {
			f.bcast(Mem{Base: pa, Disp: aOff + i*es}, tv)
			for j := 0; j < v; j++ {
				f.fma(bv(j), tv, acc(i, j))
			}
		}
	}

	f.kLoop(n, step, func(u int) {
		ADDQ(U32(u*astep), pa)
		ADDQ(U32(u*indirectTabStride), pt)
	})

	Label("store")
	f.storeTile(h, v, pc, ldc, acc, bv(0), tv)
}
