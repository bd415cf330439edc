package ops

import (
	"fmt"
	"math"
	"slices"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Resizing by interpolation (ONNX's Resize, opsets 11 to 18).
//
//	resize {axes, sizes, scales, mode?, coordinate_transformation_mode?, nearest_mode?,
//	        cubic_coeff_a?, exclude_outside?, extrapolation_value?, roi?} (x) -> y
//
// x is f32 or f64. Each of axes (distinct, negative ones count from the
// end) is resized to its entry of sizes; the other axes are kept. Along a
// resized axis of input size n, output position o reads input coordinate
// c(o), by coordinate_transformation_mode with s the axis's entry of
// scales (> 0) and L = s·n (ONNX's resized length, which need not equal
// the size):
//
//	half_pixel (default)   (o + ½)/s − ½
//	pytorch_half_pixel     (o + ½)/s − ½, or 0 when L ≤ 1
//	align_corners          o·(n − 1)/(L − 1), or 0 when L = 1
//	asymmetric             o/s
//	tf_half_pixel_for_nn   (o + ½)/s
//	tf_crop_and_resize     roi_start·(n−1) + o·(roi_end − roi_start)·(n−1)/(L − 1),
//	                       or (roi_start + roi_end)·(n−1)/2 when L ≤ 1
//
// roi lists 2·len(axes) numbers, the starts then the ends, as fractions of
// each axis; it is required by tf_crop_and_resize and refused otherwise.
// With tf_crop_and_resize an output whose coordinate on some resized axis
// falls outside [0, n−1] is extrapolation_value (default 0).
//
// mode (default "nearest") interpolates at c: "nearest" takes one element,
// rounding c by nearest_mode ("round_prefer_floor", the default, and
// "round_prefer_ceil" round to the nearest integer, halves down or up;
// "floor"; "ceil"); "linear" weighs ⌊c⌋ and ⌊c⌋+1 by 1−r and r, r the
// fraction of c; "cubic" weighs ⌊c⌋−1 … ⌊c⌋+2 by Keys' cubic kernel with
// coefficient cubic_coeff_a (default −0.75) at their distance to c. Taps
// outside the input read the nearest edge element, or with
// exclude_outside weigh 0 while the others are scaled to sum to 1. Several
// resized axes interpolate separably: an output is the sum, over the taps
// of every axis, of the product of their weights times the input element,
// taken in float64. A resized axis of input size 0 must have size 0.
//
// Its gradient is the adjoint, for every mode:
//
//	resize_grad {resize's attributes, input_size?} (dy[, x]) -> dx
//
// adds each element of dy, times each of its weights, to the input
// elements it was computed from (extrapolated ones add nothing). dx has
// dy's dims but along axes, where it has input_size's entries or, when
// that is absent, the optional x's dims (only its shape is read).
// resize_grad's own gradient is resize extrapolating 0.
//
// Both write their result directly and take no workspace. The taps of
// each axis (ResizeTaps: an index and a weight per tap of each output
// position along the axis, so the sum over axes of their output sizes
// times 1, 2 or 4, not a number per element) are Go memory that each
// kernel keeps for the last shape it ran on, rather than recompute them
// every call.

func init() {
	register(&Def{Name: "resize", Infer: resizeInfer, Compute: resizeBind, Grad: resizeGrad, NCHWc: nchwcResize})
	register(&Def{Name: "resize_grad", Infer: resizeInferGrad, Compute: resizeBindGrad, Grad: resizeGradGrad})
}

// resizeAttrs is the decoded attributes of resize and resize_grad.
type resizeAttrs struct {
	spec          kernels.ResizeSpec
	axes, sizes   []int
	scales, roi   []float64
	extrapolation float64
}

// resizeFloats returns the list-of-numbers attribute name, or nil when it
// is absent.
func resizeFloats(attrs ir.Attrs, name string) ([]float64, error) {
	a, ok := attrs.Get(name)
	if !ok {
		return nil, nil
	}
	l, isList := a.(ir.List)
	if !isList {
		return nil, &ir.AttrError{Name: name, Want: "a list of numbers", Got: a}
	}
	out := make([]float64, len(l))
	for i, e := range l {
		switch v := e.(type) {
		case ir.Float:
			out[i] = float64(v)
		case ir.Int:
			out[i] = float64(v)
		default:
			return nil, &ir.AttrError{Name: name, Want: "a list of numbers", Got: a}
		}
	}
	return out, nil
}

// resizeEnum decodes string attribute name (def when absent) as the index
// of its value in names.
func resizeEnum(attrs ir.Attrs, name, def string, names []string) (int, error) {
	v := def
	if attrs.Has(name) {
		var err error
		if v, err = attrs.Str(name); err != nil {
			return 0, err
		}
	}
	if i := slices.Index(names, v); i >= 0 {
		return i, nil
	}
	return 0, fmt.Errorf("attribute %s:%q is not one of %q", name, v, names)
}

var (
	resizeModes      = []string{"nearest", "linear", "cubic"}
	resizeTransforms = []string{"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"}
	resizeRounding   = []string{"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}
)

func resizeDecode(attrs ir.Attrs, rank int) (a resizeAttrs, err error) {
	if a, err = resizeDecodeSpec(attrs, rank); err != nil {
		return a, err
	}
	if a.sizes, err = attrs.Ints("sizes"); err != nil {
		return a, err
	}
	if a.scales, err = resizeFloats(attrs, "scales"); err != nil {
		return a, err
	}
	if a.scales == nil {
		return a, &ir.AttrError{Name: "scales", Want: "a list of numbers"}
	}
	if a.roi, err = resizeFloats(attrs, "roi"); err != nil {
		return a, err
	}
	return a, a.check()
}

// resizeDecodeSpec decodes the attributes of resize and resize_dyn other
// than sizes, scales and roi.
func resizeDecodeSpec(attrs ir.Attrs, rank int) (a resizeAttrs, err error) {
	mode, err := resizeEnum(attrs, "mode", "nearest", resizeModes)
	if err != nil {
		return a, err
	}
	tr, err := resizeEnum(attrs, "coordinate_transformation_mode", "half_pixel", resizeTransforms)
	if err != nil {
		return a, err
	}
	nm, err := resizeEnum(attrs, "nearest_mode", "round_prefer_floor", resizeRounding)
	if err != nil {
		return a, err
	}
	a.spec = kernels.ResizeSpec{Mode: kernels.ResizeMode(mode), Transform: kernels.ResizeTransform(tr), Nearest: kernels.NearestMode(nm)}
	if a.spec.CubicA, err = nnFloat(attrs, "cubic_coeff_a", -0.75); err != nil {
		return a, err
	}
	if a.spec.ExcludeOutside, err = nnBool(attrs, "exclude_outside", false); err != nil {
		return a, err
	}
	if a.extrapolation, err = nnFloat(attrs, "extrapolation_value", 0); err != nil {
		return a, err
	}
	if a.axes, err = attrs.Ints("axes"); err != nil {
		return a, err
	}
	a.axes, err = shpAxes("axes", a.axes, rank)
	return a, err
}

// check checks sizes, scales and roi against the axes and each other.
func (a resizeAttrs) check() error {
	k := len(a.axes)
	if len(a.sizes) != k || len(a.scales) != k {
		return fmt.Errorf("axes %v, sizes %v and scales %v differ in length", a.axes, a.sizes, a.scales)
	}
	if len(a.sizes) > 0 && slices.Min(a.sizes) < 0 {
		return fmt.Errorf("sizes %v: a size is negative", a.sizes)
	}
	for _, s := range a.scales {
		if !(s > 0) || math.IsInf(s, 0) {
			return fmt.Errorf("scales %v: a scale is not a positive number", a.scales)
		}
	}
	crop := a.spec.Transform == kernels.TFCropAndResize
	switch {
	case crop && len(a.roi) != 2*k:
		return fmt.Errorf("tf_crop_and_resize needs roi with 2·len(axes) = %d numbers, got %v", 2*k, a.roi)
	case !crop && a.roi != nil:
		return fmt.Errorf("roi %v applies only to coordinate_transformation_mode tf_crop_and_resize", a.roi)
	}
	return nil
}

// outDims returns the resized dims of in, checking that a resized axis of
// size 0 stays empty.
func (a resizeAttrs) outDims(in []int) ([]int, error) {
	out := slices.Clone(in)
	for i, ax := range a.axes {
		if in[ax] == 0 && a.sizes[i] > 0 {
			return nil, fmt.Errorf("axis %d is empty and cannot be resized to %d", ax, a.sizes[i])
		}
		out[ax] = a.sizes[i]
	}
	return out, nil
}

// plan returns the kernels' description of every axis for static input
// dims in.
func (a resizeAttrs) plan(in []int) []kernels.ResizeAxis {
	axes := make([]kernels.ResizeAxis, len(in))
	for d, n := range in {
		axes[d] = kernels.ResizeIdentity(n)
	}
	k := len(a.axes)
	for i, ax := range a.axes {
		var r0, r1 float64
		if a.roi != nil {
			r0, r1 = a.roi[i], a.roi[k+i]
		}
		axes[ax] = kernels.ResizeTaps(a.spec, in[ax], a.sizes[i], a.scales[i], r0, r1)
	}
	return axes
}

func resizeInfer(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	x := in[0]
	if err := nnWantFloat("x", x); err != nil {
		return nil, err
	}
	a, err := resizeDecode(attrs, x.Rank())
	if err != nil {
		return nil, err
	}
	dims, err := a.outDims(x.Dims)
	if err != nil {
		return nil, fmt.Errorf("x %s: %w", x, err)
	}
	return []ir.Type{ir.TensorOf(x.DType, dims...)}, nil
}

func resizeBind(op *ir.Op) (Compute, error) {
	a, err := resizeDecode(op.Attrs, op.Operand(0).Type().Rank())
	if err != nil {
		return Compute{}, err
	}
	var plans shapeMemo[[]kernels.ResizeAxis]
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		x := in[0]
		plan, ok := plans.lookup(x.Shape())
		if !ok {
			plan = a.plan(x.Shape())
			plans.store(plan, x.Shape())
		}
		a.into(c, plan, x, out[0])
		return nil
	}}, nil
}

// run resizes x to dims (a.outDims of its shape), for resize_dyn, whose
// sizes are read at run time.
func (a resizeAttrs) run(c *Ctx, x *tensor.Tensor, dims []int) ([]*tensor.Tensor, error) {
	y, err := c.New(ir.DType(x.DType()), dims)
	if err != nil {
		return nil, err
	}
	a.into(c, a.plan(x.Shape()), x, y)
	return c.Result(y), nil
}

// into resizes x into y along plan.
func (a resizeAttrs) into(c *Ctx, plan []kernels.ResizeAxis, x, y *tensor.Tensor) {
	switch x.DType() {
	case tensor.F32:
		kernels.Resize(plan, x.F32(), y.F32(), a.extrapolation, nnThreads(c))
	case tensor.F64:
		kernels.Resize(plan, x.F64(), y.F64(), a.extrapolation, nnThreads(c))
	}
}

// ResizeOptions are resize's attributes beyond the axes, their sizes and
// scales; zero values are the defaults.
type ResizeOptions struct {
	Mode, CoordinateTransformationMode, NearestMode string
	CubicCoeffA                                     float64 // 0 means −0.75
	ExcludeOutside                                  bool
	ExtrapolationValue                              float64
	ROI                                             []float64
}

// Resize appends a resizing of x: each of axes gets its entry of sizes,
// with scales the factors of the coordinate transform.
func Resize(b *ir.Builder, x *ir.Value, axes, sizes []int, scales []float64, o ResizeOptions) *ir.Value {
	attrs := ir.A("axes", axes, "sizes", sizes, "scales", scales)
	for _, s := range []struct{ name, v string }{
		{"mode", o.Mode}, {"coordinate_transformation_mode", o.CoordinateTransformationMode}, {"nearest_mode", o.NearestMode},
	} {
		if s.v != "" {
			attrs = attrs.With(s.name, ir.Str(s.v))
		}
	}
	if o.CubicCoeffA != 0 {
		attrs = attrs.With("cubic_coeff_a", ir.Float(o.CubicCoeffA))
	}
	if o.ExcludeOutside {
		attrs = attrs.With("exclude_outside", ir.Bool(true))
	}
	if o.ExtrapolationValue != 0 {
		attrs = attrs.With("extrapolation_value", ir.Float(o.ExtrapolationValue))
	}
	if o.ROI != nil {
		attrs = attrs.With("roi", resizeFloatList(o.ROI))
	}
	return b.Op1("resize", attrs, x)
}

func resizeFloatList(v []float64) ir.Attr {
	l := make(ir.List, len(v))
	for i, x := range v {
		l[i] = ir.Float(x)
	}
	return l
}

// resizeGrad: resize_grad with the input's sizes along axes as input_size
// when they are static, else read from x.
func resizeGrad(g *GradContext) ([]*ir.Value, error) {
	if !g.Need(0) {
		return []*ir.Value{nil}, nil
	}
	t := g.Op.Operand(0).Type()
	a, err := resizeDecode(g.Op.Attrs, t.Rank())
	if err != nil {
		return nil, err
	}
	size := make([]int, len(a.axes))
	static := true
	for i, ax := range a.axes {
		size[i] = t.Dims[ax]
		static = static && size[i] != ir.Dynamic
	}
	if static {
		return []*ir.Value{g.B.Op1("resize_grad", g.Op.Attrs.With("input_size", nnIntList(size)), g.DY[0])}, nil
	}
	return []*ir.Value{g.B.Op1("resize_grad", g.Op.Attrs, g.DY[0], g.X(0))}, nil
}

// resizeGradCheck checks resize_grad's operands and returns its attributes
// and dx's dims.
func resizeGradCheck(in []ir.Type, attrs ir.Attrs) (resizeAttrs, []int, error) {
	if len(in) != 1 && len(in) != 2 {
		return resizeAttrs{}, nil, fmt.Errorf("takes 1 or 2 operands, got %d", len(in))
	}
	dy := in[0]
	if err := nnWantFloat("dy", dy); err != nil {
		return resizeAttrs{}, nil, err
	}
	a, err := resizeDecode(attrs, dy.Rank())
	if err != nil {
		return a, nil, err
	}
	dims := slices.Clone(dy.Dims)
	switch {
	case attrs.Has("input_size") && len(in) == 2:
		return a, nil, fmt.Errorf("takes attribute input_size or a second operand, not both")
	case attrs.Has("input_size"):
		size, err := attrs.Ints("input_size")
		if err != nil {
			return a, nil, err
		}
		if len(size) != len(a.axes) || (len(size) > 0 && slices.Min(size) < 0) {
			return a, nil, fmt.Errorf("input_size %v must list %d sizes >= 0, one per axis", size, len(a.axes))
		}
		for i, ax := range a.axes {
			dims[ax] = size[i]
		}
	case len(in) == 2:
		x := in[1]
		if x.Rank() != dy.Rank() {
			return a, nil, fmt.Errorf("x %s must have the rank of dy %s", x, dy)
		}
		for d := range dims {
			if !nnDimEq(dims[d], x.Dims[d]) && !slices.Contains(a.axes, d) {
				return a, nil, fmt.Errorf("dy %s and x %s differ in dim %d, which is not resized", dy, x, d)
			}
			if slices.Contains(a.axes, d) || dims[d] == ir.Dynamic {
				dims[d] = x.Dims[d]
			}
		}
	default:
		return a, nil, fmt.Errorf("needs attribute input_size or a second operand to take it from")
	}
	want, err := a.outDims(dims)
	if err != nil {
		return a, nil, err
	}
	for d, n := range want {
		if !nnDimEq(n, dy.Dims[d]) {
			return a, nil, fmt.Errorf("dy %s does not have the shape %s of resize's output for input %s", dy, dimsString(want), dimsString(dims))
		}
	}
	return a, dims, nil
}

func resizeInferGrad(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	_, dims, err := resizeGradCheck(in, attrs)
	if err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(in[0].DType, dims...)}, nil
}

func resizeBindGrad(op *ir.Op) (Compute, error) {
	a, err := resizeDecode(op.Attrs, op.Operand(0).Type().Rank())
	if err != nil {
		return Compute{}, err
	}
	var plans shapeMemo[[]kernels.ResizeAxis]
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		dx := out[0]
		plan, ok := plans.lookup(dx.Shape())
		if !ok {
			plan = a.plan(dx.Shape())
			plans.store(plan, dx.Shape())
		}
		a.gradInto(c, plan, in[0], dx)
		return nil
	}}, nil
}

// runGrad is the adjoint of run: dx of dims from dy.
func (a resizeAttrs) runGrad(c *Ctx, dy *tensor.Tensor, dims []int) ([]*tensor.Tensor, error) {
	dx, err := c.New(ir.DType(dy.DType()), dims)
	if err != nil {
		return nil, err
	}
	a.gradInto(c, a.plan(dims), dy, dx)
	return c.Result(dx), nil
}

// gradInto writes the adjoint of resizing along plan, from dy into dx.
func (a resizeAttrs) gradInto(c *Ctx, plan []kernels.ResizeAxis, dy, dx *tensor.Tensor) {
	switch dy.DType() {
	case tensor.F32:
		kernels.ResizeGrad(plan, dy.F32(), dx.F32(), nnThreads(c))
	case tensor.F64:
		kernels.ResizeGrad(plan, dy.F64(), dx.F64(), nnThreads(c))
	}
}

// resizeGradGrad: resize_grad is the adjoint of resize's linear part, so
// its gradient is resize without extrapolation_value (which is not linear).
func resizeGradGrad(g *GradContext) ([]*ir.Value, error) {
	dx := make([]*ir.Value, g.Op.NumOperands())
	if !g.Need(0) {
		return dx, nil
	}
	var attrs ir.Attrs
	for _, a := range g.Op.Attrs {
		if a.Name != "input_size" && a.Name != "extrapolation_value" {
			attrs = append(attrs, a)
		}
	}
	dx[0] = g.B.Op1("resize", attrs, g.DY[0])
	return dx, nil
}
