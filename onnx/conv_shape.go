package onnx

import (
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Shape ops, constants and shape arithmetic. Where an op takes a shape,
// axes or indices as an input (ONNX moved many attributes to inputs in
// opset 13), the input must be known when the program is built: a
// constant, an initializer, or computed from static shapes.

func init() {
	register(convIdentity, "Identity")
	register(convConstant, "Constant")
	register(convShape, "Shape")
	register(convSize, "Size")
	register(convReshape, "Reshape")
	register(convFlatten, "Flatten")
	register(convTranspose, "Transpose")
	register(convSqueeze, "Squeeze", "Unsqueeze")
	register(convConcat, "Concat")
	register(convSplit, "Split")
	register(convGather, "Gather")
	register(convSlice, "Slice")
	register(convExpand, "Expand")
	register(convConstantOfShape, "ConstantOfShape")
	register(convRange, "Range")
}

// convIdentity passes its input on: the same value, no copy.
func convIdentity(n *node) ([]*value, error) { return []*value{n.in[0]}, nil }

// convConstant: the value is known at import time.
func convConstant(n *node) ([]*value, error) {
	var t *tensor.Tensor
	switch {
	case n.HasAttr("value"):
		t = n.Tensor("value")
	case n.HasAttr("value_float"):
		t = n.knownScalar(tensor.F32, n.Float("value_float", 0))
	case n.HasAttr("value_int"):
		t = n.knownScalar(tensor.I64, float64(n.Int("value_int", 0)))
	case n.HasAttr("value_floats"):
		t = n.knownF64s(tensor.F32, n.Floats("value_floats"))
	case n.HasAttr("value_ints"):
		vs := n.Ints("value_ints")
		fs := make([]float64, len(vs))
		for i, v := range vs {
			fs[i] = float64(v)
		}
		t = n.knownF64s(tensor.I64, fs)
	case n.HasAttr("sparse_value"):
		return nil, n.unsupported("sparse_value")
	default:
		return nil, n.unsupported("a Constant without a value")
	}
	if t == nil {
		return nil, n.err
	}
	return []*value{{known: t}}, nil
}

// knownScalar makes a known rank-0 value.
func (n *node) knownScalar(dt tensor.DType, v float64) *tensor.Tensor {
	t, err := tensor.Scalar(n.im.host, dt, v)
	if err != nil {
		n.fail("%v", err)
		return nil
	}
	return n.im.keep(t)
}

// knownF64s makes a known 1-D value of dt from vs.
func (n *node) knownF64s(dt tensor.DType, vs []float64) *tensor.Tensor {
	t, err := tensor.New(n.im.host, dt, len(vs))
	if err != nil {
		n.fail("%v", err)
		return nil
	}
	for i, v := range vs {
		t.SetFloat64At(i, v)
	}
	return n.im.keep(t)
}

// knownI64s makes a known 1-D i64 value.
func (n *node) knownI64s(vs []int64) *value {
	t, err := tensor.FromI64(n.im.host, vs, len(vs))
	if err != nil {
		n.fail("%v", err)
		return nil
	}
	return &value{known: n.im.keep(t)}
}

// convShape: the shape of a tensor of static type is known; start and end
// (opset 15) slice it.
func convShape(n *node) ([]*value, error) {
	t := n.Type(0)
	if t.IsStack() {
		return nil, n.unsupported("the shape of a sequence")
	}
	r := int64(t.Rank())
	start, end := n.Int("start", 0), n.Int("end", r)
	clamp := func(i int64) int64 {
		if i < 0 {
			i += r
		}
		return max(0, min(r, i))
	}
	start, end = clamp(start), clamp(end)
	var dims []int64
	for i := start; i < end; i++ {
		if t.Dims[i] == ir.Dynamic {
			return nil, n.unsupported("the shape of %s, which has dynamic dims, at run time", t)
		}
		dims = append(dims, int64(t.Dims[i]))
	}
	if dims == nil {
		dims = []int64{}
	}
	return []*value{n.knownI64s(dims)}, nil
}

func convSize(n *node) ([]*value, error) {
	t := n.Type(0)
	if !t.IsStatic() {
		return nil, n.unsupported("the size of %s, which has dynamic dims, at run time", t)
	}
	s, err := tensor.Scalar(n.im.host, tensor.I64, float64(t.NumElements()))
	if err != nil {
		return nil, err
	}
	return []*value{{known: n.im.keep(s)}}, nil
}

// convReshape: ONNX's 0 copies the input's dim (unless allowzero), -1 is
// inferred.
func convReshape(n *node) ([]*value, error) {
	x := n.In(0)
	var shape []int64
	if n.Opset() < 5 {
		shape = n.Ints("shape")
	} else {
		var ok bool
		if shape, ok = n.KnownInts(1); !ok {
			return nil, n.unsupported("a shape computed at run time")
		}
	}
	allowZero := n.Int("allowzero", 0) != 0
	dims := x.Type().Dims
	out := make([]int, len(shape))
	for i, d := range shape {
		switch {
		case d == 0 && !allowZero:
			if i >= len(dims) {
				n.fail("shape %v copies dim %d of an input of rank %d", shape, i, len(dims))
				return nil, nil
			}
			if dims[i] == ir.Dynamic {
				return nil, n.unsupported("copying the dynamic dim %d of %s", i, x.Type())
			}
			out[i] = dims[i]
		default:
			out[i] = int(d)
		}
	}
	return outv(ops.Reshape(n.b, x, out...)), nil
}

// outv wraps one program value as the node's only output.
func outv(v *ir.Value) []*value { return out(v) }

// convFlatten: a 2-D view, dims before axis times dims from axis.
func convFlatten(n *node) ([]*value, error) {
	x := n.In(0)
	r := x.Type().Rank()
	axis := n.Int("axis", 1)
	if axis < 0 {
		axis += int64(r)
	}
	if axis < 0 || axis > int64(r) {
		n.fail("axis %d is out of range for rank %d", n.Int("axis", 1), r)
		return nil, nil
	}
	a := int(axis)
	switch {
	case a == 0:
		return outv(ops.Flatten(n.b, ops.Unsqueeze(n.b, x, 0), 1, r)), nil
	case a == r:
		return outv(ops.Flatten(n.b, ops.Unsqueeze(n.b, x, r), 0, r-1)), nil
	}
	y := x
	if a < r-1 {
		y = ops.Flatten(n.b, y, a, r-1)
	}
	if a > 1 {
		y = ops.Flatten(n.b, y, 0, a-1)
	}
	if y == x {
		y = ops.Assign(n.b, x)
	}
	return outv(y), nil
}

func convTranspose(n *node) ([]*value, error) {
	x := n.In(0)
	r := x.Type().Rank()
	perm := n.Ints("perm")
	if perm == nil {
		for i := r - 1; i >= 0; i-- {
			perm = append(perm, int64(i))
		}
	}
	return outv(ops.Transpose(n.b, x, n.ints(perm)...)), nil
}

// convSqueeze: axes are an attribute before opset 13 and an input after;
// Squeeze without axes drops every size-1 dim of a static shape.
func convSqueeze(n *node) ([]*value, error) {
	x := n.In(0)
	var axes []int64
	if n.Opset() < 13 {
		axes = n.Ints("axes")
	} else if n.Has(1) {
		var ok bool
		if axes, ok = n.KnownInts(1); !ok {
			return nil, n.unsupported("axes computed at run time")
		}
	}
	r := x.Type().Rank()
	if n.p.GetOpType() == "Unsqueeze" {
		r += len(axes)
	}
	ax := make([]int, len(axes))
	for i, a := range axes {
		ax[i] = n.axis(a, r)
	}
	if n.p.GetOpType() == "Unsqueeze" {
		return outv(ops.Unsqueeze(n.b, x, ax...)), nil
	}
	if axes == nil {
		for i, d := range x.Type().Dims {
			if d == ir.Dynamic {
				return nil, n.unsupported("squeezing every size-1 dim of %s, whose dims are not all known", x.Type())
			}
			if d == 1 {
				ax = append(ax, i)
			}
		}
	}
	return outv(ops.Squeeze(n.b, x, ax...)), nil
}

func convConcat(n *node) ([]*value, error) {
	ins := n.Ins()
	axis := n.axis(n.Int("axis", 0), ins[0].Type().Rank())
	return outv(ops.Concat(n.b, axis, ins...)), nil
}

// convSplit: into the given sizes (attribute before 13, input after), or
// into num_outputs (18) or as many equal parts as there are outputs.
func convSplit(n *node) ([]*value, error) {
	x := n.In(0)
	t := x.Type()
	axis := n.axis(n.Int("axis", 0), t.Rank())
	var split []int64
	if n.Opset() < 13 {
		split = n.Ints("split")
	} else if n.Has(1) {
		var ok bool
		if split, ok = n.KnownInts(1); !ok {
			return nil, n.unsupported("split sizes computed at run time")
		}
	}
	outs := len(n.p.GetOutput())
	n.Int("num_outputs", int64(outs))
	if split == nil {
		d := t.Dims[axis]
		if d == ir.Dynamic {
			return nil, n.unsupported("splitting the dynamic dim %d of %s into equal parts", axis, t)
		}
		part := (d + outs - 1) / outs
		for i := range outs {
			split = append(split, int64(min(part, d-i*part)))
		}
	}
	parts := ops.Split(n.b, x, axis, n.ints(split)...)
	return out(parts...), nil
}

func convGather(n *node) ([]*value, error) {
	x := n.In(0)
	axis := n.axis(n.Int("axis", 0), x.Type().Rank())
	return outv(ops.Gather(n.b, x, n.In(1), axis)), nil
}

// convSlice: starts, ends, axes and steps are attributes before opset 10
// and inputs after; ONNX's clamping is numpy's.
func convSlice(n *node) ([]*value, error) {
	x := n.In(0)
	r := x.Type().Rank()
	var starts, ends, axes, steps []int64
	if n.Opset() < 10 {
		starts, ends, axes = n.Ints("starts"), n.Ints("ends"), n.Ints("axes")
	} else {
		var ok bool
		if starts, ok = n.KnownInts(1); !ok {
			return nil, n.unsupported("starts computed at run time")
		}
		if ends, ok = n.KnownInts(2); !ok {
			return nil, n.unsupported("ends computed at run time")
		}
		if n.Has(3) {
			if axes, ok = n.KnownInts(3); !ok {
				return nil, n.unsupported("axes computed at run time")
			}
		}
		if n.Has(4) {
			if steps, ok = n.KnownInts(4); !ok {
				return nil, n.unsupported("steps computed at run time")
			}
		}
	}
	if axes == nil {
		for i := range starts {
			axes = append(axes, int64(i))
		}
	}
	if steps == nil {
		for range starts {
			steps = append(steps, 1)
		}
	}
	if len(ends) != len(starts) || len(axes) != len(starts) || len(steps) != len(starts) {
		n.fail("starts, ends, axes and steps have lengths %d, %d, %d and %d", len(starts), len(ends), len(axes), len(steps))
		return nil, nil
	}
	ax := make([]int, len(axes))
	for i, a := range axes {
		ax[i] = n.axis(a, r)
	}
	clampInt := func(v int64) int {
		const lim = 1 << 62
		return int(max(-lim, min(lim, v)))
	}
	st, en, sp := make([]int, len(starts)), make([]int, len(ends)), make([]int, len(steps))
	for i := range starts {
		st[i], en[i], sp[i] = clampInt(starts[i]), clampInt(ends[i]), clampInt(steps[i])
	}
	return outv(ops.SliceStrided(n.b, x, ax, st, en, sp)), nil
}

// convExpand: numpy broadcasting of the input against the shape, both ways
// (a 1 in the shape keeps the input's dim).
func convExpand(n *node) ([]*value, error) {
	x := n.In(0)
	shape, ok := n.KnownInts(1)
	if !ok {
		return nil, n.unsupported("a shape computed at run time")
	}
	dims := x.Type().Dims
	r := max(len(dims), len(shape))
	target := make([]int, r)
	for i := range r {
		s := int64(1)
		if j := i - (r - len(shape)); j >= 0 {
			s = shape[j]
		}
		switch {
		case s != 1:
			target[i] = int(s)
		case i >= r-len(dims):
			target[i] = -1 // keep the input's dim (ops.Expand's -1)
		default:
			target[i] = 1
		}
	}
	y := x
	if len(dims) < r {
		lead := make([]int, r-len(dims))
		for i := range lead {
			lead[i] = i
		}
		y = ops.Unsqueeze(n.b, y, lead...)
	}
	return outv(ops.Expand(n.b, y, target...)), nil
}

// convConstantOfShape: a tensor of the known shape filled with the value
// attribute's one element (0.0 f32 by default).
func convConstantOfShape(n *node) ([]*value, error) {
	shape, ok := n.KnownInts(0)
	if !ok {
		return nil, n.unsupported("a shape computed at run time")
	}
	dt, v := ir.F32, 0.0
	if t := n.Tensor("value"); t != nil {
		if t.Len() != 1 {
			n.fail("value has %d elements, want 1", t.Len())
			return nil, nil
		}
		dt, v = ir.DType(t.DType()), t.Float64At(0)
	}
	return outv(ops.Full(n.b, dt, v, n.ints(shape)...)), nil
}

// convRange: start, limit and delta are scalars; known ones give a
// constant.
func convRange(n *node) ([]*value, error) {
	start, ok1 := n.KnownFloats(0)
	limit, ok2 := n.KnownFloats(1)
	delta, ok3 := n.KnownFloats(2)
	if !ok1 || !ok2 || !ok3 {
		return nil, n.unsupported("bounds computed at run time")
	}
	dt := n.Type(0).DType
	return outv(ops.Arange(n.b, dt, start[0], limit[0], delta[0])), nil
}
