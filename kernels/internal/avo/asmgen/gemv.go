package main

import (
	"fmt"

	"github.com/gopir/gopir/kernels/internal/avo/emit"
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// rowKernelMax is the most panels a row kernel computes at once.
const rowKernelMax = 4

// rowKernel emits <name>_row<p·nr>(k int, a, b, c *T, pstride int, alpha,
// beta T): one row of C over p whole packed B panels at once, pstride
// bytes apart, with A's row read straight from memory (k consecutive
// elements, no packed panel). Each column gets the arithmetic of the 1×nr
// edge kernel — a chain of fused multiply-adds from zero in k order, then
// alpha·acc (+ beta·C) — so the bits are the same; but the p panels' 2p
// chains run side by side, where one edge kernel call per panel leaves the
// FMA pipes waiting on each chain's latency (a matrix–vector product).
func (f family) rowKernel(p int) {
	name := fmt.Sprintf("%s_row%d", f.name, p*f.nv*f.lanes())
	emit.Func(name, fmt.Sprintf("func(k int, a, b, c *%s, pstride int, alpha, beta %s)", f.typ(), f.typ()),
		fmt.Sprintf("%s computes one row of C = alpha*A·B + beta*C over %d packed B panels (see rowKernel in the generator).",
			name, p))
	es, vb := f.es(), f.vb()
	bstep := f.nv * vb // bytes per k step in a packed B panel
	t := tile{f, 1, p * f.nv}
	acc := func(q, j int) VecPhysical { return t.acc(0, q*f.nv+j) }
	tv := t.b(0) // free until the store: B is read by the multiply-adds
	n, pa, pc := RCX, RSI, RDX
	panels := []GPPhysical{RDI, R9, R10, R11}[:p]
	emit.Params("k a", n, pa)
	Load(Param("b"), panels[0])
	emit.Params("c pstride", pc, RAX)
	for q := 1; q < p; q++ {
		LEAQ(Mem{Base: panels[q-1], Index: RAX, Scale: 1}, panels[q])
	}
	for q := 0; q < p; q++ {
		for j := 0; j < f.nv; j++ {
			VPXORD(acc(q, j), acc(q, j), acc(q, j))
		}
	}
	step := func(u int) {
		f.bcast(Mem{Base: pa, Disp: u * es}, tv)
		for q := 0; q < p; q++ {
			for j := 0; j < f.nv; j++ {
				f.fma(Mem{Base: panels[q], Disp: u*bstep + j*vb}, tv, acc(q, j))
			}
		}
	}
	f.kLoop(n, step, func(steps int) {
		ADDQ(U32(steps*es), pa)
		for _, r := range panels {
			ADDQ(U32(steps*bstep), r)
		}
	})
	// One row of C is a 1×(p·nv) tile whose accumulators are acc(q, j) in
	// order; with one row, storeTile never steps by ldc.
	f.storeTile(t, pc, R8)
}
