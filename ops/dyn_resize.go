package ops

import (
	"fmt"
	"math"
	"slices"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Resizing with the scales or sizes (and the region of interest) read at
// run time; resize (resize.go) takes them as attributes.
//
//	resize_dyn {axes, by, resize's other attributes, keep_aspect_ratio_policy?, whole_scales?}
//	           (x, target[, roi]) -> y
//	resize_dyn_grad {the same} (dy, x, target[, roi]) -> dx
//
// by says what target holds, one entry per axis: "scales", f32 or f64
// factors > 0, each axis of size n resized to ⌊s·n⌋ with scale s; or
// "sizes", i32 or i64 sizes >= 0, with scale size/n, or with
// keep_aspect_ratio_policy "not_larger" ("not_smaller") the smallest
// (largest) of those scales s for every axis and sizes ⌊s·n + ½⌋ (ONNX's
// Resize; "stretch", the default, keeps the sizes). roi, f32 or f64 with
// 2·len(axes) numbers, is tf_crop_and_resize's region of interest (given
// with that mode only). whole_scales (default false, with scales) wants
// every scale to be a whole number >= 1. The interpolation is then
// resize's with those sizes, scales and roi; the result has x's rank and
// dtype, its dims along axes dynamic.
//
// What ONNX's readings of Resize disagree on is refused (the run fails
// with a *RefusedError naming it) rather than picked: a size that keep_aspect_ratio_policy
// puts exactly on a half (ONNX's rounding of halves differs between its
// text and its reference), and cubic pytorch_half_pixel resizing to a
// length of at most 1 (coordinate 0 in the text, −½ in the reference).
//
// resize_dyn_grad is resize_dyn's adjoint with respect to x (as
// resize_grad is resize's), dx of x's shape (only x's shape is read);
// its own gradient with respect to dy is resize_dyn extrapolating 0.
// Gradients with respect to float scales or roi are not implemented
// (an error says so); integer sizes have none.

func init() {
	register(&Def{Name: "resize_dyn", Infer: resizeDynInfer, Bind: resizeDynBind, Grad: resizeDynGrad})
	register(&Def{Name: "resize_dyn_grad", Infer: resizeDynInferGrad, Bind: resizeDynBindGrad, Grad: resizeDynGradGrad})
}

// resizeDyn is the decoded attributes of resize_dyn and resize_dyn_grad:
// everything but sizes, scales and roi, which come at run time.
type resizeDyn struct {
	base   resizeAttrs
	sizes  bool // by "sizes"
	policy string
	whole  bool
}

func resizeDynDecode(attrs ir.Attrs, rank int) (d resizeDyn, err error) {
	if d.base, err = resizeDecodeSpec(attrs, rank); err != nil {
		return d, err
	}
	by, err := attrs.Str("by")
	if err != nil {
		return d, err
	}
	switch by {
	case "scales":
	case "sizes":
		d.sizes = true
	default:
		return d, fmt.Errorf("by %q is not scales or sizes", by)
	}
	d.policy = "stretch"
	if attrs.Has("keep_aspect_ratio_policy") {
		if d.policy, err = attrs.Str("keep_aspect_ratio_policy"); err != nil {
			return d, err
		}
		if !d.sizes {
			return d, fmt.Errorf("keep_aspect_ratio_policy applies to sizes, not scales")
		}
	}
	if !slices.Contains([]string{"stretch", "not_larger", "not_smaller"}, d.policy) {
		return d, fmt.Errorf("keep_aspect_ratio_policy %q is not stretch, not_larger or not_smaller", d.policy)
	}
	if d.whole, err = nnBool(attrs, "whole_scales", false); err != nil {
		return d, err
	}
	if d.whole && d.sizes {
		return d, fmt.Errorf("whole_scales applies to scales, not sizes")
	}
	return d, nil
}

// crop reports whether the mode takes a region of interest.
func (d resizeDyn) crop() bool { return d.base.spec.Transform == kernels.TFCropAndResize }

// checkOperands checks the types of target and roi (rest: target, then
// roi in crop mode).
func (d resizeDyn) checkOperands(rest []ir.Type) error {
	want := 1
	if d.crop() {
		want = 2
	}
	if len(rest) != want {
		return fmt.Errorf("takes %d operands after x, got %d (roi is given with tf_crop_and_resize only)", want, len(rest))
	}
	k := len(d.base.axes)
	for i, t := range rest {
		what, n := "scales", k
		switch {
		case i == 1:
			what, n = "roi", 2*k
		case d.sizes:
			what = "sizes"
		}
		okType := t.DType.IsFloat()
		if what == "sizes" {
			okType = t.DType.IsInt()
		}
		if !okType || t.Rank() != 1 {
			return fmt.Errorf("%s %s must be a 1-D %s tensor", what, t, map[bool]string{true: "i32 or i64", false: "f32 or f64"}[what == "sizes"])
		}
		if t.Dims[0] != ir.Dynamic && t.Dims[0] != n {
			return fmt.Errorf("%s %s must have %d entries for axes %v", what, t, n, d.base.axes)
		}
	}
	return nil
}

// dims is the result dims for x's: dynamic along axes.
func (d resizeDyn) dims(x []int) []int {
	out := slices.Clone(x)
	for _, a := range d.base.axes {
		out[a] = ir.Dynamic
	}
	return out
}

func resizeDynInfer(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if len(in) < 2 {
		return nil, fmt.Errorf("takes x, then scales or sizes (and roi)")
	}
	x := in[0]
	if err := nnWantFloat("x", x); err != nil {
		return nil, err
	}
	d, err := resizeDynDecode(attrs, x.Rank())
	if err != nil {
		return nil, err
	}
	if err := d.checkOperands(in[1:]); err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(x.DType, d.dims(x.Dims)...)}, nil
}

// resolve reads target (and roi) for an input of dims in: the static
// resize's attributes.
func (d resizeDyn) resolve(in []int, target, roi *tensor.Tensor) (resizeAttrs, error) {
	a := d.base
	k := len(a.axes)
	if target.Len() != k {
		return a, fmt.Errorf("%d scales or sizes for axes %v", target.Len(), a.axes)
	}
	a.sizes, a.scales = make([]int, k), make([]float64, k)
	if d.sizes {
		ratio := math.NaN()
		for i, s := range dynInts(target) {
			n := in[a.axes[i]]
			if s < 0 {
				return a, fmt.Errorf("sizes %v: a size is negative", dynInts(target))
			}
			a.sizes[i], a.scales[i] = s, 1
			if n == 0 {
				continue // outDims wants s = 0
			}
			a.scales[i] = float64(s) / float64(n)
			switch {
			case d.policy == "not_larger" && !(a.scales[i] >= ratio):
				ratio = a.scales[i]
			case d.policy == "not_smaller" && !(a.scales[i] <= ratio):
				ratio = a.scales[i]
			}
		}
		if d.policy != "stretch" && !math.IsNaN(ratio) {
			for i, ax := range a.axes {
				if in[ax] == 0 {
					continue
				}
				v := ratio * float64(in[ax])
				if v-math.Floor(v) == 0.5 {
					return a, refused("keep_aspect_ratio_policy %s gives axis %d a size of exactly %v, which ONNX's readings round differently", d.policy, ax, v)
				}
				a.scales[i], a.sizes[i] = ratio, int(math.Floor(v+0.5))
			}
		}
		for i, s := range a.sizes {
			if s == 0 {
				a.scales[i] = 1 // no output position reads it
			}
		}
	} else {
		for i, ax := range a.axes {
			s := target.Float64At(i)
			if !(s > 0) || math.IsInf(s, 0) {
				return a, fmt.Errorf("scale %v for axis %d is not a positive number", s, ax)
			}
			if d.whole && (s != math.Trunc(s) || s < 1) {
				return a, fmt.Errorf("scale %v for axis %d is not a whole number >= 1", s, ax)
			}
			v := math.Floor(s * float64(in[ax]))
			if v > 1<<40 {
				return a, fmt.Errorf("scale %v makes axis %d of size %d too large", s, ax, in[ax])
			}
			a.scales[i], a.sizes[i] = s, int(v)
		}
	}
	if roi != nil {
		a.roi = make([]float64, roi.Len())
		for i := range a.roi {
			a.roi[i] = roi.Float64At(i)
		}
	}
	if a.spec.Mode == kernels.ResizeCubic && a.spec.Transform == kernels.PytorchHalfPixel {
		for i, ax := range a.axes {
			if in[ax] > 0 && a.sizes[i] > 0 && a.scales[i]*float64(in[ax]) <= 1 {
				return a, refused("cubic pytorch_half_pixel resizing of axis %d to a length of at most 1: ONNX's text reads coordinate 0 there, its reference −0.5", ax)
			}
		}
	}
	return a, a.check()
}

// operands splits a kernel's operands after x (or dy and x) into target
// and roi.
func (d resizeDyn) operands(rest []*tensor.Tensor) (target, roi *tensor.Tensor) {
	if d.crop() {
		return rest[0], rest[1]
	}
	return rest[0], nil
}

func resizeDynBind(op *ir.Op) (Kernel, error) {
	d, err := resizeDynDecode(op.Attrs, op.Operand(0).Type().Rank())
	if err != nil {
		return nil, err
	}
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		target, roi := d.operands(in[1:])
		a, err := d.resolve(x.Shape(), target, roi)
		if err != nil {
			return nil, fmt.Errorf("x %s: %w", x.Type(), err)
		}
		dims, err := a.outDims(x.Shape())
		if err != nil {
			return nil, fmt.Errorf("x %s: %w", x.Type(), err)
		}
		return a.run(c, x, dims)
	}, nil
}

// ResizeDyn appends a resizing of x along axes to the scales or sizes
// (by) that target holds at run time, with roi for tf_crop_and_resize
// (nil otherwise; o.ROI is not read), policy ONNX's
// keep_aspect_ratio_policy ("" for the default) and wholeScales wanting
// whole factors.
func ResizeDyn(b *ir.Builder, x, target, roi *ir.Value, axes []int, by string, o ResizeOptions, policy string, wholeScales bool) *ir.Value {
	attrs := ir.A("axes", axes, "by", by)
	for _, s := range []struct{ name, v string }{
		{"mode", o.Mode}, {"coordinate_transformation_mode", o.CoordinateTransformationMode},
		{"nearest_mode", o.NearestMode}, {"keep_aspect_ratio_policy", policy},
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
	if wholeScales {
		attrs = attrs.With("whole_scales", ir.Bool(true))
	}
	operands := []*ir.Value{x, target}
	if roi != nil {
		operands = append(operands, roi)
	}
	return b.Op1("resize_dyn", attrs, operands...)
}

// resizeDynNoFloatGrad refuses gradients with respect to float scales or
// roi (operands from first on).
func resizeDynNoFloatGrad(g *GradContext, first int) error {
	for i := first; i < g.Op.NumOperands(); i++ {
		if g.Need(i) {
			return fmt.Errorf("gradients of %s with respect to its scales or roi are not implemented", g.Op.Name())
		}
	}
	return nil
}

// resizeDynGrad: resize_dyn_grad with x for its shape.
func resizeDynGrad(g *GradContext) ([]*ir.Value, error) {
	if err := resizeDynNoFloatGrad(g, 1); err != nil {
		return nil, err
	}
	dx := make([]*ir.Value, g.Op.NumOperands())
	if !g.Need(0) {
		return dx, nil
	}
	operands := []*ir.Value{g.DY[0]}
	for i := range g.Op.NumOperands() {
		operands = append(operands, g.X(i))
	}
	dx[0] = g.B.Op1("resize_dyn_grad", g.Op.Attrs, operands...)
	return dx, nil
}

func resizeDynInferGrad(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if len(in) < 3 {
		return nil, fmt.Errorf("takes dy, x, then scales or sizes (and roi)")
	}
	dy, x := in[0], in[1]
	if err := nnWantFloat("dy", dy); err != nil {
		return nil, err
	}
	if x.Rank() != dy.Rank() {
		return nil, fmt.Errorf("x %s must have the rank of dy %s", x, dy)
	}
	d, err := resizeDynDecode(attrs, dy.Rank())
	if err != nil {
		return nil, err
	}
	if err := d.checkOperands(in[2:]); err != nil {
		return nil, err
	}
	for i, n := range d.dims(x.Dims) {
		if !nnDimEq(n, dy.Dims[i]) {
			return nil, fmt.Errorf("dy %s and x %s differ in dim %d, which is not resized", dy, x, i)
		}
	}
	return []ir.Type{ir.TensorOf(dy.DType, x.Dims...)}, nil
}

func resizeDynBindGrad(op *ir.Op) (Kernel, error) {
	d, err := resizeDynDecode(op.Attrs, op.Operand(0).Type().Rank())
	if err != nil {
		return nil, err
	}
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		dy, x := in[0], in[1]
		target, roi := d.operands(in[2:])
		a, err := d.resolve(x.Shape(), target, roi)
		if err != nil {
			return nil, fmt.Errorf("x %s: %w", x.Type(), err)
		}
		want, err := a.outDims(x.Shape())
		if err != nil {
			return nil, fmt.Errorf("x %s: %w", x.Type(), err)
		}
		if !slices.Equal(want, dy.Shape()) {
			return nil, fmt.Errorf("dy %s does not have the shape %v of resize_dyn's output for x %s", dy.Type(), want, x.Type())
		}
		return a.runGrad(c, dy, x.Shape())
	}, nil
}

// resizeDynGradGrad: resize_dyn_grad is linear in dy, the adjoint of
// resize_dyn without extrapolation_value, so its gradient is that.
func resizeDynGradGrad(g *GradContext) ([]*ir.Value, error) {
	if err := resizeDynNoFloatGrad(g, 2); err != nil {
		return nil, err
	}
	dx := make([]*ir.Value, g.Op.NumOperands())
	if !g.Need(0) {
		return dx, nil
	}
	var attrs ir.Attrs
	for _, a := range g.Op.Attrs {
		if a.Name != "extrapolation_value" {
			attrs = append(attrs, a)
		}
	}
	operands := []*ir.Value{g.DY[0]}
	for i := 2; i < g.Op.NumOperands(); i++ {
		operands = append(operands, g.X(i))
	}
	dx[0] = g.B.Op1("resize_dyn", attrs, operands...)
	return dx, nil
}
