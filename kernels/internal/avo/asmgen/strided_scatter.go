package main

import (
	"github.com/gopir/gopir/kernels/internal/avo/emit"
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// stridedScatterF32 emits convStridedScatterAVX512(d, src, ldd, lds,
// rows, cols), which writes the block of the strided product's Cᵀ at src
// (rows output positions, lds elements apart, by cols output channels, a
// multiple of 16) into the output planes at d (ldd elements apart):
// d[o*ldd+i] = src[i*lds+o]. It transposes 16 positions × 16 channels in
// registers and stores each channel's 16 positions straight into its
// plane, masked on the last block of positions; scatterT did it through a
// scratch panel and a copy per channel, which on the stem (16 channels,
// depth 27) cost half as much as the products.
func stridedScatterF32() {
	const name = "convStridedScatterAVX512"
	emit.Func(name, "func(d, src *float32, ldd, lds, rows, cols int)",
		name+" sets d[o*ldd+i] = src[i*lds+o] for i < rows, o < cols; cols%16 == 0.")
	d, src, ldd, lds, rem := RDI, RSI, R8, RDX, RBX
	n, sp, dp, lds3, ldd3, row := RCX, R9, R10, R11, RAX, R12
	emit.Params("d src ldd lds rows", d, src, ldd, lds, rem)
	SHLQ(U8(2), ldd)
	SHLQ(U8(2), lds)
	LEAQ(Mem{Base: lds, Index: lds, Scale: 2}, lds3)
	LEAQ(Mem{Base: ldd, Index: ldd, Scale: 2}, ldd3)
	TESTQ(rem, rem)
	JLE(LabelRef("done"))
	z := emit.Z()
	r, t := z[:16], z[16:]

	// One block of 16 positions (fewer on the last) per iteration: the
	// stores keep its positions (K1), and its rows past the last
	// position are not loaded (their lanes are not stored).
	Label("rows")
	MOVQ(U32(16), n)
	CMPQ(rem, n)
	CMOVQLT(rem, n)
	MOVL(U32(1), row.As32())
	SHLL(CL, row.As32())
	DECL(row.As32())
	KMOVW(row.As32(), K1)
	MOVQ(src, sp)
	MOVQ(d, dp)
	Load(Param("cols"), n)
	SHRQ(U8(4), n)
	JE(LabelRef("done"))

	Label("cols")
	for i := 0; i < 16; i++ {
		stepRow(i, sp, lds, row)
		if i > 0 {
			CMPQ(rem, U32(i))
			JLE(LabelRef("loaded"))
		}
		VMOVUPS(strideRow(row, lds, lds3, i%4), r[i])
	}
	Label("loaded")
	emit.Transpose16(r, t)
	// r[o] is channel o's 16 positions.
	for o := 0; o < 16; o++ {
		stepRow(o, dp, ldd, row)
		VMOVUPS(r[o], K1, strideRow(row, ldd, ldd3, o%4))
	}
	ADDQ(U8(64), sp)
	LEAQ(Mem{Base: row, Index: ldd, Scale: 4}, dp)
	DECQ(n)
	JNE(LabelRef("cols"))

	LEAQ(Mem{Base: src, Index: lds, Scale: 8}, src)
	LEAQ(Mem{Base: src, Index: lds, Scale: 8}, src)
	ADDQ(U8(64), d)
	SUBQ(U8(16), rem)
	JG(LabelRef("rows"))
	Label("done")
	VZEROUPPER()
	RET()
}

// stepRow points row at row i of a 16-row block from first (rows ld bytes
// apart) every fourth row, strideRow addressing the three after it.
func stepRow(i int, first, ld, row GPPhysical) {
	switch {
	case i == 0:
		MOVQ(first, row)
	case i%4 == 0:
		LEAQ(Mem{Base: row, Index: ld, Scale: 4}, row)
	}
}

// strideRow is the address of row i%4 from base, rows ld bytes apart
// (ld3 = 3·ld).
func strideRow(base, ld, ld3 GPPhysical, i int) Mem {
	m := Mem{Base: base}
	switch i {
	case 1:
		m = m.Idx(ld, 1)
	case 2:
		m = m.Idx(ld, 2)
	case 3:
		m = m.Idx(ld3, 1)
	}
	return m
}
