package main

import (
	"fmt"

	"github.com/gopir/gopir/kernels/internal/avo/emit"
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// packTransposeF32 emits packTransposeAVX512_<rows>(d, src, ld, kb, h),
// which packs an h×kb block (h ≤ rows) of a row-major float32 matrix with
// stride ld into d[p*rows+r] = src[r*ld+p], zero for r ≥ h, kb a multiple
// of 16. Packing a row-major A (or
// a transposed B) is a transpose; doing it on 16×16 blocks in registers is
// about ten times faster than element by element.
func packTransposeF32(rows int) {
	name := fmt.Sprintf("packTransposeAVX512_%d", rows)
	emit.Func(name, "func(d, src *float32, ld, kb, h int)",
		fmt.Sprintf("%s sets d[p*%d+r] = src[r*ld+p] for r < h ≤ %d, p < kb, and zero for r ≥ h; kb%%16 == 0.", name, rows, rows))
	d, src, ld, ld3, n, hr := RDI, RSI, RDX, R8, RCX, RBX
	emit.Params("d src ld kb h", d, src, ld, n, hr)
	SHLQ(U8(2), ld)
	LEAQ(Mem{Base: ld, Index: ld, Scale: 2}, ld3)
	SHRQ(U8(4), n)
	JE(LabelRef("done"))
	if rows%16 != 0 {
		// Stores of the last, partial row block keep only its rows.
		MOVL(U32(1<<(rows%16)-1), EAX)
		KMOVW(EAX, K1)
	}
	z := emit.Z()
	r, t := z[:16], z[16:]
	bases := []GPPhysical{R9, R10, R11, R12}

	Label("loop")
	for rb := 0; rb*16 < rows; rb++ {
		h := min(16, rows-rb*16)
		// Row i of this block is at bases[i/4] + (i%4)*ld.
		for g := 0; g*4 < h; g++ {
			switch {
			case g == 0 && rb == 0:
				MOVQ(src, bases[0])
			case g == 0:
				LEAQ(Mem{Base: bases[3], Index: ld, Scale: 4}, bases[0])
			default:
				LEAQ(Mem{Base: bases[g-1], Index: ld, Scale: 4}, bases[g])
			}
		}
		for i := 0; i < 16; i++ {
			if i >= h {
				VPXORD(r[i], r[i], r[i])
				continue
			}
			// Rows at or past h are zero (an edge panel).
			zero, next := fmt.Sprintf("zero%d_%d", rb, i), fmt.Sprintf("row%d_%d", rb, i)
			CMPQ(hr, U32(rb*16+i))
			JLE(LabelRef(zero))
			VMOVUPS(strideRow(bases[i/4], ld, ld3, i%4), r[i])
			JMP(LabelRef(next))
			Label(zero)
			VPXORD(r[i], r[i], r[i])
			Label(next)
		}
		emit.Transpose16(r, t)
		// r[j] is column j of the block: rows rb*16.. of packed step p+j.
		for j := 0; j < 16; j++ {
			m := Mem{Base: d, Disp: (j*rows + rb*16) * 4}
			if h < 16 {
				VMOVUPS(r[j], K1, m)
			} else {
				VMOVUPS(r[j], m)
			}
		}
	}
	ADDQ(U8(64), src)
	ADDQ(U32(16*rows*4), d)
	DECQ(n)
	JNE(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

// packCopyF32 emits packCopyAVX512_<rows>(d, src, ld, kb, h), which sets
// d[p*rows+r] = src[p*ld+r] for r < h ≤ rows, p < kb, and zero for r ≥ h:
// packing a row-major B (or a transposed A) copies one short run per k
// step, which a call to memmove per run would dominate.
func packCopyF32(rows int) {
	name := fmt.Sprintf("packCopyAVX512_%d", rows)
	emit.Func(name, "func(d, src *float32, ld, kb, h int)",
		fmt.Sprintf("%s sets d[p*%d+r] = src[p*ld+r] for r < h ≤ %d, p < kb, and zero for r ≥ h.", name, rows, rows))
	d, src, ld, n := RDI, RSI, RDX, R10
	emit.Params("d src ld kb h", d, src, ld, n, RCX)
	SHLQ(U8(2), ld)
	TESTQ(n, n)
	JE(LabelRef("done"))
	// Lane masks of the h valid columns: vector v holds columns 16v...
	vecs := (rows + 15) / 16
	masks := []OpmaskPhysical{K1, K2}
	MOVQ(U32(1), RAX)
	SHLQ(CL, RAX)
	DECQ(RAX) // bit r set for r < h (h ≤ 32)
	if rows%16 != 0 {
		MOVL(U32(1<<(rows%16)-1), R11L)
		KMOVW(R11L, K3)
	}
	for v := 0; v < vecs; v++ {
		KMOVW(EAX, masks[v])
		if v+1 < vecs {
			SHRQ(U8(16), RAX)
		}
	}
	Label("loop")
	for v := 0; v < vecs; v++ {
		r := []VecPhysical{Z0, Z1}[v]
		VMOVUPS_Z(Mem{Base: src, Disp: v * 64}, masks[v], r)
		if rows-v*16 < 16 {
			// The packed row is shorter than a vector: store its lanes only.
			VMOVUPS(r, K3, Mem{Base: d, Disp: v * 64})
		} else {
			VMOVUPS(r, Mem{Base: d, Disp: v * 64})
		}
	}
	ADDQ(ld, src)
	ADDQ(U32(rows*4), d)
	DECQ(n)
	JNE(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}
