package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// packTransposeF32 emits packTransposeAVX512_<rows>(d, src, ld, kb), which
// packs a rows×kb block of a row-major float32 matrix with stride ld into
// d[p*rows+r] = src[r*ld+p], kb a multiple of 16. Packing a row-major A (or
// a transposed B) is a transpose; doing it on 16×16 blocks in registers is
// about ten times faster than element by element.
func packTransposeF32(rows int) {
	name := fmt.Sprintf("packTransposeAVX512_%d", rows)
	TEXT(name, NOSPLIT, "func(d, src *float32, ld, kb int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sets d[p*%d+r] = src[r*ld+p] for r < %d, p < kb; kb%%16 == 0.", name, rows, rows))
	d, src, ld, ld3, n := RDI, RSI, RDX, R8, RCX
	Load(Param("d"), d)
	Load(Param("src"), src)
	Load(Param("ld"), ld)
	Load(Param("kb"), n)
	SHLQ(U8(2), ld)
	LEAQ(Mem{Base: ld, Index: ld, Scale: 2}, ld3)
	SHRQ(U8(4), n)
	JE(LabelRef("done"))
	if rows%16 != 0 {
		// Stores of the last, partial row block keep only its rows.
		MOVL(U32(1<<(rows%16)-1), EAX)
		KMOVW(EAX, K1)
	}
	z := []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15,
		Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31}
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
			m := Mem{Base: bases[i/4]}
			switch i % 4 {
			case 1:
				m = m.Idx(ld, 1)
			case 2:
				m = m.Idx(ld, 2)
			case 3:
				m = m.Idx(ld3, 1)
			}
			VMOVUPS(m, r[i])
		}
		// Interleave 32-bit then 64-bit elements within 128-bit lanes: lane L
		// of r[4g+c] then holds rows 4g..4g+3 of column 4L+c.
		for i := 0; i < 16; i += 2 {
			VUNPCKLPS(r[i+1], r[i], t[i])
			VUNPCKHPS(r[i+1], r[i], t[i+1])
		}
		for g := 0; g < 4; g++ {
			a, b, c, e := t[4*g], t[4*g+1], t[4*g+2], t[4*g+3]
			VUNPCKLPD(c, a, r[4*g])
			VUNPCKHPD(c, a, r[4*g+1])
			VUNPCKLPD(e, b, r[4*g+2])
			VUNPCKHPD(e, b, r[4*g+3])
		}
		// Two rounds of 128-bit lane shuffles gather the four row groups.
		for c := 0; c < 4; c++ {
			VSHUFF32X4(U8(0x44), r[4+c], r[c], t[c])
			VSHUFF32X4(U8(0xee), r[4+c], r[c], t[4+c])
			VSHUFF32X4(U8(0x44), r[12+c], r[8+c], t[8+c])
			VSHUFF32X4(U8(0xee), r[12+c], r[8+c], t[12+c])
		}
		for c := 0; c < 4; c++ {
			VSHUFF32X4(U8(0x88), t[8+c], t[c], r[c])
			VSHUFF32X4(U8(0xdd), t[8+c], t[c], r[4+c])
			VSHUFF32X4(U8(0x88), t[12+c], t[4+c], r[8+c])
			VSHUFF32X4(U8(0xdd), t[12+c], t[4+c], r[12+c])
		}
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

// packCopyF32 emits packCopyAVX512_<rows>(d, src, ld, kb), which sets
// d[p*rows+r] = src[p*ld+r] for r < rows, p < kb: packing a row-major B (or
// a transposed A) copies one short run per k step, which a call to memmove
// per run would dominate.
func packCopyF32(rows int) {
	name := fmt.Sprintf("packCopyAVX512_%d", rows)
	TEXT(name, NOSPLIT, "func(d, src *float32, ld, kb int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sets d[p*%d+r] = src[p*ld+r] for r < %d, p < kb.", name, rows, rows))
	d, src, ld, n := RDI, RSI, RDX, RCX
	Load(Param("d"), d)
	Load(Param("src"), src)
	Load(Param("ld"), ld)
	Load(Param("kb"), n)
	SHLQ(U8(2), ld)
	TESTQ(n, n)
	JE(LabelRef("done"))
	if rows%16 != 0 {
		MOVL(U32(1<<(rows%16)-1), EAX)
		KMOVW(EAX, K1)
	}
	Label("loop")
	for v := 0; v*16 < rows; v++ {
		r := []VecPhysical{Z0, Z1, Z2, Z3}[v]
		if rows-v*16 < 16 {
			VMOVUPS_Z(Mem{Base: src, Disp: v * 64}, K1, r)
			VMOVUPS(r, K1, Mem{Base: d, Disp: v * 64})
		} else {
			VMOVUPS(Mem{Base: src, Disp: v * 64}, r)
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
