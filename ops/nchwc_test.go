package ops_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// The blocked layout's ops give what their NCHW ops give: reorder_nchwc
// then reorder_nchw is the identity, max_pool2d_nchwc and
// upsample_nearest_nchwc are max_pool2d_values and resize bit for bit,
// conv2d_nchwc is conv2d_fused within float32 rounding (it sums in
// another order).

// nchwcBlocks are the channel blocks the tests run the layout with.
var nchwcBlocks = []int{8, 16}

// blocked runs reorder_nchwc on x with block b.
func blocked(t *testing.T, a *memory.Allocator, x *tensor.Tensor, b int) *tensor.Tensor {
	t.Helper()
	return mustRun(t, a, "reorder_nchwc", ir.A("block", b), x)[0]
}

// plain runs reorder_nchw on x and releases x.
func plain(t *testing.T, a *memory.Allocator, x *tensor.Tensor) *tensor.Tensor {
	t.Helper()
	defer x.Release()
	return mustRun(t, a, "reorder_nchw", nil, x)[0]
}

func sameF32(t *testing.T, what string, got, want *tensor.Tensor) {
	t.Helper()
	if !equalInts(got.Shape(), want.Shape()) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape(), want.Shape())
	}
	for i, w := range want.F32() {
		if g := got.F32()[i]; g != w {
			t.Fatalf("%s: element %d = %v, want %v", what, i, g, w)
		}
	}
}

func TestReorderNCHWcRoundTrip(t *testing.T) {
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(1, 2))
	for _, shape := range [][]int{{1, 16, 1, 1}, {2, 32, 3, 5}, {3, 48, 7, 2}, {2, 24, 3, 3}} {
		for _, b := range nchwcBlocks {
			if shape[1]%b != 0 {
				continue
			}
			x := randTensor(t, a, r, tensor.F32, shape...)
			y := blocked(t, a, x, b)
			if want := []int{shape[0], shape[1] / b, shape[2], shape[3], b}; !equalInts(y.Shape(), want) {
				t.Fatalf("%v: blocked shape %v, want %v", shape, y.Shape(), want)
			}
			hw := shape[2] * shape[3]
			for i, v := range x.F32() { // y[n, c/b, p, c%b] = x[n, c, p]
				n, c, p := i/(shape[1]*hw), i/hw%shape[1], i%hw
				if got := y.F32()[((n*shape[1]/b+c/b)*hw+p)*b+c%b]; got != v {
					t.Fatalf("%v block %d: x[%d,%d,%d] = %v blocked as %v", shape, b, n, c, p, v, got)
				}
			}
			back := plain(t, a, y)
			sameF32(t, fmt.Sprint(shape, b), back, x)
			release(x, back)
		}
	}
	wantAllocated(t, a, 0)
}

func TestConvNCHWcMatchesConvFused(t *testing.T) {
	cases := []struct {
		x, w      []int
		strides   []int
		pads      []int
		bias, res bool
		act       string
	}{
		{x: []int{1, 3, 9, 7}, w: []int{16, 3, 3, 3}, strides: []int{2, 2}, pads: []int{1, 1}, bias: true, act: "relu"},
		{x: []int{2, 16, 5, 6}, w: []int{32, 16, 3, 3}, strides: []int{1, 1}, pads: []int{1, 1}, bias: true, res: true, act: "silu"},
		{x: []int{1, 32, 4, 4}, w: []int{16, 32, 1, 1}, strides: []int{1, 1}, pads: []int{0, 0}, act: "none"},
		{x: []int{3, 24, 6, 5}, w: []int{16, 24, 3, 1}, strides: []int{2, 1}, pads: []int{0, 1}, bias: true, act: "sigmoid"},
		{x: []int{1, 16, 1, 1}, w: []int{48, 16, 1, 1}, strides: []int{1, 1}, pads: []int{0, 0}, bias: true, act: "clip"},
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, b := range nchwcBlocks {
		for ci, c := range cases {
			testConvNCHWcOp(t, r, fmt.Sprintf("block %d case %d", b, ci), b, c.x, c.w, c.strides, c.pads, c.bias, c.res, c.act)
		}
	}
}

// testConvNCHWcOp is one case of TestConvNCHWcMatchesConvFused.
func testConvNCHWcOp(t *testing.T, r *rand.Rand, name string, b int, xs, wsh, strides, pads []int, bias, res bool, act string) {
	a := memory.New(memory.Options{})
	attrs := ir.A("strides", strides, "paddings", pads, "bias", bias, "residual", res, "activation", act)
	if act == "clip" {
		attrs = attrs.With("min", ir.Float(-0.5)).With("max", ir.Float(0.5))
	}
	x := randTensor(t, a, r, tensor.F32, xs...)
	w := randTensor(t, a, r, tensor.F32, wsh...)
	in := []*tensor.Tensor{x, w}
	if bias {
		in = append(in, randTensor(t, a, r, tensor.F32, wsh[0]))
	}
	var rt *tensor.Tensor
	if res {
		oh := (xs[2]+2*pads[0]-wsh[2])/strides[0] + 1
		ow := (xs[3]+2*pads[1]-wsh[3])/strides[1] + 1
		rt = randTensor(t, a, r, tensor.F32, xs[0], wsh[0], oh, ow)
		in = append(in, rt)
	}
	want := mustRun(t, a, "conv2d_fused", attrs, in...)[0]
	bin := append([]*tensor.Tensor(nil), in...)
	battrs := attrs
	if xs[1]%b == 0 {
		bin[0] = blocked(t, a, x, b)
	} else {
		battrs = attrs.With("block", ir.Int(b)) // an NCHW x: the output's block
	}
	if res {
		bin[len(bin)-1] = blocked(t, a, rt, b)
	}
	byBlock := mustRun(t, a, "conv2d_nchwc", battrs, bin...)[0] // no packed copy: block by block
	for rep := range 3 {
		got := runConvNCHWcPacked(t, a, battrs, b, bin...)
		sameF32(t, fmt.Sprintf("%s run %d: packed vs block by block", name, rep), got, byBlock)
		got.Release()
	}
	got := plain(t, a, byBlock)
	closeEnough(t, name, got, toF64(want), want.Shape(), 1e-5)
	got.Release()
	if bin[0] != x {
		bin[0].Release()
	}
	if res {
		bin[len(bin)-1].Release()
	}
	release(in...)
	want.Release()
	wantAllocated(t, a, 0)
}

// runConvNCHWcPacked runs conv2d_nchwc on in with its weights packed
// whole beforehand, as the executor's pack cache hands them.
func runConvNCHWcPacked(t *testing.T, a *memory.Allocator, attrs ir.Attrs, b int, in ...*tensor.Tensor) *tensor.Tensor {
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
	p := kernels.Conv2DParams{C: ws[1], O: ws[0], KH: ws[2], KW: ws[3]}
	packed, err := tensor.New(a, tensor.F32, kernels.PackConvNCHWcLen(p))
	if err != nil {
		t.Fatal(err)
	}
	defer packed.Release()
	kernels.PackConvNCHWc(p, b, in[0].Rank() == 5, in[1].F32(), packed.F32())
	c := &ops.Ctx{Alloc: a, Threads: 2, Seed: 1}
	c.SetPacked(packed.Raw())
	outs, err := k(c, in)
	if err != nil {
		t.Fatal(err)
	}
	return outs[0]
}

func toF64(x *tensor.Tensor) []float64 {
	out := make([]float64, x.Len())
	for i := range out {
		out[i] = x.Float64At(i)
	}
	return out
}

func TestMaxPoolNCHWcMatchesMaxPoolValues(t *testing.T) {
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(5, 6))
	for _, attrs := range []ir.Attrs{
		ir.A("kernel_size", []int{2, 2}),
		ir.A("kernel_size", []int{5, 5}, "strides", []int{1, 1}, "paddings", []int{2, 2}),
		ir.A("kernel_size", []int{3, 2}, "strides", []int{2, 1}, "paddings", []int{1, 0}),
	} {
		for _, b := range nchwcBlocks {
			x := randTensor(t, a, r, tensor.F32, 2, 32, 7, 6)
			want := mustRun(t, a, "max_pool2d_values", attrs, x)[0]
			bx := blocked(t, a, x, b)
			got := plain(t, a, mustRun(t, a, "max_pool2d_nchwc", attrs, bx)[0])
			sameF32(t, fmt.Sprint(attrs, b), got, want)
			release(x, bx, want, got)
		}
	}
	wantAllocated(t, a, 0)
}

func TestUpsampleNCHWcMatchesResize(t *testing.T) {
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(7, 8))
	for _, f := range [][2]int{{2, 2}, {3, 1}, {1, 1}} {
		x := randTensor(t, a, r, tensor.F32, 2, 16, 3, 5)
		attrs := ir.A("axes", []int{2, 3}, "sizes", []int{3 * f[0], 5 * f[1]}, "scales", []float64{float64(f[0]), float64(f[1])},
			"mode", "nearest", "coordinate_transformation_mode", "asymmetric", "nearest_mode", "floor")
		want := mustRun(t, a, "resize", attrs, x)[0]
		for _, b := range nchwcBlocks {
			bx := blocked(t, a, x, b)
			got := plain(t, a, mustRun(t, a, "upsample_nearest_nchwc", ir.A("factors", f[:]), bx)[0])
			sameF32(t, fmt.Sprint(f, b), got, want)
			release(bx, got)
		}
		release(x, want)
	}
	wantAllocated(t, a, 0)
}

// Their Infer refuses what the layout does not hold; conv2d_nchwc counts
// conv2d_fused's work; none has a gradient.
func TestNCHWcOpsRefuse(t *testing.T) {
	f32 := func(d ...int) ir.Type { return ir.TensorOf(ir.F32, d...) }
	cases := []struct {
		name  string
		attrs ir.Attrs
		in    []ir.Type
		want  string
	}{
		{"reorder_nchwc", ir.A("block", 16), []ir.Type{f32(1, 24, 4, 4)}, "multiple of 16"},
		{"reorder_nchwc", ir.A("block", 8), []ir.Type{f32(1, 20, 4, 4)}, "multiple of 8"},
		{"reorder_nchwc", ir.A("block", 16), []ir.Type{ir.TensorOf(ir.F64, 1, 16, 4, 4)}, "f32"},
		{"reorder_nchwc", ir.A("block", 16), []ir.Type{f32(1, 16, 4)}, "N×C×H×W"},
		{"reorder_nchwc", nil, []ir.Type{f32(1, 16, 4, 4)}, "block"},
		{"reorder_nchwc", ir.A("block", 4), []ir.Type{f32(1, 16, 4, 4)}, "8 or 16"},
		{"reorder_nchw", nil, []ir.Type{f32(1, 1, 4, 4, 4)}, "blocked"},
		{"reorder_nchw", nil, []ir.Type{f32(1, 16, 4, 4)}, "blocked"},
		{"conv2d_nchwc", nil, []ir.Type{f32(1, 1, 4, 4, 16), f32(24, 16, 3, 3)}, "24 output channels"},
		{"conv2d_nchwc", ir.A("groups", 2), []ir.Type{f32(1, 2, 4, 4, 16), f32(32, 16, 3, 3)}, "groups"},
		{"conv2d_nchwc", nil, []ir.Type{f32(1, 1, 4, 4, 16), f32(16, 8, 3, 3)}, "channels"},
		{"conv2d_nchwc", ir.A("pool", "max2x2"), []ir.Type{f32(1, 1, 4, 4, 16), f32(16, 16, 3, 3)}, "pool"},
		{"conv2d_nchwc", ir.A("residual", true), []ir.Type{f32(1, 1, 4, 4, 16), f32(16, 16, 1, 1), f32(1, 16, 4, 4)}, "residual"},
		{"conv2d_nchwc", nil, []ir.Type{f32(4, 4, 16), f32(16, 16, 1, 1)}, "rank"},
		{"conv2d_nchwc", nil, []ir.Type{f32(1, 3, 4, 4), f32(16, 3, 3, 3)}, "block"},
		{"conv2d_nchwc", ir.A("block", 8), []ir.Type{f32(1, 1, 4, 4, 16), f32(16, 16, 3, 3)}, "blocked by 16"},
		{"max_pool2d_nchwc", ir.A("kernel_size", []int{2, 2}), []ir.Type{f32(1, 32, 4, 4)}, "blocked"},
		{"max_pool2d_nchwc", nil, []ir.Type{f32(1, 2, 4, 4, 16)}, "kernel_size"},
		{"upsample_nearest_nchwc", ir.A("factors", []int{0, 2}), []ir.Type{f32(1, 2, 4, 4, 16)}, "factors"},
		{"upsample_nearest_nchwc", nil, []ir.Type{f32(1, 2, 4, 4, 16)}, "factors"},
	}
	for _, c := range cases {
		_, err := buildOp(t, c.name, c.attrs, c.in...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s%v: error %v, want one that mentions %q", c.name, c.in, err, c.want)
		}
	}
	fused, err := buildOp(t, "conv2d_fused", ir.A("strides", []int{2, 2}), f32(2, 32, 9, 9), f32(16, 32, 3, 3))
	if err != nil {
		t.Fatal(err)
	}
	blocked, err := buildOp(t, "conv2d_nchwc", ir.A("strides", []int{2, 2}), f32(2, 2, 9, 9, 16), f32(16, 32, 3, 3))
	if err != nil {
		t.Fatal(err)
	}
	types := func(vs []*ir.Value) []ir.Type {
		var ts []ir.Type
		for _, v := range vs {
			ts = append(ts, v.Type())
		}
		return ts
	}
	if f, b := ops.Flops(fused, types(fused.Operands()), types(fused.Results())), ops.Flops(blocked, types(blocked.Operands()), types(blocked.Results())); f != b || f == 0 {
		t.Errorf("conv2d_nchwc's work %d, conv2d_fused's %d", b, f)
	}
	op, err := buildOp(t, "reorder_nchwc", ir.A("block", 16), f32(1, 16, 2, 2))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"reorder_nchwc", "reorder_nchw", "conv2d_nchwc", "max_pool2d_nchwc", "upsample_nearest_nchwc"} {
		d, _ := ops.Lookup(name)
		if _, err := d.Grad(&ops.GradContext{Op: op}); err == nil || !strings.Contains(err.Error(), "no gradient") {
			t.Errorf("%s's gradient: %v, want an error that says it has none", name, err)
		}
	}
}

// The ops' NCHWc hooks give a form exactly where the blocked layout holds
// the op's operands.
func TestNCHWcForms(t *testing.T) {
	f32 := func(d ...int) ir.Type { return ir.TensorOf(ir.F32, d...) }
	resize := func(s float64, size int) ir.Attrs {
		return ir.A("axes", []int{2, 3}, "sizes", []int{size, size}, "scales", []float64{s, s},
			"mode", "nearest", "coordinate_transformation_mode", "asymmetric", "nearest_mode", "floor")
	}
	cases := []struct {
		name    string
		attrs   ir.Attrs
		in      []ir.Type
		form    string // "" for none
		blocked []int
		b       int // the channel block
	}{
		{"relu", nil, []ir.Type{f32(1, 32, 4, 4)}, "relu", []int{0}, 16},
		{"relu", nil, []ir.Type{f32(1, 24, 4, 4)}, "", nil, 16},
		{"relu", nil, []ir.Type{ir.TensorOf(ir.F64, 1, 32, 4, 4)}, "", nil, 16},
		{"add", nil, []ir.Type{f32(-1, 32, 4, 4), f32(-1, 32, 4, 4)}, "add", []int{0, 1}, 16},
		{"multiply", nil, []ir.Type{f32(2, 32, 4, 4), f32(2, 32, 1, 1)}, "multiply", []int{0, 1}, 16},
		{"multiply", nil, []ir.Type{f32(2, 32, 4, 4), f32(32, 1, 1)}, "", nil, 16},
		{"add", nil, []ir.Type{f32(2, 32, 4, 4), f32(2, 1, 4, 4)}, "", nil, 16},
		{"concat", ir.A("axis", 1), []ir.Type{f32(1, 32, 4, 4), f32(1, 16, 4, 4)}, "concat", []int{0, 1}, 16},
		{"concat", ir.A("axis", -3), []ir.Type{f32(1, 32, 4, 4), f32(1, 16, 4, 4)}, "concat", []int{0, 1}, 16},
		{"concat", ir.A("axis", 1), []ir.Type{f32(1, 32, 4, 4), f32(1, 8, 4, 4)}, "", nil, 16},
		{"concat", ir.A("axis", 2), []ir.Type{f32(1, 32, 4, 4), f32(1, 32, 4, 4)}, "", nil, 16},
		{"reduce_mean", ir.A("axes", []int{2, 3}, "keepdim", true), []ir.Type{f32(1, 32, 4, 4)}, "reduce_mean", []int{0}, 16},
		{"reduce_mean", ir.A("axes", []int{-2, -1}, "keepdim", true), []ir.Type{f32(1, 32, 4, 4)}, "reduce_mean", []int{0}, 16},
		{"reduce_mean", ir.A("axes", []int{2, 3}), []ir.Type{f32(1, 32, 4, 4)}, "", nil, 16},
		{"reduce_mean", ir.A("axes", []int{1}, "keepdim", true), []ir.Type{f32(1, 32, 4, 4)}, "", nil, 16},
		{"conv2d", ir.A("paddings", []int{1, 1}), []ir.Type{f32(1, 3, 8, 8), f32(16, 3, 3, 3)}, "conv2d_nchwc", nil, 16},
		{"conv2d", nil, []ir.Type{f32(1, 32, 8, 8), f32(16, 32, 3, 3)}, "conv2d_nchwc", []int{0}, 16},
		{"conv2d", nil, []ir.Type{f32(1, 32, 8, 8), f32(24, 32, 3, 3)}, "", nil, 16},
		{"conv2d", ir.A("groups", 2), []ir.Type{f32(1, 32, 8, 8), f32(32, 16, 3, 3)}, "", nil, 16},
		{"conv2d_fused", ir.A("residual", true), []ir.Type{f32(1, 32, 8, 8), f32(16, 32, 1, 1), f32(1, 16, 8, 8)}, "conv2d_nchwc", []int{0, 2}, 16},
		{"conv2d_fused", ir.A("pool", "max2x2"), []ir.Type{f32(1, 32, 8, 8), f32(16, 32, 1, 1)}, "", nil, 16},
		{"max_pool2d_values", ir.A("kernel_size", []int{2, 2}), []ir.Type{f32(1, 32, 8, 8)}, "max_pool2d_nchwc", []int{0}, 16},
		{"resize", resize(2, 8), []ir.Type{f32(1, 32, 4, 4)}, "upsample_nearest_nchwc", []int{0}, 16},
		{"resize", resize(1.5, 6), []ir.Type{f32(1, 32, 4, 4)}, "", nil, 16},
		{"reshape", ir.A("shape", []int{1, -1}), []ir.Type{f32(1, 32, 4, 4)}, "", nil, 16},
		{"relu", nil, []ir.Type{f32(1, 24, 4, 4)}, "relu", []int{0}, 8},
		{"conv2d", nil, []ir.Type{f32(1, 32, 8, 8), f32(24, 32, 3, 3)}, "conv2d_nchwc", []int{0}, 8},
		{"conv2d", nil, []ir.Type{f32(1, 32, 8, 8), f32(20, 32, 3, 3)}, "", nil, 8},
		{"concat", ir.A("axis", 1), []ir.Type{f32(1, 32, 4, 4), f32(1, 8, 4, 4)}, "concat", []int{0, 1}, 8},
	}
	for _, c := range cases {
		op, err := buildOp(t, c.name, c.attrs, c.in...)
		if err != nil {
			t.Fatalf("%s%v: %v", c.name, c.in, err)
		}
		d, _ := ops.Lookup(c.name)
		var f ops.NCHWcForm
		ok := d.NCHWc != nil
		if ok {
			f, ok = d.NCHWc(op, c.b)
		}
		switch {
		case ok != (c.form != ""):
			t.Errorf("%s%v %s: form %v, want one: %v", c.name, c.in, c.attrs, ok, c.form != "")
		case ok && (f.Op != c.form || !equalInts(f.Blocked, c.blocked) || f.Anchor != (c.form == "conv2d_nchwc")):
			t.Errorf("%s%v %s: form %s blocked %v anchor %v, want %s %v", c.name, c.in, c.attrs, f.Op, f.Blocked, f.Anchor, c.form, c.blocked)
		}
	}
}
