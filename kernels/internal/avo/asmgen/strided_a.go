package main

import (
	"fmt"

	"github.com/gopir/gopir/kernels/internal/avo/emit"
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// stridedAStride is the element stride between A's rows in the strided
// variants: a convolution's column stride of 2.
const stridedAStride = 2

// stridedAName is the name of the variant of h rows and v vectors that
// reads A in place with rows stridedAStride elements apart.
func (f family) stridedAName(h, v int) string {
	return fmt.Sprintf("%ss%d_%dx%d", f.name, stridedAStride, h, v*f.lanes())
}

// stridedAKernel emits <name>s2_<h>x<16v>(k int, a *T, koff *int32, b, c
// *T, ldc int, alpha, beta T): the h×v kernel with A read in place — row
// i's element for k step s at a + koff[4s] + 2i (elements; offsets
// indirectTabStride bytes apart) — and B from a packed panel. It is the
// transposed convolution product (rows: output positions, columns:
// output channels) of a convolution with column stride 2: h consecutive
// output positions of one output row whose taps all lie inside the input
// read every other input element, which the kernel broadcasts straight
// from the input, so nothing gathers them into a panel. The
// multiply-adds and the store are those of kernel(h, v) in the same
// order, so the bits are the same.
func (f family) stridedAKernel(h, v int) {
	name := f.stridedAName(h, v)
	emit.Func(name, fmt.Sprintf("func(k int, a *%s, koff *int32, b, c *%s, ldc int, alpha, beta %s)", f.typ(), f.typ(), f.typ()),
		fmt.Sprintf("%s is %s with A's rows read in place at a + koff[4s] + %d·i (see stridedAKernel in the generator).",
			name, f.kernelName(h, v), stridedAStride))
	f.stridedABody(h, v, false)
}

// stridedABody emits the body of a strided kernel of h rows and v
// vectors; with split, B's vectors past f.nv come from the panel at the
// parameter b2 (stridedA3Kernel).
func (f family) stridedABody(h, v int, split bool) {
	es, vb := f.es(), f.vb()
	bstep := f.nv * vb
	t := tile{f, h, v}

	n, pa, pt, pb, pb2, pc, ldc, off := RCX, RSI, R10, RDI, R12, RDX, R8, R11
	emit.Params("k a koff b", n, pa, pt, pb)
	if split {
		Load(Param("b2"), pb2)
	}
	f.loadC(pc, ldc)

	f.warmAndZero(t, pc, ldc)

	bAt := func(u, j int) Mem {
		if split && j >= f.nv {
			return Mem{Base: pb2, Disp: u*bstep + (j-f.nv)*vb}
		}
		return Mem{Base: pb, Disp: u*bstep + j*vb}
	}
	step := func(u int) {
		MOVLQSX(Mem{Base: pt, Disp: u * indirectTabStride}, off)
		aAt := func(i int) Mem { return Mem{Base: pa, Index: off, Scale: uint8(es), Disp: i * stridedAStride * es} }
		if v == 1 && !f.f64 && f.zmm {
			// One vector: each broadcast would feed a single
			// multiply-add, so it is the multiply-add's memory operand
			// instead (the same product, so the same bits).
			VMOVUPS(bAt(u, 0), t.b(0))
			for i := 0; i < h; i++ {
				VFMADD231PS_BCST(aAt(i), t.b(0), t.acc(i, 0))
			}
			return
		}
		t.update(aAt, func(j int) Mem { return bAt(u, j) })
	}

	f.kLoop(n, step, func(u int) {
		ADDQ(U32(u*indirectTabStride), pt)
		ADDQ(U32(u*bstep), pb)
		if split {
			ADDQ(U32(u*bstep), pb2)
		}
	})

	f.storeTile(t, pc, ldc)
}

// stridedA3Max is the most rows of the three-vector strided kernels:
// 9·3 accumulators, three B vectors and the broadcast fill the 32
// registers.
const stridedA3Max = 9

// stridedA3Name is the name of the h-row, three-vector variant of
// stridedAKernel.
func (f family) stridedA3Name(h int) string {
	return fmt.Sprintf("%ss%d_%dx%d", f.name, stridedAStride, h, 3*f.lanes())
}

// stridedA3Kernel emits <name>s2_<h>x48(k int, a *T, koff *int32, b, b2,
// c *T, ldc int, alpha, beta T): stridedAKernel for three vectors of
// output channels, the first two from the packed panel at b and the
// third from the next panel at b2 (both panels f.nv vectors wide). A
// layer with an odd number of output-channel vectors (the detector's
// 32→48 3×3/2) otherwise runs its last vector as a one-vector pass,
// whose broadcasts each feed one multiply-add. Every accumulator gets
// the multiply-add of kernel(h, v)'s, in the same k order, and the same
// store, so the bits are the same.
func (f family) stridedA3Kernel(h int) {
	name := f.stridedA3Name(h)
	emit.Func(name, fmt.Sprintf("func(k int, a *%s, koff *int32, b, b2, c *%s, ldc int, alpha, beta %s)", f.typ(), f.typ(), f.typ()),
		fmt.Sprintf("%s is %s for three vectors of columns, the third from the panel at b2.", name, f.stridedAName(h, 1)))
	f.stridedABody(h, 3, true)
}
