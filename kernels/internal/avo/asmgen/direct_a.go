package main

import (
	"fmt"

	"github.com/gopir/gopir/kernels/internal/avo/emit"
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// directAName is the name of the variant of h rows and v vectors that
// reads A in place.
func (f family) directAName(h, v int) string {
	return fmt.Sprintf("%sd_%dx%d", f.name, h, v*f.lanes())
}

// directAKernel emits <name>d_<h>x<16v>(k int, a, b, c *T, lda, ldc int,
// alpha, beta T): kernel(h, v) with A read in place instead of from a
// packed panel — row i's element for k step s at a + i·lda + s
// (elements). A product whose B is packed once (a weight at inference)
// then packs nothing. The multiply-adds and the store are those of
// kernel(h, v) in the same order, so the bits are the same. Rows are
// addressed from three bases (rows 0–4, 5–9, 10–13) plus lda times 1, 2,
// 3 or 4. The variants narrower than the tile read the first v vectors of
// each k step of a full-width panel, as the packed edge kernels do: a
// product of 10 columns (the MLP's last layer) does half the
// multiply-adds of the full width.
func (f family) directAKernel(h, v int) {
	name := f.directAName(h, v)
	emit.Func(name, fmt.Sprintf("func(k int, a, b, c *%s, lda, ldc int, alpha, beta %s)", f.typ(), f.typ()),
		fmt.Sprintf("%s is %s with A's rows read in place, lda elements apart (see directAKernel in the generator).",
			name, f.kernelName(h, v)))

	es, vb := f.es(), f.vb()
	bstep := f.nv * vb
	t := tile{f, h, v}

	n, pa, pb, pc, ldc := RCX, RSI, RDI, RDX, R8
	lda, lda3, pa5, pa10 := R10, R11, R12, R13
	emit.Params("k a b", n, pa, pb)
	f.loadC(pc, ldc)
	Load(Param("lda"), lda)
	SHLQ(U8(map[int]int{4: 2, 8: 3}[es]), lda) // elements → bytes
	LEAQ(Mem{Base: lda, Index: lda, Scale: 2}, lda3)
	LEAQ(Mem{Base: pa, Index: lda, Scale: 4}, pa5)
	ADDQ(lda, pa5)
	LEAQ(Mem{Base: pa5, Index: lda, Scale: 4}, pa10)
	ADDQ(lda, pa10)
	row := func(i, disp int) Mem {
		base := []GPPhysical{pa, pa5, pa10}[i/5]
		switch i % 5 {
		case 0:
			return Mem{Base: base, Disp: disp}
		case 1:
			return Mem{Base: base, Index: lda, Scale: 1, Disp: disp}
		case 2:
			return Mem{Base: base, Index: lda, Scale: 2, Disp: disp}
		case 3:
			return Mem{Base: base, Index: lda3, Scale: 1, Disp: disp}
		}
		return Mem{Base: base, Index: lda, Scale: 4, Disp: disp}
	}

	f.warmAndZero(t, pc, ldc)

	step := func(u int) {
		t.update(func(i int) Mem { return row(i, u*es) },
			func(j int) Mem { return Mem{Base: pb, Disp: u*bstep + j*vb} })
	}

	f.kLoop(n, step, func(u int) {
		ADDQ(U32(u*es), pa)
		if h > 5 {
			ADDQ(U32(u*es), pa5)
		}
		if h > 10 {
			ADDQ(U32(u*es), pa10)
		}
		ADDQ(U32(u*bstep), pb)
	})

	f.storeTile(t, pc, ldc)
}
