package main

import (
	"fmt"

	"github.com/gopir/gopir/kernels/internal/avo/emit"
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// rowSlicesMax is the most depth slices a slice kernel computes at once.
const rowSlicesMax = 8

// rowSlicesKernel emits <name>_slices<s>x<v·lanes>(k int, a, b, c *T,
// astride, bstride int, alpha T): the first v vectors of one packed B
// panel's columns for s depth slices of a matrix–vector product at once.
// Slice q reads k elements of A's row at a + q·astride bytes and its
// panel at b + q·bstride bytes, and stores alpha·acc (no beta) at c +
// q·v·vectorbytes. Each column of each slice gets the arithmetic of the
// 1×nr edge kernel with beta zero — a chain of fused multiply-adds from
// zero in k order, then alpha·acc — so the caller can merge the slices
// into C in order, as the GEMM does one slice after another, with the
// same bits. A narrow product (a classifier's last layer: one partial
// panel, 4096 deep) is one chain per slice, latency-bound; s slices run s
// chains side by side.
func (f family) rowSlicesKernel(s, v int) {
	name := fmt.Sprintf("%s_slices%dx%d", f.name, s, v*f.lanes())
	emit.Func(name, fmt.Sprintf("func(k int, a, b, c *%s, astride, bstride int, alpha %s)", f.typ(), f.typ()),
		fmt.Sprintf("%s computes alpha*A·B on the first %d columns of a packed B panel for %d depth slices (see rowSlicesKernel in the generator).",
			name, v*f.lanes(), s))
	es, vb := f.es(), f.vb()
	bstep := f.nv * vb // bytes per k step in a packed B panel
	acc := func(q, j int) VecPhysical { return f.vec(q*v + j) }
	tmp := func(q int) VecPhysical { return f.vec(s*v + q) }
	// Slice q's operands are at base + q·stride: bases for slices 0–3 and
	// 4–7, strides ×1, ×2 and ×3 (3·stride in a register of its own).
	n := RCX
	pa, pa4, as, as3 := RSI, R8, R9, R10
	pb, pb4, bs, bs3 := RDI, R11, R12, R13
	emit.Params("k a b astride bstride", n, pa, pb, as, bs)
	LEAQ(Mem{Base: as, Index: as, Scale: 2}, as3)
	LEAQ(Mem{Base: bs, Index: bs, Scale: 2}, bs3)
	LEAQ(Mem{Base: pa, Index: as, Scale: 4}, pa4)
	LEAQ(Mem{Base: pb, Index: bs, Scale: 4}, pb4)
	at := func(base, base4, stride, stride3 GPPhysical, q, disp int) Mem {
		b := base
		if q >= 4 {
			b, q = base4, q-4
		}
		switch q {
		case 0:
			return Mem{Base: b, Disp: disp}
		case 1:
			return Mem{Base: b, Index: stride, Scale: 1, Disp: disp}
		case 2:
			return Mem{Base: b, Index: stride, Scale: 2, Disp: disp}
		}
		return Mem{Base: b, Index: stride3, Scale: 1, Disp: disp}
	}
	for q := 0; q < s; q++ {
		for j := 0; j < v; j++ {
			VPXORD(acc(q, j), acc(q, j), acc(q, j))
		}
	}
	step := func(u int) {
		for q := 0; q < s; q++ {
			f.bcast(at(pa, pa4, as, as3, q, u*es), tmp(q))
			for j := 0; j < v; j++ {
				f.fma(at(pb, pb4, bs, bs3, q, u*bstep+j*vb), tmp(q), acc(q, j))
			}
		}
	}
	advance := func(steps int) {
		for _, r := range []GPPhysical{pa, pa4} {
			ADDQ(U32(steps*es), r)
		}
		for _, r := range []GPPhysical{pb, pb4} {
			ADDQ(U32(steps*bstep), r)
		}
	}
	f.kLoop(n, step, advance)

	Label("store")
	valpha := f.vec(s*v + s)
	alpha, _ := Param("alpha").Resolve()
	f.bcast(alpha.Addr, valpha)
	pc := RDX
	Load(Param("c"), pc)
	for q := 0; q < s; q++ {
		for j := 0; j < v; j++ {
			f.mul(valpha, acc(q, j), acc(q, j))
			VMOVUPS(acc(q, j), Mem{Base: pc, Disp: (q*v + j) * vb})
		}
	}
	VZEROUPPER()
	RET()
}
