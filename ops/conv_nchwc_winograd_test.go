package ops_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// TestConvNCHWcWinograd holds conv2d_nchwc with winograd:true to the op
// without it (within 1e-5 of the largest output: float32 rounding of
// other sums) and its
// packed run to its block-by-block run bit for bit, repeated, with every
// allocator byte back afterwards; a copy packed without Winograd (the
// wrong form) is not misread: the op runs block by block.
func TestConvNCHWcWinograd(t *testing.T) {
	cases := []struct {
		x         []int
		o, pad    int
		bias, res bool
		act       string
	}{
		{x: []int{1, 32, 12, 12}, o: 48, pad: 1, bias: true, act: "silu"},
		{x: []int{2, 16, 7, 9}, o: 32, pad: 1, bias: true, res: true, act: "relu"},
		{x: []int{3, 48, 10, 9}, o: 16, pad: 0, act: "none"},
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, b := range nchwcBlocks {
		for ci, c := range cases {
			name := fmt.Sprintf("block %d case %d", b, ci)
			a := memory.New(memory.Options{})
			attrs := ir.A("strides", []int{1, 1}, "paddings", []int{c.pad, c.pad}, "bias", c.bias, "residual", c.res, "activation", c.act)
			wattrs := attrs.With("winograd", ir.Bool(true))
			x := randTensor(t, a, r, tensor.F32, c.x...)
			w := randTensor(t, a, r, tensor.F32, c.o, c.x[1], 3, 3)
			in := []*tensor.Tensor{blocked(t, a, x, b), w}
			if c.bias {
				in = append(in, randTensor(t, a, r, tensor.F32, c.o))
			}
			if c.res {
				oh, ow := c.x[2]+2*c.pad-2, c.x[3]+2*c.pad-2
				rt := randTensor(t, a, r, tensor.F32, c.x[0], c.o, oh, ow)
				in = append(in, blocked(t, a, rt, b))
				rt.Release()
			}
			direct := mustRun(t, a, "conv2d_nchwc", attrs, in...)[0]
			byBlock := mustRun(t, a, "conv2d_nchwc", wattrs, in...)[0]
			for rep := range 3 {
				got := runConvNCHWcWinogradPacked(t, a, wattrs, b, true, in...)
				sameF32(t, fmt.Sprintf("%s run %d: packed vs block by block", name, rep), got, byBlock)
				got.Release()
			}
			wrong := runConvNCHWcWinogradPacked(t, a, wattrs, b, false, in...)
			sameF32(t, name+": a copy packed without Winograd", wrong, byBlock)
			// Within 1e-5 of the output's largest value, as the optimize
			// tests hold whole models: the transforms' rounding scales with
			// the products' magnitudes, not with each (cancelled) sum.
			want := toF64(direct)
			scale := 1.0
			for _, v := range want {
				scale = max(scale, math.Abs(v))
			}
			closeEnough(t, name+": winograd vs direct", byBlock, want, direct.Shape(), 1e-5*scale)
			checkOOMSweep(t, "conv2d_nchwc", wattrs, in...)
			release(append(in, x, direct, byBlock, wrong)...)
			wantAllocated(t, a, 0)
		}
	}
}

// runConvNCHWcWinogradPacked runs conv2d_nchwc on in with its weights
// packed whole beforehand, in Winograd's form or (wino false) the direct
// kernel's.
func runConvNCHWcWinogradPacked(t *testing.T, a *memory.Allocator, attrs ir.Attrs, b int, wino bool, in ...*tensor.Tensor) *tensor.Tensor {
	t.Helper()
	types := make([]ir.Type, len(in))
	for i, x := range in {
		types[i] = ir.TensorOf(ir.DType(x.DType()), x.Shape()...)
	}
	op, err := buildOp(t, "conv2d_nchwc", attrs, types...)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ops.Bind(op)
	if err != nil {
		t.Fatal(err)
	}
	ws := in[1].Shape()
	p := kernels.Conv2DParams{C: ws[1], O: ws[0], KH: 3, KW: 3, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1, Winograd: wino}
	packed, err := tensor.New(a, tensor.F32, kernels.PackConvNCHWcLen(p))
	if err != nil {
		t.Fatal(err)
	}
	defer packed.Release()
	kernels.PackConvNCHWc(p, b, true, in[1].F32(), packed.F32())
	c := &ops.Ctx{Alloc: a, Threads: 2, Seed: 1}
	c.SetPacked(packed.Raw())
	outs, err := k(c, in)
	if err != nil {
		t.Fatal(err)
	}
	return outs[0]
}

// TestConvNCHWcWinogradHook covers Def.Winograd (yes on a blocked 3×3
// stride-1 convolution of a map of 4×4 outputs or more where this machine
// has the vector transforms, no elsewhere), the attribute's checks, and
// the packed form: its own Form and size.
func TestConvNCHWcWinogradHook(t *testing.T) {
	d, ok := ops.Lookup("conv2d_nchwc")
	if !ok || d.Winograd == nil {
		t.Fatal("conv2d_nchwc has no Winograd hook")
	}
	b := kernels.NCHWcBlock()
	if b == 0 {
		b = 16
	}
	base := ir.A("strides", []int{1, 1}, "paddings", []int{1, 1})
	for _, tc := range []struct {
		name  string
		x, w  ir.Type
		attrs ir.Attrs
		want  bool
	}{
		{"20x20", ir.TensorOf(ir.F32, 1, 96/b, 20, 20, b), ir.TensorOf(ir.F32, 96, 96, 3, 3), base, kernels.NCHWcBlock() != 0},
		{"2x2 map", ir.TensorOf(ir.F32, 1, 512/b, 2, 2, b), ir.TensorOf(ir.F32, 512, 512, 3, 3), base, false},
		{"stride 2", ir.TensorOf(ir.F32, 1, 96/b, 20, 20, b), ir.TensorOf(ir.F32, 96, 96, 3, 3), ir.A("strides", []int{2, 2}, "paddings", []int{1, 1}), false},
		{"1x1", ir.TensorOf(ir.F32, 1, 96/b, 20, 20, b), ir.TensorOf(ir.F32, 96, 96, 1, 1), ir.A("strides", []int{1, 1}, "paddings", []int{0, 0}), false},
		{"nchw x", ir.TensorOf(ir.F32, 1, 3, 20, 20), ir.TensorOf(ir.F32, 96, 3, 3, 3), base.With("block", ir.Int(b)), false},
		{"dynamic map", ir.TensorOf(ir.F32, 1, 96/b, ir.Dynamic, 20, b), ir.TensorOf(ir.F32, 96, 96, 3, 3), base, false},
	} {
		op, err := buildOp(t, "conv2d_nchwc", tc.attrs, tc.x, tc.w)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := d.Winograd(op); got != tc.want {
			t.Errorf("%s: Def.Winograd = %v, want %v", tc.name, got, tc.want)
		}
		if tc.want {
			if _, err := buildOp(t, "conv2d_nchwc", tc.attrs.With("winograd", ir.Bool(true)), tc.x, tc.w); err != nil {
				t.Errorf("%s: winograd:true refused: %v", tc.name, err)
			}
		} else if tc.name != "2x2 map" && tc.name != "dynamic map" && tc.name != "20x20" {
			if _, err := buildOp(t, "conv2d_nchwc", tc.attrs.With("winograd", ir.Bool(true)), tc.x, tc.w); err == nil {
				t.Errorf("%s: winograd:true accepted", tc.name)
			}
		}
	}

	x, w := ir.TensorOf(ir.F32, ir.Dynamic, 32/b, 16, 16, b), ir.TensorOf(ir.F32, 32, 32, 3, 3)
	shapes := [][]int{{1, 32 / b, 16, 16, b}, w.Dims}
	few := [][]int{{1, 32 / b, 8, 8, b}, w.Dims} // 16 tiles: below kernels.ConvNCHWcWinogradRuns
	forms := map[uint64]bool{}
	fewForms := map[uint64]bool{}
	for _, wino := range []bool{false, true} {
		op, err := buildOp(t, "conv2d_nchwc", base.With("winograd", ir.Bool(wino)), x, w)
		if err != nil {
			t.Fatal(err)
		}
		c, err := d.Compute(op)
		if err != nil {
			t.Fatal(err)
		}
		forms[c.Pack.Form(shapes)] = true
		fewForms[c.Pack.Form(few)] = true
		p := kernels.Conv2DParams{C: 32, O: 32, KH: 3, KW: 3, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1, Winograd: wino}
		if got, want := c.Pack.Bytes(shapes), int64(kernels.PackConvNCHWcLen(p))*4; got != want {
			t.Errorf("winograd %v: packed bytes %d, want %d", wino, got, want)
		}
		p.Winograd = false
		if got, want := c.Pack.Bytes(few), int64(kernels.PackConvNCHWcLen(p))*4; got != want {
			t.Errorf("winograd %v on 16 tiles: packed bytes %d, want the direct form's %d", wino, got, want)
		}
	}
	if len(forms) != 2 {
		t.Errorf("the Winograd copy has the direct copy's Form")
	}
	if len(fewForms) != 1 {
		t.Errorf("on 16 tiles the op marked winograd packs another form than the direct one")
	}
}

// TestConvNCHWcWinogradFewTiles: at a batch and map with fewer output
// tiles than kernels.ConvNCHWcWinogradRuns takes (1×8×8: 16 tiles), a
// conv2d_nchwc marked winograd computes directly: the bits of the op
// without the mark, packed or not.
func TestConvNCHWcWinogradFewTiles(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, b := range nchwcBlocks {
		a := memory.New(memory.Options{})
		attrs := ir.A("strides", []int{1, 1}, "paddings", []int{1, 1}, "bias", true, "activation", "relu")
		x := randTensor(t, a, r, tensor.F32, 1, 32, 8, 8)
		w := randTensor(t, a, r, tensor.F32, 32, 32, 3, 3)
		in := []*tensor.Tensor{blocked(t, a, x, b), w, randTensor(t, a, r, tensor.F32, 32)}
		want := mustRun(t, a, "conv2d_nchwc", attrs, in...)[0]
		got := mustRun(t, a, "conv2d_nchwc", attrs.With("winograd", ir.Bool(true)), in...)[0]
		sameF32(t, fmt.Sprintf("block %d: marked vs not", b), got, want)
		packed := runConvNCHWcWinogradPacked(t, a, attrs.With("winograd", ir.Bool(true)), b, false, in...)
		sameF32(t, fmt.Sprintf("block %d: marked, packed in the direct form", b), packed, want)
		for _, v := range append(in, x, want, got, packed) {
			v.Release()
		}
		if n := a.Stats().Allocated.Current; n != 0 {
			t.Errorf("block %d: %d bytes still allocated", b, n)
		}
	}
}
