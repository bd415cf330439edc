package onnx

import (
	"math"
	"slices"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Resize and Upsample, as gopir's resize op when the scales or sizes
// (and the region of interest) are known when the program is built and
// the resized dims are static, else as resize_dyn, which reads them at
// run time (and fails a run where ONNX's readings disagree on the
// result); and GridSample.

func init() {
	register(convResize, "Resize")
	register(convUpsample, "Upsample")
	register(convGridSample, "GridSample")
}

// resizeTransforms are the coordinate transformation modes the resize op
// implements.
var resizeTransforms = []string{"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"}

func convResize(n *node) ([]*value, error) {
	if n.Opset() < 11 {
		return n.upsample("Resize")
	}
	x := n.In(0)
	xt := x.Type()
	r := n.rank(0)
	o := ops.ResizeOptions{
		Mode:                         n.String("mode", "nearest"),
		CoordinateTransformationMode: n.String("coordinate_transformation_mode", "half_pixel"),
		NearestMode:                  n.String("nearest_mode", "round_prefer_floor"),
		CubicCoeffA:                  n.Float("cubic_coeff_a", -0.75),
		ExcludeOutside:               n.Int("exclude_outside", 0) != 0,
		ExtrapolationValue:           n.Float("extrapolation_value", 0),
	}
	if n.Int("antialias", 0) != 0 {
		return nil, n.unsupported("antialias")
	}
	policy := n.String("keep_aspect_ratio_policy", "stretch")
	if !slices.Contains([]string{"nearest", "linear", "cubic"}, o.Mode) {
		return nil, n.unsupported("mode %q", o.Mode)
	}
	if !slices.Contains(resizeTransforms, o.CoordinateTransformationMode) {
		return nil, n.unsupported("coordinate_transformation_mode %q", o.CoordinateTransformationMode)
	}
	if !slices.Contains([]string{"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}, o.NearestMode) {
		return nil, n.unsupported("nearest_mode %q", o.NearestMode)
	}
	if !xt.DType.IsFloat() {
		return nil, n.unsupported("resizing %s", xt)
	}
	var axes []int
	if as := n.Ints("axes"); as != nil {
		for _, a := range as {
			ax := n.axis(a, r)
			if slices.Contains(axes, ax) {
				n.fail("axes %v repeat axis %d", as, ax)
			}
			axes = append(axes, ax)
		}
	} else {
		for i := range r {
			axes = append(axes, i)
		}
	}
	k := len(axes)
	crop := o.CoordinateTransformationMode == "tf_crop_and_resize"
	// Scales, sizes or roi computed at run time: resize_dyn reads them.
	runTime := func(i int) bool {
		_, ok := n.Known(i)
		return n.Has(i) && !ok
	}
	if runTime(2) || runTime(3) || crop && runTime(1) {
		return n.resizeDyn(x, axes, o, policy)
	}
	known := func(i int) ([]float64, bool) {
		v, _ := n.KnownFloats(i)
		return v, len(v) > 0
	}
	var roi []float64
	if crop {
		var hasROI bool
		if roi, hasROI = known(1); !hasROI || len(roi) != 2*k {
			n.fail("tf_crop_and_resize needs roi with %d numbers, got %v", 2*k, roi)
			return nil, nil
		}
	}
	scales, hasScales := known(2)
	sizes, hasSizes := known(3)
	switch {
	case hasScales == hasSizes:
		n.fail("Resize needs exactly one of scales and sizes")
		return nil, nil
	case hasScales && len(scales) != k, hasSizes && len(sizes) != k:
		n.fail("scales %v or sizes %v do not have %d entries", scales, sizes, k)
		return nil, nil
	}
	if n.err != nil {
		return nil, nil
	}
	in := make([]int, k)
	for i, a := range axes {
		in[i] = xt.Dims[a]
	}
	scale, size := make([]float64, k), make([]int, k)
	if hasSizes {
		ratio := math.NaN()
		for i := range k {
			size[i] = int(sizes[i])
			if in[i] == ir.Dynamic {
				return n.resizeDyn(x, axes, o, policy)
			}
			scale[i] = float64(size[i]) / float64(in[i])
			switch {
			case policy == "not_larger" && !(scale[i] >= ratio):
				ratio = scale[i]
			case policy == "not_smaller" && !(scale[i] <= ratio):
				ratio = scale[i]
			}
		}
		switch policy {
		case "stretch":
		case "not_larger", "not_smaller":
			for i := range k {
				scale[i] = ratio
				v := ratio * float64(in[i])
				if v-math.Floor(v) == 0.5 {
					// Readings of ONNX's round_int differ on halves.
					return nil, n.unsupported("keep_aspect_ratio_policy %s with a size of exactly %v", policy, v)
				}
				size[i] = int(math.Floor(v + 0.5))
			}
		default:
			return nil, n.unsupported("keep_aspect_ratio_policy %q", policy)
		}
	} else {
		for i := range k {
			scale[i] = scales[i]
			if !(scale[i] > 0) || math.IsInf(scale[i], 0) {
				n.fail("scales %v: a scale is not a positive number", scales)
				return nil, nil
			}
			switch {
			case in[i] != ir.Dynamic:
				size[i] = int(math.Floor(scale[i] * float64(in[i])))
			case scale[i] != 1:
				return n.resizeDyn(x, axes, o, policy)
			default:
				size[i] = ir.Dynamic
			}
		}
	}
	// Keep the axes that change, or whose positions move.
	var opAxes, opSizes []int
	var opScales, starts, ends []float64
	for i, a := range axes {
		r0, r1 := 0.0, 1.0
		if crop {
			r0, r1 = roi[i], roi[k+i]
		}
		if scale[i] == 1 && (size[i] == in[i]) && identityTransform(o, r0, r1) {
			continue
		}
		if in[i] == ir.Dynamic {
			return n.resizeDyn(x, axes, o, policy)
		}
		if o.Mode == "cubic" && o.CoordinateTransformationMode == "pytorch_half_pixel" && scale[i]*float64(in[i]) <= 1 {
			// ONNX's spec reads coordinate 0 there, its reference −0.5.
			return nil, n.unsupported("cubic pytorch_half_pixel resizing to a length of at most 1")
		}
		opAxes, opSizes, opScales = append(opAxes, a), append(opSizes, size[i]), append(opScales, scale[i])
		starts, ends = append(starts, r0), append(ends, r1)
	}
	if opAxes == nil {
		return []*value{n.in[0]}, nil
	}
	if crop {
		o.ROI = append(starts, ends...)
	}
	return outv(ops.Resize(n.b, x, opAxes, opSizes, opScales, o)), nil
}

// resizeDyn resizes x along axes with resize_dyn, which reads the scales
// or sizes (and roi) at run time: for values computed at run time, and
// for known ones along dynamic dims.
func (n *node) resizeDyn(x *ir.Value, axes []int, o ops.ResizeOptions, policy string) ([]*value, error) {
	k := len(axes)
	absent := func(i int) bool {
		if !n.Has(i) {
			return true
		}
		if v, ok := n.Known(i); ok && v.Len() == 0 {
			return true
		}
		t := n.Type(i)
		return t.Rank() == 1 && t.Dims[0] == 0
	}
	var target *ir.Value
	by := "scales"
	switch {
	case absent(2) && absent(3):
		n.fail("Resize needs one of scales and sizes")
	case !absent(2) && !absent(3):
		if _, ok := n.Known(2); ok {
			n.fail("Resize needs exactly one of scales and sizes")
			break
		}
		return nil, n.unsupported("scales and sizes both given and computed at run time (one must be empty)")
	case !absent(3):
		by, target = "sizes", n.In(3)
	default:
		target = n.In(2)
		policy = "" // it applies to sizes only
	}
	if n.err != nil {
		return nil, nil
	}
	t := target.Type()
	switch {
	case t.IsStack() || t.Rank() != 1 || (by == "sizes") != t.DType.IsInt() || (by == "scales") != t.DType.IsFloat():
		n.fail("%s %s is not a 1-D tensor of the right type", by, t)
	case t.Dims[0] != ir.Dynamic && t.Dims[0] != k:
		n.fail("%s %s does not have %d entries", by, t, k)
	}
	switch policy {
	case "", "not_larger", "not_smaller":
	case "stretch":
		policy = ""
	default:
		return nil, n.unsupported("keep_aspect_ratio_policy %q", policy)
	}
	var roi *ir.Value
	if o.CoordinateTransformationMode == "tf_crop_and_resize" {
		if !n.Has(1) {
			n.fail("tf_crop_and_resize needs roi")
			return nil, nil
		}
		roi = n.In(1)
		if t := roi.Type(); t.IsStack() || t.Rank() != 1 || !t.DType.IsFloat() || t.Dims[0] != ir.Dynamic && t.Dims[0] != 2*k {
			n.fail("tf_crop_and_resize needs roi with %d numbers, got %s", 2*k, t)
		}
	}
	if n.err != nil {
		return nil, nil
	}
	return outv(ops.ResizeDyn(n.b, x, target, roi, axes, by, o, policy, false)), nil
}

// identityTransform reports whether o maps each position of an axis with
// scale 1 and an unchanged size onto itself, whatever its size.
func identityTransform(o ops.ResizeOptions, roiStart, roiEnd float64) bool {
	switch o.CoordinateTransformationMode {
	case "tf_crop_and_resize":
		return roiStart == 0 && roiEnd == 1
	case "tf_half_pixel_for_nn": // position + ½
		return o.Mode == "nearest" && (o.NearestMode == "round_prefer_floor" || o.NearestMode == "floor")
	}
	return true
}

// convUpsample: Upsample (opsets 7 and 9, scales as an attribute then an
// input) and Resize of opset 10, which share its rules.
func convUpsample(n *node) ([]*value, error) { return n.upsample("Upsample") }

// upsample resizes by scales to ⌊in·scale⌋. These opsets leave the
// coordinates unspecified but for what every reading agrees on: nearest
// upsampling by whole factors (output position o reads o/scale rounded
// down). Linear modes and other factors are refused.
func (n *node) upsample(what string) ([]*value, error) {
	x := n.In(0)
	xt := x.Type()
	mode := n.String("mode", "nearest")
	var scales []float64
	var runTime bool
	if n.Opset() < 9 {
		scales = n.Floats("scales")
	} else {
		scales, runTime = n.KnownFloats(1)
		runTime = !runTime
	}
	if mode != "nearest" {
		return nil, n.unsupported("%s mode %q (its coordinate convention is unspecified before opset 11)", what, mode)
	}
	if !xt.DType.IsFloat() {
		return nil, n.unsupported("resizing %s", xt)
	}
	o := ops.ResizeOptions{CoordinateTransformationMode: "asymmetric", NearestMode: "floor"}
	all := make([]int, xt.Rank())
	for i := range all {
		all[i] = i
	}
	if runTime {
		if t := n.Type(1); t.IsStack() || t.Rank() != 1 || !t.DType.IsFloat() || t.Dims[0] != ir.Dynamic && t.Dims[0] != xt.Rank() {
			n.fail("scales %s do not fit input %s", t, xt)
			return nil, nil
		}
		return outv(ops.ResizeDyn(n.b, x, n.In(1), nil, all, "scales", o, "", true)), nil
	}
	if len(scales) != xt.Rank() {
		n.fail("scales %v do not fit input %s", scales, xt)
		return nil, nil
	}
	var axes, sizes []int
	var fs []float64
	for i, s := range scales {
		if s == 1 {
			continue
		}
		if s != math.Trunc(s) || s < 1 {
			return nil, n.unsupported("%s by %v (only whole factors are unambiguous before opset 11)", what, s)
		}
		if xt.Dims[i] == ir.Dynamic {
			t, err := tensor.FromF64(n.im.host, scales, len(scales))
			if err != nil {
				return nil, err
			}
			return outv(ops.ResizeDyn(n.b, x, ops.ConstantOf(n.b, n.im.keep(t)), nil, all, "scales", o, "", true)), nil
		}
		axes, sizes, fs = append(axes, i), append(sizes, int(s)*xt.Dims[i]), append(fs, s)
	}
	if axes == nil {
		return []*value{n.in[0]}, nil
	}
	return outv(ops.Resize(n.b, x, axes, sizes, fs, o)), nil
}

// convGridSample: 2-D GridSample (opset 16; opset 20's N-d inputs are
// refused and its mode names linear and cubic read as bilinear and
// bicubic).
func convGridSample(n *node) ([]*value, error) {
	x, grid := n.In(0), n.In(1)
	mode := n.String("mode", "bilinear")
	switch mode {
	case "linear":
		mode = "bilinear"
	case "cubic":
		mode = "bicubic"
	}
	pad := n.String("padding_mode", "zeros")
	align := n.Int("align_corners", 0) != 0
	if r := x.Type().Rank(); r != 4 {
		return nil, n.unsupported("%d-D grid sampling", r-2)
	}
	if !slices.Contains([]string{"bilinear", "nearest", "bicubic"}, mode) {
		return nil, n.unsupported("mode %q", mode)
	}
	if !slices.Contains([]string{"zeros", "border", "reflection"}, pad) {
		return nil, n.unsupported("padding_mode %q", pad)
	}
	if xt, gt := x.Type(), grid.Type(); !xt.DType.IsFloat() || gt.DType != xt.DType {
		return nil, n.unsupported("grid sampling of %s at the points of %s", xt, gt)
	}
	return outv(ops.GridSample(n.b, x, grid, mode, pad, align)), nil
}
