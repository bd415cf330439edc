package main

import (
	"github.com/gopir/gopir/kernels/internal/avo/emit"
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// convRowsPool2x2 emits the "pool" branch of convRowsEpiF32_<ob>x<rows>
// (rows even, flag convRowsPool), which ends at the label "next": instead
// of the rows it stores their 2×2 max pool with stride 2, rows r and r+1
// (r even) giving pooled row r/2, 8 outputs per channel o at out +
// (r/2)·ors + o·ostride (the pooled planes' geometry), so that the
// full-resolution rows never leave the registers (the small CNN's layers
// wrote each block of 16 channels to a scratch block and pooled it after).
// Each window a, b (row r, columns 2i, 2i+1), c, d (row r+1) is folded
// as maxPair(maxPair(a, b), maxPair(c, d)): maxPair folded over a window
// in row-major order in any grouping yields the first NaN, else the first
// element equal to the maximum, so these are MaxPool2DValues's bits. Two
// VPERMT2PS gather a|c and b|d (the even and the odd columns of both
// rows), one maxPair gives ab|cd, a second folds cd onto ab. Where no
// lane of the rep's accumulators is NaN (checked once per rep) maxPair is
// VMAXPS with the later operand first; else it runs in full
// (emit.MaxPair, on K1..K3). All 16 lanes are pooled: the caller pools
// whole 16-column chunks only, so K1 (the lane mask) is free here.
func convRowsPool2x2(ob, rows int, out, os, ors, rs GPPhysical, acc func(r, o int) VecPhysical) {
	even, odd := emit.EvenOddLanes("perf")
	Label("pool")
	KXORW(K1, K1, K1)
	for r := 0; r < rows; r += 2 {
		for o := 0; o < ob; o++ {
			VCMPPS(U8(3), acc(r+1, o), acc(r, o), K2) // a lane of either is NaN
			KORW(K2, K1, K1)
		}
	}
	MOVL(U32(0xff), EAX)
	KMOVW(EAX, K5) // the 8 pooled lanes
	VMOVUPS(even, Z28)
	VMOVUPS(odd, Z29)
	KORTESTW(K1, K1)
	JNE(LabelRef("poolnan"))
	convRowsPoolStores(ob, rows, out, os, ors, rs, acc, func(best, v VecPhysical) { VMAXPS(best, v, best) })
	JMP(LabelRef("next"))
	Label("poolnan")
	convRowsPoolStores(ob, rows, out, os, ors, rs, acc, emit.MaxPair)
}

// convRowsPoolStores emits the pooled stores of convRowsPool2x2, each
// maxPair by fold(best, v), best = maxPair(best, v), with the index
// tables of the even and odd columns in Z28 and Z29. It advances out by
// rows/2 pooled rows and R12 (the input offset) by rows input rows.
func convRowsPoolStores(ob, rows int, out, os, ors, rs GPPhysical, acc func(r, o int) VecPhysical, fold func(best, v VecPhysical)) {
	for r := 0; r < rows; r += 2 {
		MOVQ(out, RAX)
		for o := 0; o < ob; o++ {
			top, bottom := acc(r, o), acc(r+1, o)
			VMOVAPS(top, Z30)
			VPERMT2PS(bottom, Z28, Z30) // a|c
			VPERMT2PS(bottom, Z29, top) // b|d
			fold(Z30, top)              // ab|cd
			VSHUFF32X4(U8(0xee), Z30, Z30, Z31)
			fold(Z30, Z31) // ab, then cd
			VMOVUPS(Z30, K5, Mem{Base: RAX})
			if o+1 < ob {
				ADDQ(os, RAX)
			}
		}
		ADDQ(ors, out)
		ADDQ(rs, R12)
		ADDQ(rs, R12)
	}
}
