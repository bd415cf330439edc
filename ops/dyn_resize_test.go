package ops_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Tests of resize_dyn and resize_dyn_grad (dyn_resize.go): against the
// goldens of resize (PyTorch and ONNX's reference, tools/golden_resize.py)
// with the scales or sizes given at run time, against the static resize
// for keep_aspect_ratio_policy, their errors, gradients and memory.

// resizeDynAttrs turns the golden attributes of resize into resize_dyn's:
// without sizes, scales and roi, with by.
func resizeDynAttrs(attrs ir.Attrs, by string) ir.Attrs {
	var out ir.Attrs
	for _, a := range attrs {
		if a.Name != "sizes" && a.Name != "scales" && a.Name != "roi" {
			out = append(out, a)
		}
	}
	return out.With("by", ir.Str(by))
}

func f64Vec(t testing.TB, a *memory.Allocator, vs ...float64) *tensor.Tensor {
	t.Helper()
	x, err := tensor.FromF64(a, vs, len(vs))
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func TestResizeDynGolden(t *testing.T) {
	data, err := os.ReadFile("testdata/golden/resize.json")
	if err != nil {
		t.Fatalf("%v (run /usr/bin/python3 tools/golden_resize.py)", err)
	}
	var f struct{ Cases []resizeGoldenCase }
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	ran := map[string]int{}
	for _, c := range f.Cases {
		t.Run(c.Name, func(t *testing.T) {
			a := memory.New(memory.Options{})
			attrs := resizeGoldenAttrs(t, c.Attrs)
			axes, _ := attrs.Ints("axes")
			sizes, _ := attrs.Ints("sizes")
			scales, _ := resizeGoldenFloats(attrs, "scales")
			roi, _ := resizeGoldenFloats(attrs, "roi")
			x := goldenTensor(t, a, c.X)
			// The scales give the sizes (⌊s·n⌋), or the sizes the scales
			// (size/n): run resize_dyn each way that reproduces the case.
			byScales, bySizes := true, true
			for i, ax := range axes {
				n := c.X.Shape[ax]
				byScales = byScales && int(math.Floor(scales[i]*float64(n))) == sizes[i]
				bySizes = bySizes && float64(sizes[i])/float64(n) == scales[i]
			}
			var targets []*tensor.Tensor
			var bys []string
			if byScales {
				targets, bys = append(targets, f64Vec(t, a, scales...)), append(bys, "scales")
			}
			if bySizes {
				vs := make([]int64, len(sizes))
				for i, s := range sizes {
					vs[i] = int64(s)
				}
				targets, bys = append(targets, dynVec(t, tensor.I64, vs...)), append(bys, "sizes")
			}
			if len(targets) == 0 {
				t.Skipf("scales %v and sizes %v give each other in no way", scales, sizes)
			}
			for k, target := range targets {
				ran[bys[k]]++
				dattrs := resizeDynAttrs(attrs, bys[k])
				in := []*tensor.Tensor{x, target}
				if roi != nil {
					in = append(in, f64Vec(t, a, roi...))
				}
				out := mustRun(t, a, "resize_dyn", dattrs, in...)
				closeEnough(t, "resize_dyn by "+bys[k], out[0], c.Y.Data, c.Y.Shape, c.Tol)
				release(out...)
				if c.DY != nil {
					dy := goldenTensor(t, a, *c.DY)
					dx := mustRun(t, a, "resize_dyn_grad", dattrs, append([]*tensor.Tensor{dy}, in...)...)
					closeEnough(t, "resize_dyn_grad by "+bys[k], dx[0], c.DX.Data, c.DX.Shape, c.Tol)
					release(dx...)
					release(dy)
				}
				release(in[1:]...)
			}
			release(x)
			wantAllocated(t, a, 0)
		})
	}
	if ran["scales"] < 10 || ran["sizes"] < 10 {
		t.Fatalf("ran %v, want at least 10 cases each way", ran)
	}
}

// resizeGoldenFloats reads a list-of-numbers attribute, nil when absent.
func resizeGoldenFloats(attrs ir.Attrs, name string) ([]float64, error) {
	a, ok := attrs.Get(name)
	if !ok {
		return nil, nil
	}
	l := a.(ir.List)
	out := make([]float64, len(l))
	for i, e := range l {
		out[i] = float64(e.(ir.Float))
	}
	return out, nil
}

// TestResizeDynPolicy checks keep_aspect_ratio_policy against the static
// resize with the sizes and scales ONNX's text gives: one scale for every
// axis (the smallest or the largest), sizes rounded.
func TestResizeDynPolicy(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	a := memory.New(memory.Options{})
	for i := range 40 {
		shape := []int{1, 1 + r.IntN(5), 1 + r.IntN(6)}
		axes := []int{1, 2}
		target := []int64{int64(1 + r.IntN(9)), int64(1 + r.IntN(9))}
		policy := []string{"not_larger", "not_smaller"}[i%2]
		ratio := math.NaN()
		for k, ax := range axes {
			s := float64(target[k]) / float64(shape[ax])
			if policy == "not_larger" && !(s >= ratio) || policy == "not_smaller" && !(s <= ratio) {
				ratio = s
			}
		}
		sizes, scales := make([]int, 2), []float64{ratio, ratio}
		half := false
		for k, ax := range axes {
			v := ratio * float64(shape[ax])
			half = half || v-math.Floor(v) == 0.5
			sizes[k] = int(math.Floor(v + 0.5))
		}
		mode := []string{"nearest", "linear", "cubic"}[r.IntN(3)]
		x := randTensor(t, a, r, tensor.F64, shape...)
		tv := dynVec(t, tensor.I32, target...)
		attrs := ir.A("axes", axes, "by", "sizes", "mode", mode, "keep_aspect_ratio_policy", policy)
		what := fmt.Sprintf("%s %v to %v %s", mode, shape, target, policy)
		if half {
			dynWantKernelErr(t, a, "resize_dyn", attrs, []*tensor.Tensor{x, tv}, "exactly", "round differently")
			release(x, tv)
			continue
		}
		got := mustRun(t, a, "resize_dyn", attrs, x, tv)
		want := mustRun(t, a, "resize", ir.A("axes", axes, "sizes", sizes, "scales", scales, "mode", mode), x)
		nnSameBits(t, what, got[0], want[0])
		release(got[0], want[0], x, tv)
	}
	wantAllocated(t, a, 0)
}

// TestResizeDynErrors: type errors when built, value errors when run,
// every byte released.
func TestResizeDynErrors(t *testing.T) {
	f64, f32, i64 := ir.F64, ir.F32, ir.I64
	base := ir.A("axes", []int{1}, "by", "scales")
	for _, c := range []struct {
		attrs ir.Attrs
		in    []ir.Type
		want  string
	}{
		{ir.A("axes", []int{1}), []ir.Type{shpT(f64, 2, 3), shpT(f32, 1)}, "by"},
		{ir.A("axes", []int{1}, "by", "steps"), []ir.Type{shpT(f64, 2, 3), shpT(f32, 1)}, `by "steps"`},
		{base, []ir.Type{shpT(ir.I32, 2, 3), shpT(f32, 1)}, "x"},
		{base, []ir.Type{shpT(f64, 2, 3), shpT(i64, 1)}, "scales tensor<1xi64> must be a 1-D f32 or f64 tensor"},
		{base, []ir.Type{shpT(f64, 2, 3), shpT(f32, 2)}, "must have 1 entries"},
		{base, []ir.Type{shpT(f64, 2, 3), shpT(f32, 1), shpT(f32, 2)}, "roi is given with tf_crop_and_resize only"},
		{base.With("coordinate_transformation_mode", ir.Str("tf_crop_and_resize")), []ir.Type{shpT(f64, 2, 3), shpT(f32, 1)}, "takes 2 operands after x"},
		{ir.A("axes", []int{1}, "by", "sizes"), []ir.Type{shpT(f64, 2, 3), shpT(f32, 1)}, "sizes tensor<1xf32> must be a 1-D i32 or i64 tensor"},
		{base.With("keep_aspect_ratio_policy", ir.Str("not_larger")), []ir.Type{shpT(f64, 2, 3), shpT(f32, 1)}, "applies to sizes"},
		{ir.A("axes", []int{1}, "by", "sizes", "whole_scales", true), []ir.Type{shpT(f64, 2, 3), shpT(i64, 1)}, "applies to scales"},
		{ir.A("axes", []int{1}, "by", "sizes", "keep_aspect_ratio_policy", "fit"), []ir.Type{shpT(f64, 2, 3), shpT(i64, 1)}, `"fit"`},
		{ir.A("axes", []int{1, 1}, "by", "sizes"), []ir.Type{shpT(f64, 2, 3), shpT(i64, 2)}, "twice"},
		{base.With("mode", ir.Str("area")), []ir.Type{shpT(f64, 2, 3), shpT(f32, 1)}, "area"},
	} {
		shpWantErr(t, "resize_dyn", c.attrs, c.in, c.want)
	}
	shpWantErr(t, "resize_dyn_grad", base, []ir.Type{shpT(f64, 2, 6), shpT(f64, 3, 3), shpT(f32, 1)}, "differ in dim 0")

	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(3, 3))
	x := randTensor(t, a, r, tensor.F64, 2, 3)
	empty := randTensor(t, a, r, tensor.F64, 2, 0)
	sc := func(vs ...float64) *tensor.Tensor { return f64Vec(t, a, vs...) }
	for _, c := range []struct {
		attrs ir.Attrs
		in    []*tensor.Tensor
		want  string
	}{
		{base, []*tensor.Tensor{x, sc(0)}, "not a positive number"},
		{base, []*tensor.Tensor{x, sc(math.NaN())}, "not a positive number"},
		{base, []*tensor.Tensor{x, sc(math.Inf(1))}, "not a positive number"},
		{base, []*tensor.Tensor{x, sc(1e300)}, "too large"},
		{base.With("whole_scales", ir.Bool(true)), []*tensor.Tensor{x, sc(1.5)}, "not a whole number"},
		{base.With("whole_scales", ir.Bool(true)), []*tensor.Tensor{x, sc(0.5)}, "not a whole number"},
		{ir.A("axes", []int{1}, "by", "sizes"), []*tensor.Tensor{x, dynVec(t, tensor.I64, -1)}, "negative"},
		{ir.A("axes", []int{1}, "by", "sizes"), []*tensor.Tensor{empty, dynVec(t, tensor.I64, 2)}, "empty"},
		{ir.A("axes", []int{1}, "by", "sizes", "mode", "cubic", "coordinate_transformation_mode", "pytorch_half_pixel"),
			[]*tensor.Tensor{x, dynVec(t, tensor.I64, 1)}, "at most 1"},
		{base.With("coordinate_transformation_mode", ir.Str("tf_crop_and_resize")), []*tensor.Tensor{x, sc(2), sc(0.1, 0.2, 0.3)}, "roi"},
	} {
		// Dynamic operand types: the lengths are checked at run time too.
		types := shpTypes(true, c.in...)
		types[0] = shpT(f64, c.in[0].Shape()...)
		shpWantKernelErr(t, a, "resize_dyn", c.attrs, types, c.in, c.want)
		dy := randTensor(t, a, r, tensor.F64, 2, 4)
		shpWantKernelErr(t, a, "resize_dyn_grad", c.attrs, append([]ir.Type{shpT(f64, 2, ir.Dynamic)}, types...), append([]*tensor.Tensor{dy}, c.in...), c.want)
		release(dy)
		release(c.in[1:]...)
	}
	// dy of the wrong size.
	s2, dy := sc(2), randTensor(t, a, r, tensor.F64, 2, 5)
	shpWantKernelErr(t, a, "resize_dyn_grad", base, []ir.Type{shpT(f64, 2, ir.Dynamic), shpT(f64, 2, 3), shpT(f64, 1)}, []*tensor.Tensor{dy, x, s2}, "does not have the shape [2 6]")
	release(s2, dy, x, empty)
	wantAllocated(t, a, 0)
}

func TestResizeDynGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 13))
	host := memory.New(memory.Options{})
	x := func(shape ...int) *tensor.Tensor { return f64Rand(t, r, -1, 1, shape...) }
	f32 := func(vs ...float32) *tensor.Tensor {
		v, err := tensor.FromF32(host, vs, len(vs))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	v := func(vals ...int64) *tensor.Tensor { return dynVec(t, tensor.I64, vals...) }
	in := func(ts ...*tensor.Tensor) []*tensor.Tensor { return ts }
	cases := []shpGradCase{
		{name: "resize_dyn", attrs: ir.A("axes", []int{1, 2}, "by", "scales", "mode", "linear"), in: in(x(1, 3, 4), f32(2, 0.5))},
		{name: "resize_dyn", attrs: ir.A("axes", []int{0}, "by", "sizes", "mode", "cubic"), in: in(x(4, 2), v(7)), dyn: [][]int{{0, 1}}},
		{name: "resize_dyn", attrs: ir.A("axes", []int{1}, "by", "sizes", "mode", "nearest", "keep_aspect_ratio_policy", "not_smaller"), in: in(x(2, 3), v(5))},
		{name: "resize_dyn", attrs: ir.A("axes", []int{1}, "by", "scales", "coordinate_transformation_mode", "tf_crop_and_resize", "mode", "linear", "extrapolation_value", 2.5),
			in: in(x(2, 5), f32(1.5), f32(0.25, 1.25)), dyn: [][]int{{1}}},
		{name: "resize_dyn_grad", attrs: ir.A("axes", []int{1}, "by", "scales", "mode", "linear", "extrapolation_value", 2.5, "coordinate_transformation_mode", "tf_crop_and_resize"),
			in: in(x(2, 7), x(2, 5), f32(1.5), f32(0.25, 1.25))},
		{name: "resize_dyn_grad", attrs: ir.A("axes", []int{0, 1}, "by", "sizes", "mode", "cubic"), in: in(x(3, 5), x(2, 2), v(3, 5)), dyn: [][]int{{0, 1}, {1}}},
	}
	for _, c := range cases {
		for mode := range shpModeNames {
			t.Run(fmt.Sprintf("%s%s/%s/%v", c.name, c.attrs, shpModeNames[mode], c.dyn), func(t *testing.T) {
				shpCheckGrad(t, mode, c)
			})
		}
	}
	for _, c := range cases {
		release(c.in...)
	}

	// Gradients with respect to float scales are refused, by name.
	b := ir.NewBuilder(ir.NewProgram())
	xv, s := ops.Data(b, "x", ir.F64, 2, 3), ops.Data(b, "s", ir.F64, 1)
	y := ops.ResizeDyn(b, xv, s, nil, []int{1}, "scales", ops.ResizeOptions{Mode: "linear"}, "", false)
	if _, err := autodiff.Backward(b, ops.ReduceSum(b, y, nil, false), []*ir.Value{s}); err == nil || !strings.Contains(err.Error(), "resize_dyn with respect to its scales or roi are not implemented") {
		t.Fatalf("gradient with respect to scales: %v", err)
	}
}

// TestResizeDynMemory runs resize_dyn and resize_dyn_grad many times,
// failures included, and under every capacity limit: memory returns to
// where it was.
func TestResizeDynMemory(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	a := memory.New(memory.Options{})
	x := randTensor(t, a, r, tensor.F32, 2, 3, 5, 4)
	dy := randTensor(t, a, r, tensor.F32, 2, 3, 10, 6)
	good, bad := f64Vec(t, a, 2, 1.5), f64Vec(t, a, 2, -1)
	attrs := ir.A("axes", []int{2, 3}, "by", "scales", "mode", "cubic")
	base := a.Stats().Allocated.Current
	for range 50 {
		out := mustRun(t, a, "resize_dyn", attrs, x, good)
		dx := mustRun(t, a, "resize_dyn_grad", attrs, dy, x, good)
		release(out...)
		release(dx...)
		if _, err := runOp(t, a, "resize_dyn", attrs, x, bad); err == nil {
			t.Fatal("no error")
		}
		if _, err := runOp(t, a, "resize_dyn_grad", attrs, dy, x, bad); err == nil {
			t.Fatal("no error")
		}
		wantAllocated(t, a, base)
	}
	checkOOMSweep(t, "resize_dyn", attrs, x, good)
	checkOOMSweep(t, "resize_dyn_grad", attrs, dy, x, good)
	release(x, dy, good, bad)
	wantAllocated(t, a, 0)
}
