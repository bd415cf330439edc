package main

import (
	"fmt"

	"github.com/gopir/gopir/kernels/internal/avo/emit"
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
	emit.Func(name, fmt.Sprintf("func(k int, a, b *%s, koff *int32, c *%s, ldc int, alpha, beta %s)", f.typ(), f.typ(), f.typ()),
		fmt.Sprintf("%s is %s with B's rows read in place at b + koff[4s] (see indirectKernel in the generator).",
			name, f.kernelName(h, v)))

	es, vb := f.es(), f.vb()
	astep := f.mr * es
	t := tile{f, h, v}

	n, pa, pb, pt, pc, ldc, off := RCX, RSI, RDI, R10, RDX, R8, R11
	emit.Params("k a b koff", n, pa, pb, pt)
	f.loadC(pc, ldc)

	f.warmAndZero(t, pc, ldc)

	step := func(u int) {
		aOff := u * astep
		f.prefetchA(pa, aOff, astep)
		MOVLQSX(Mem{Base: pt, Disp: u * indirectTabStride}, off)
		t.update(func(i int) Mem { return Mem{Base: pa, Disp: aOff + i*es} },
			func(j int) Mem { return Mem{Base: pb, Index: off, Scale: uint8(es), Disp: j * vb} })
	}

	f.kLoop(n, step, func(u int) {
		ADDQ(U32(u*astep), pa)
		ADDQ(U32(u*indirectTabStride), pt)
	})

	f.storeTile(t, pc, ldc)
}
