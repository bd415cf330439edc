// Command nchwcgen generates kernels/conv_nchwc_amd64.s and its Go
// declarations: the micro-kernels of the blocked (NCHWc) convolution
// (conv_nchwc_amd64.go), with AVX-512 for blocks of 16 channels (one zmm)
// and with AVX2+FMA for blocks of 8 (one ymm). Each keeps F blocks of
// output channels × P output pixels of one row in registers and, for every input
// channel, loads the F vectors of weights, broadcasts the P pixels' input
// values and adds their F·P products; the sums run over input channel
// blocks, then kernel rows, then columns, then the block's channels, as
// convNCHWcRef sums. With -table it also writes the Go file that lists the
// kernels by tile (conv_nchwc_table_amd64.go).
//
// It lives in kernels/internal/avo, the one module of the avo generators,
// so that package kernels never depends on avo.
// Run it through `go generate ./kernels/` from the main module.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"log"
	"os"

	"github.com/gopir/gopir/kernels/internal/avo/emit"
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// maxF is the most blocks of b output channels a kernel keeps, and so
// the most a group of output blocks holds (conv_nchwc_geometry_amd64.go):
// four of 16; three of 8, whose widest tile, 3×4, keeps the two FMA
// ports busier per load than 4×2 (about 10% on resnet18ish's and the
// detector's layers under GOPIR_CPU=avx2; two blocks were slower).
func maxF(b int) int {
	if b == 8 {
		return 3
	}
	return 4
}

// blocks are the channel blocks generated: 16 (AVX-512), 8 (AVX2).
var blocks = []int{16, 8}

// maxP is the most output pixels a kernel with f blocks of b channels
// keeps: f·P accumulators, f weight vectors and the broadcast registers
// fit the vector registers (32 zmm with two broadcasts, 16 ymm with one),
// and P ≤ 8 is what base + index·scale addresses reach from the four
// pixel-step registers.
func maxP(b, f int) int {
	if b == 8 {
		return min(8, (16-f-1)/f)
	}
	return min(8, (32-f-2)/f)
}

// args names the elements of the kernels' argument block, in order, 8
// bytes each; writeTable gives package kernels their indices.
var args = []struct{ name, doc string }{
	{"Blocks", "input channel blocks (channels of an NCHW input)"},
	{"Rows", "kernel rows"},
	{"Cols", "kernel columns"},
	{"PixStep", "bytes from one output pixel's input to the next's"},
	{"ColStep", "bytes from one kernel column's input to the next's"},
	{"RowAdj", "bytes from past the last column's input to the next row's"},
	{"BlockAdj", "bytes from past the last row's input to the next block's"},
	{"WRowAdj", "bytes from past the last column's weights to the next row's"},
	{"WBlockAdj", "bytes from past the last row's weights to the next block's"},
	{"WFilter", "bytes from one output block's weights to the next's"},
	{"OutFilter", "bytes from one output block's outputs to the next's"},
	{"OutPixStep", "bytes from one output pixel to the next"},
	{"Resume", "non-zero: the sums start at the outputs, those of earlier input blocks"},
	{"InRowStep", "bytes from the first row's input to the second's, for a tile of two rows"},
	{"OutRowStep", "bytes from the first row's outputs to the second's, for a tile of two rows"},
}

// arg is the offset of the argument block's element named name.
func arg(name string) int {
	for i, a := range args {
		if a.name == name {
			return 8 * i
		}
	}
	panic("nchwcgen: no argument " + name)
}

func main() {
	table := flag.String("table", "", "Go file listing the kernels by tile")
	flag.Parse()
	ConstraintExpr("!purego")
	eachTile(kernel)
	if *table != "" {
		if err := writeTable(*table); err != nil {
			log.Fatal(err)
		}
	}
	Generate()
}

// eachTile calls fn with every tile generated: output blocks of b
// channels, input blocks of lanes channels (b, or 1 for an NCHW input),
// f output blocks, p pixels on rows rows (1, or 2 of p/2 pixels each).
func eachTile(fn func(b, lanes, f, p, rows int)) {
	for _, b := range blocks {
		for _, lanes := range []int{1, b} {
			for rows := 1; rows <= 2; rows++ {
				for f := 1; f <= maxF(b); f++ {
					for p := rows; p <= maxP(b, f)/rows*rows; p += rows {
						fn(b, lanes, f, p, rows)
					}
				}
			}
		}
	}
}

// name is the kernel's: the AVX-512 ones' as before blocks of 8 came,
// the AVX2 ones' with an 8 after the layout.
func name(b, lanes, f, p, rows int) string {
	n := fmt.Sprintf("F32_%dx%d", f, p)
	if rows == 2 {
		n = fmt.Sprintf("F32_%dx%dx2", f, p/2)
	}
	if b == 8 {
		n = "8" + n
	}
	if lanes == 1 {
		return "convNCHWcPlain" + n
	}
	return "convNCHWc" + n
}

// sig is the kernels' signature: bias is F·b values the sums start from,
// or nil for a start at zero; a holds the loops' counts and steps.
var sig = fmt.Sprintf("func(in, w, out, bias *float32, a *[%d]int)", len(args))

// kernel emits the tile of f output blocks of b channels × p pixels for
// an input whose channel blocks hold lanes channels: b for a blocked
// input (a pixel's channels side by side), 1 for a plain NCHW one (each
// channel its own block). With rows 2 the pixels are p/2 of one row and the same p/2 of
// the next (InRowStep and OutRowStep on): on short rows, twice the pixels
// for each weight vector loaded.
func kernel(b, lanes, f, p, rows int) {
	layout := "a blocked input"
	if lanes == 1 {
		layout = "an NCHW input"
	}
	shape := fmt.Sprintf("%d pixels", p)
	if rows == 2 {
		shape = fmt.Sprintf("%d pixels on each of two rows", p/2)
	}
	isa := "AVX-512"
	if b == 8 {
		isa = "AVX2"
	}
	emit.Func(name(b, lanes, f, p, rows), sig,
		fmt.Sprintf("%s is the blocked convolution's %s tile of %d output blocks of %d × %s on %s.", name(b, lanes, f, p, rows), isa, f, b, shape, layout))
	q := p / rows // pixels a row
	in, w, out, a := RSI, RDI, R14, RDX
	ps, ps3, ps5, ps7 := R8, R9, R10, R11
	wf, wf3 := R12, R13
	cols, krows, blocks := RCX, RBX, RAX
	in2 := R15 // the second row's input, once the bias is read
	emit.Params("in w out bias a", in, w, out, R15, a)
	at := func(name string) Mem { return Mem{Base: a, Disp: arg(name)} }

	vec := 4 * b // bytes of one vector: a block of channels
	z, bcs := emit.Z(), 2
	if b == 8 {
		z, bcs = emit.Y(), 1
	}
	acc := func(fi, pi int) VecPhysical { return z[fi*p+pi] }
	wv := func(fi int) VecPhysical { return z[f*p+fi] }
	bc := func(pi int) VecPhysical { return z[f*p+f+pi%bcs] }

	// steps sets ps, ps3, ps5 and ps7 to 1, 3, 5 and 7 times the step
	// named name; at is then the address of pixel pi from base, disp bytes
	// on.
	steps := func(name string) {
		MOVQ(at(name), ps)
		LEAQ(Mem{Base: ps, Index: ps, Scale: 2}, ps3)
		LEAQ(Mem{Base: ps, Index: ps, Scale: 4}, ps5)
		LEAQ(Mem{Base: ps5, Index: ps, Scale: 2}, ps7)
	}
	pixAt := func(base Register, pi, disp int) Mem {
		switch pi {
		case 0:
			return Mem{Base: base, Disp: disp}
		case 1, 2, 4, 8:
			return Mem{Base: base, Index: ps, Scale: uint8(pi), Disp: disp}
		case 3, 6:
			return Mem{Base: base, Index: ps3, Scale: uint8(pi / 3), Disp: disp}
		case 5:
			return Mem{Base: base, Index: ps5, Scale: 1, Disp: disp}
		default: // 7
			return Mem{Base: base, Index: ps7, Scale: 1, Disp: disp}
		}
	}
	// eachOut applies op to every accumulator and the address of its
	// output, block by block from out (R13 the block's start, R15 its
	// second row's, R12 the blocks' stride, RBX the rows').
	eachOut := func(op func(acc VecPhysical, m Mem)) {
		steps("OutPixStep")
		MOVQ(at("OutFilter"), R12)
		MOVQ(at("OutRowStep"), RBX)
		MOVQ(out, R13)
		for fi := 0; fi < f; fi++ {
			if rows == 2 {
				LEAQ(Mem{Base: R13, Index: RBX, Scale: 1}, R15)
			}
			for pi := 0; pi < p; pi++ {
				base := R13
				if pi >= q {
					base = R15
				}
				op(acc(fi, pi), pixAt(base, pi%q, 0))
			}
			if fi+1 < f {
				ADDQ(R12, R13)
			}
		}
	}

	// Accumulators start at the outputs (Resume), the bias, or zero.
	CMPQ(at("Resume"), U8(0))
	JE(LabelRef("fresh"))
	eachOut(func(z VecPhysical, m Mem) { VMOVUPS(m, z) })
	JMP(LabelRef("start"))
	Label("fresh")
	TESTQ(R15, R15)
	JE(LabelRef("zero"))
	for fi := 0; fi < f; fi++ {
		VMOVUPS(Mem{Base: R15, Disp: vec * fi}, acc(fi, 0))
		for pi := 1; pi < p; pi++ {
			VMOVAPS(acc(fi, 0), acc(fi, pi))
		}
	}
	JMP(LabelRef("start"))
	Label("zero")
	for fi := 0; fi < f; fi++ {
		for pi := 0; pi < p; pi++ {
			if b == 8 {
				VXORPS(acc(fi, pi), acc(fi, pi), acc(fi, pi))
			} else {
				VPXORD(acc(fi, pi), acc(fi, pi), acc(fi, pi))
			}
		}
	}
	Label("start")

	steps("PixStep")
	if rows == 2 {
		MOVQ(in, in2)
		ADDQ(at("InRowStep"), in2)
	}
	MOVQ(at("WFilter"), wf)
	LEAQ(Mem{Base: wf, Index: wf, Scale: 2}, wf3)

	// pix is the address of pixel pi's input, disp bytes on.
	pix := func(pi, disp int) Mem {
		if pi >= q {
			return pixAt(in2, pi-q, disp)
		}
		return pixAt(in, pi, disp)
	}
	// next adds the step named name to the input pointers.
	next := func(name string) {
		ADDQ(at(name), in)
		if rows == 2 {
			ADDQ(at(name), in2)
		}
	}
	// wts is the address of output block fi's weights, disp bytes on.
	wts := func(fi, disp int) Mem {
		switch fi {
		case 0:
			return Mem{Base: w, Disp: disp}
		case 1, 2:
			return Mem{Base: w, Index: wf, Scale: uint8(fi), Disp: disp}
		default: // 3
			return Mem{Base: w, Index: wf3, Scale: 1, Disp: disp}
		}
	}

	MOVQ(at("Blocks"), blocks)
	Label("block")
	MOVQ(at("Rows"), krows)
	Label("row")
	MOVQ(at("Cols"), cols)
	Label("col")
	for l := 0; l < lanes; l++ {
		if f == 1 && b == 16 {
			VMOVUPS(wts(0, vec*l), wv(0))
			for pi := 0; pi < p; pi++ {
				VFMADD231PS_BCST(pix(pi, 4*l), wv(0), acc(0, pi))
			}
			continue
		}
		for fi := 0; fi < f; fi++ {
			VMOVUPS(wts(fi, vec*l), wv(fi))
		}
		for pi := 0; pi < p; pi++ {
			VBROADCASTSS(pix(pi, 4*l), bc(pi))
			for fi := 0; fi < f; fi++ {
				VFMADD231PS(wv(fi), bc(pi), acc(fi, pi))
			}
		}
	}
	next("ColStep")
	ADDQ(U32(vec*lanes), w)
	DECQ(cols)
	JNE(LabelRef("col"))
	next("RowAdj")
	ADDQ(at("WRowAdj"), w)
	DECQ(krows)
	JNE(LabelRef("row"))
	next("BlockAdj")
	ADDQ(at("WBlockAdj"), w)
	DECQ(blocks)
	JNE(LabelRef("block"))

	eachOut(func(z VecPhysical, m Mem) { VMOVUPS(z, m) })
	VZEROUPPER()
	RET()
}

// writeTable writes the Go file that calls the kernels by tile, so that
// package kernels picks them from the tiles generated here.
func writeTable(path string) error {
	var b bytes.Buffer
	b.WriteString("// Code generated by nchwcgen (see internal/avo/nchwcgen). DO NOT EDIT.\n\n")
	b.WriteString("//go:build !purego\n\npackage kernels\n")
	b.WriteString("\n// The indices of the kernels' argument block.\nconst (\n")
	for i, a := range args {
		fmt.Fprintf(&b, "nchwcArg%s = %d // %s\n", a.name, i, a.doc)
	}
	fmt.Fprintf(&b, "nchwcArgs = %d\n)\n", len(args))
	fmt.Fprintf(&b, "\n// convNCHWcMaxF[b/8-1] is the most blocks of b output channels a tile\n// keeps.\nvar convNCHWcMaxF = [2]int{%d, %d}\n", maxF(8), maxF(16))
	fmt.Fprintf(&b, "\n// convNCHWcMaxP[b/8-1][f-1] is the widest tile of f output blocks of b\n// channels, in pixels.\nvar convNCHWcMaxP = [2][%d]int{", maxF(16))
	for _, bl := range []int{8, 16} {
		b.WriteString("{")
		for f := 1; f <= maxF(bl); f++ {
			fmt.Fprintf(&b, "%d, ", maxP(bl, f))
		}
		b.WriteString("},")
	}
	b.WriteString("}\n")
	// A switch of direct calls rather than a table of func values: the
	// compiler sees the kernels' noescape, so the argument block stays on
	// the caller's stack.
	b.WriteString("\n// convNCHWcTile runs the tile of f output blocks of bl channels × p\n// pixels on rows rows (1, or 2 of p/2 pixels each), on a blocked input\n// or (plain) an NCHW one.\n")
	fmt.Fprintf(&b, "func convNCHWcTile(bl int, plain bool, f, p, rows int, in, w, out, bias *float32, a *[%d]int) {\n", len(args))
	// Constant cases on rows<<8 | f<<4 | p, a jump table rather than a
	// chain of comparisons.
	sw := func(bl, plain int) {
		b.WriteString("switch rows<<8 | f<<4 | p {\n")
		eachTile(func(bt, lanes, f, p, rows int) {
			if bt == bl && lanes == plain {
				fmt.Fprintf(&b, "case %d:\n%s(in, w, out, bias, a)\n", rows<<8|f<<4|p, name(bt, lanes, f, p, rows))
			}
		})
		b.WriteString("default:\npanic(\"kernels: no blocked convolution tile of that size\")\n}\n")
	}
	b.WriteString("switch {\ncase bl == 8 && plain:\n")
	sw(8, 1)
	b.WriteString("case bl == 8:\n")
	sw(8, 8)
	b.WriteString("case plain:\n")
	sw(16, 1)
	b.WriteString("default:\n")
	sw(16, 16)
	b.WriteString("}\n}\n")
	src, err := format.Source(b.Bytes())
	if err != nil {
		return err
	}
	return os.WriteFile(path, src, 0o644)
}
