package ops_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Goldens written by tools/golden_resize.py: PyTorch's F.interpolate (with
// autograd's gradients) and ONNX's reference interpolation.

type resizeGoldenCase struct {
	Name  string                     `json:"name"`
	Attrs map[string]json.RawMessage `json:"attrs"`
	X     nnGoldenTensor             `json:"x"`
	Y     nnGoldenTensor             `json:"y"`
	DY    *nnGoldenTensor            `json:"dy"`
	DX    *nnGoldenTensor            `json:"dx"`
	Tol   float64                    `json:"tol"`
}

// resizeGoldenAttrs converts the JSON attributes: strings, bools, numbers
// as floats, lists of floats for scales and roi and of ints otherwise.
func resizeGoldenAttrs(t *testing.T, raw map[string]json.RawMessage) ir.Attrs {
	names := make([]string, 0, len(raw))
	for n := range raw {
		names = append(names, n)
	}
	sort.Strings(names)
	var attrs ir.Attrs
	for _, n := range names {
		var v any
		if err := json.Unmarshal(raw[n], &v); err != nil {
			t.Fatal(err)
		}
		var a any
		switch v := v.(type) {
		case string, bool, float64:
			a = v
		case []any:
			fs, is := make([]float64, len(v)), make([]int, len(v))
			for i, e := range v {
				fs[i] = e.(float64)
				is[i] = int(fs[i])
			}
			if n == "scales" || n == "roi" {
				a = fs
			} else {
				a = is
			}
		default:
			t.Fatalf("attribute %s: %v", n, v)
		}
		attr, err := ir.ToAttr(a)
		if err != nil {
			t.Fatal(err)
		}
		attrs = attrs.With(n, attr)
	}
	return attrs
}

func goldenTensor(t *testing.T, a *memory.Allocator, g nnGoldenTensor) *tensor.Tensor {
	dt, ok := ir.ParseDType(g.DType)
	if !ok {
		t.Fatalf("dtype %q", g.DType)
	}
	return nnFrom(t, a, tensor.DType(dt), g.Data, g.Shape...)
}

func TestResizeGolden(t *testing.T) {
	nnDebug(t)
	data, err := os.ReadFile("testdata/golden/resize.json")
	if err != nil {
		t.Fatalf("%v (run /usr/bin/python3 tools/golden_resize.py)", err)
	}
	var f struct{ Cases []resizeGoldenCase }
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	for _, c := range f.Cases {
		t.Run(c.Name, func(t *testing.T) {
			a := memory.New(memory.Options{})
			attrs := resizeGoldenAttrs(t, c.Attrs)
			x := goldenTensor(t, a, c.X)
			out := mustRun(t, a, "resize", attrs, x)
			closeEnough(t, "resize", out[0], c.Y.Data, c.Y.Shape, c.Tol)
			for _, th := range []int{1, 3} {
				o := nnRunThreads(t, a, th, "resize", attrs, x)
				nnSameBits(t, fmt.Sprintf("resize with %d threads", th), o[0], out[0])
				release(o...)
			}
			release(out...)
			if c.DY != nil {
				dy := goldenTensor(t, a, *c.DY)
				axes, _ := attrs.Ints("axes")
				size := make([]int, len(axes))
				for i, ax := range axes {
					size[i] = c.X.Shape[ax]
				}
				gattrs := attrs.With("input_size", nnIntList(size))
				dx := mustRun(t, a, "resize_grad", gattrs, dy)
				closeEnough(t, "resize_grad", dx[0], c.DX.Data, c.DX.Shape, c.Tol)
				for _, th := range []int{1, 3} {
					o := nnRunThreads(t, a, th, "resize_grad", gattrs, dy)
					nnSameBits(t, fmt.Sprintf("resize_grad with %d threads", th), o[0], dx[0])
					release(o...)
				}
				// With x in place of input_size.
				dx2 := mustRun(t, a, "resize_grad", attrs, dy, x)
				nnSameBits(t, "resize_grad with x", dx2[0], dx[0])
				release(dx...)
				release(dx2...)
				release(dy)
			}
			release(x)
			wantAllocated(t, a, 0)
		})
	}
}

func nnIntList(v []int) ir.Attr {
	a, _ := ir.ToAttr(v)
	return a
}

func TestResizeGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	cases := []struct {
		shape []int
		attrs ir.Attrs
	}{
		{[]int{1, 2, 3, 4}, ir.A("axes", []int{2, 3}, "sizes", []int{6, 8}, "scales", []float64{2, 2})},
		{[]int{2, 1, 5, 4}, ir.A("axes", []int{2, 3}, "sizes", []int{3, 7}, "scales", []float64{0.6, 1.75}, "mode", "linear")},
		{[]int{1, 1, 4, 5}, ir.A("axes", []int{2, 3}, "sizes", []int{7, 3}, "scales", []float64{1.75, 0.6}, "mode", "cubic",
			"coordinate_transformation_mode", "align_corners")},
		{[]int{1, 1, 5, 4}, ir.A("axes", []int{-2, -1}, "sizes", []int{6, 6}, "scales", []float64{1.2, 1.5}, "mode", "cubic",
			"cubic_coeff_a", -0.5, "exclude_outside", true)},
		{[]int{1, 2, 4, 4}, ir.A("axes", []int{2, 3}, "sizes", []int{3, 5}, "scales", []float64{0.75, 1.25}, "mode", "linear",
			"coordinate_transformation_mode", "tf_crop_and_resize", "roi", []float64{0.2, -0.3, 1.1, 0.8}, "extrapolation_value", 3.5)},
		{[]int{3, 2, 4}, ir.A("axes", []int{0, 2}, "sizes", []int{5, 3}, "scales", []float64{5. / 3, 0.75}, "mode", "linear")},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.shape, c.attrs), func(t *testing.T) {
			x := f64Rand(t, r, -1, 1, c.shape...)
			defer x.Release()
			checkOpGrad(t, "resize", c.attrs, x)
			for _, mode := range []int{shpTop, shpInIf, shpInLoop} {
				// A dynamic resized axis makes the rule pass x to resize_grad.
				shpCheckGrad(t, mode, shpGradCase{name: "resize", attrs: c.attrs, in: []*tensor.Tensor{x}, dyn: [][]int{{1, 2}}})
			}
			a := memory.New(memory.Options{})
			y := mustRun(t, a, "resize", c.attrs, x)
			dy := f64Rand(t, r, -1, 1, y[0].Shape()...)
			release(y...)
			checkOpGrad(t, "resize_grad", c.attrs, dy, x)
			dy.Release()
			wantAllocated(t, a, 0)
		})
	}
}

// Resizing is linear: resize_grad is its adjoint, <resize(x), dy> =
// <x, resize_grad(dy)>, for every mode.
func TestResizeAdjoint(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	a := memory.New(memory.Options{})
	for _, mode := range []string{"nearest", "linear", "cubic"} {
		for _, tr := range []string{"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn"} {
			attrs := ir.A("axes", []int{1, 2}, "sizes", []int{7, 2}, "scales", []float64{1.4, 0.5}, "mode", mode,
				"coordinate_transformation_mode", tr, "nearest_mode", "round_prefer_ceil")
			x := randTensor(t, a, r, tensor.F64, 2, 5, 4)
			y := mustRun(t, a, "resize", attrs, x)
			dy := randTensor(t, a, r, tensor.F64, y[0].Shape()...)
			dx := mustRun(t, a, "resize_grad", attrs, dy, x)
			var lhs, rhs float64
			for i, v := range y[0].F64() {
				lhs += v * dy.F64()[i]
			}
			for i, v := range x.F64() {
				rhs += v * dx[0].F64()[i]
			}
			if d := lhs - rhs; d > 1e-10 || d < -1e-10 {
				t.Errorf("%s/%s: <resize(x), dy> = %v, <x, resize_grad(dy)> = %v", mode, tr, lhs, rhs)
			}
			release(y...)
			release(dx...)
			release(x, dy)
		}
	}
	wantAllocated(t, a, 0)
}

func TestResizeInfer(t *testing.T) {
	got := nnInferOK(t, "resize", ir.A("axes", []int{2, 3}, "sizes", []int{8, 6}, "scales", []float64{2, 2}), nnT(ir.F32, -1, 3, 4, 3))
	if got[0].String() != "tensor<?x3x8x6xf32>" {
		t.Fatalf("type %s", got[0])
	}
	got = nnInferOK(t, "resize_grad", ir.A("axes", []int{2}, "sizes", []int{8}, "scales", []float64{2}, "input_size", []int{4}), nnT(ir.F64, -1, 3, 8))
	if got[0].String() != "tensor<?x3x4xf64>" {
		t.Fatalf("type %s", got[0])
	}
	x := nnT(ir.F32, 1, 2, 4, 4)
	ok := ir.A("axes", []int{2, 3}, "sizes", []int{8, 8}, "scales", []float64{2, 2})
	for _, c := range []struct {
		attrs ir.Attrs
		want  []string
	}{
		{ir.A("sizes", []int{8}, "scales", []float64{2}), []string{"axes"}},
		{ir.A("axes", []int{2}, "scales", []float64{2}), []string{"sizes"}},
		{ir.A("axes", []int{2}, "sizes", []int{8}), []string{"scales"}},
		{ir.A("axes", []int{2, 2}, "sizes", []int{8, 8}, "scales", []float64{2, 2}), []string{"appears twice"}},
		{ir.A("axes", []int{4}, "sizes", []int{8}, "scales", []float64{2}), []string{"out of range"}},
		{ir.A("axes", []int{2}, "sizes", []int{8, 8}, "scales", []float64{2}), []string{"differ in length"}},
		{ir.A("axes", []int{2}, "sizes", []int{-1}, "scales", []float64{2}), []string{"negative"}},
		{ir.A("axes", []int{2}, "sizes", []int{8}, "scales", []float64{0}), []string{"positive"}},
		{ok.With("mode", ir.Str("area")), []string{`mode:"area"`}},
		{ok.With("coordinate_transformation_mode", ir.Str("half_pixel_symmetric")), []string{"half_pixel_symmetric"}},
		{ok.With("nearest_mode", ir.Str("round")), []string{"nearest_mode"}},
		{ok.With("coordinate_transformation_mode", ir.Str("tf_crop_and_resize")), []string{"roi"}},
		{ok.With("roi", ir.List{ir.Float(0), ir.Float(0), ir.Float(1), ir.Float(1)}), []string{"roi", "only"}},
		{ok.With("exclude_outside", ir.Int(1)), []string{"exclude_outside"}},
	} {
		nnInferErr(t, "resize", c.attrs, c.want, x)
	}
	nnInferErr(t, "resize", ok, []string{"f32 or f64"}, nnT(ir.I64, 1, 2, 4, 4))
	nnInferErr(t, "resize", ok, []string{"axis 2 is empty"}, nnT(ir.F32, 1, 2, 0, 4))
	dy := nnT(ir.F32, 1, 2, 8, 8)
	nnInferErr(t, "resize_grad", ok, []string{"input_size"}, dy)
	nnInferErr(t, "resize_grad", ok.With("input_size", ir.List{ir.Int(4)}), []string{"input_size", "2 sizes"}, dy)
	nnInferErr(t, "resize_grad", ok.With("input_size", ir.List{ir.Int(4), ir.Int(4)}), []string{"not both"}, dy, x)
	nnInferErr(t, "resize_grad", ok, []string{"differ in dim 1"}, dy, nnT(ir.F32, 1, 3, 4, 4))
	nnInferErr(t, "resize_grad", ok.With("input_size", ir.List{ir.Int(4), ir.Int(4)}), []string{"resize's output"}, nnT(ir.F32, 1, 2, 8, 7))
}

func TestResizeMemory(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	a := memory.New(memory.Options{})
	x := randTensor(t, a, r, tensor.F32, 2, 3, 6, 5)
	attrs := ir.A("axes", []int{2, 3}, "sizes", []int{9, 4}, "scales", []float64{1.5, 0.8}, "mode", "cubic")
	grad := attrs.With("input_size", nnIntList([]int{6, 5}))
	base := a.Stats().Allocated.Current
	for range 30 {
		y := mustRun(t, a, "resize", attrs, x)
		dx := mustRun(t, a, "resize_grad", grad, y[0])
		release(y...)
		release(dx...)
		if _, err := runOp(t, a, "resize_grad", grad, x); err == nil {
			t.Fatal("resize_grad of a dy of the wrong shape: no error")
		}
		wantAllocated(t, a, base)
	}
	// The kernel checks the shape it gets.
	b := ir.NewBuilder(ir.NewProgram())
	op := b.Op("resize", attrs, ops.Data(b, "x", ir.F32, 2, 3, ir.Dynamic, 5))
	k, err := ops.Bind(op)
	if err != nil {
		t.Fatal(err)
	}
	empty := randTensor(t, a, r, tensor.F32, 2, 3, 0, 5)
	if _, err := k(&ops.Ctx{Alloc: a, Threads: 2}, []*tensor.Tensor{empty}); err == nil {
		t.Fatal("resizing an empty axis: no error")
	}
	release(empty)
	wantAllocated(t, a, base)
	checkOOMSweep(t, "resize", attrs, x)
	y := mustRun(t, a, "resize", attrs, x)
	checkOOMSweep(t, "resize_grad", grad, y[0])
	release(y...)
	release(x)
	wantAllocated(t, a, 0)
}

func TestResizeBuilder(t *testing.T) {
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F32, 1, 3, 4, 4)
	y := ops.Resize(b, x, []int{2, 3}, []int{3, 5}, []float64{0.75, 1.25}, ops.ResizeOptions{
		Mode: "cubic", CoordinateTransformationMode: "tf_crop_and_resize", NearestMode: "ceil", CubicCoeffA: -0.5,
		ExcludeOutside: true, ExtrapolationValue: 2, ROI: []float64{0, 0, 1, 1},
	})
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	if y.Type().String() != "tensor<1x3x3x5xf32>" {
		t.Fatalf("type %s", y.Type())
	}
	if got := y.Def().Attrs.String(); got != `{axes:[2,3], sizes:[3,5], scales:[0.75,1.25], mode:"cubic", coordinate_transformation_mode:"tf_crop_and_resize", nearest_mode:"ceil", cubic_coeff_a:-0.5, exclude_outside:true, extrapolation_value:2.0, roi:[0.0,0.0,1.0,1.0]}` {
		t.Fatalf("attrs %s", got)
	}
}

// Empty axes that are not resized, and resized axes of size 0 to 0.
func TestResizeEmpty(t *testing.T) {
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(27, 28))
	for _, c := range []struct {
		shape []int
		attrs ir.Attrs
	}{
		{[]int{0, 3, 4}, ir.A("axes", []int{2}, "sizes", []int{7}, "scales", []float64{1.75}, "mode", "cubic")},
		{[]int{2, 3, 0}, ir.A("axes", []int{2}, "sizes", []int{0}, "scales", []float64{2}, "mode", "linear")},
		{[]int{2, 3, 4}, ir.A("axes", []int{1}, "sizes", []int{0}, "scales", []float64{0.1})},
	} {
		x := randTensor(t, a, r, tensor.F32, c.shape...)
		y := mustRun(t, a, "resize", c.attrs, x)
		if y[0].Len() != 0 {
			t.Fatalf("%v %v: %d elements", c.shape, c.attrs, y[0].Len())
		}
		axes, _ := c.attrs.Ints("axes")
		d := mustRun(t, a, "resize_grad", c.attrs.With("input_size", nnIntList([]int{c.shape[axes[0]]})), y[0])
		if !equalInts(d[0].Shape(), c.shape) {
			t.Fatalf("resize_grad shape %v, want %v", d[0].Shape(), c.shape)
		}
		release(y...)
		release(d...)
		release(x)
	}
	wantAllocated(t, a, 0)
}
