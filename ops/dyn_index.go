package ops

import (
	"fmt"
	"slices"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Slicing and splitting with bounds and sizes read at run time (the
// static slice and split take them as attributes).
//
//	slice_dyn {dims?} (x, starts, ends[, axes[, steps]])
//	                    -> copy of x[start:end:step] along each listed axis
//	slice_dyn_grad {shape} (dy, starts, ends[, axes[, steps]])
//	slice_dyn_grad (dy, like, starts, ends[, axes[, steps]])
//	                    -> zeros of shape (or like's shape) with dy written
//	                       where slice_dyn reads
//	split_dyn {axis} (x, sizes) -> len(sizes) consecutive pieces of x along axis
//
// starts, ends, axes and steps are 1-D i32 or i64 operands of one length:
// axes default to 0, 1, ... and steps to 1; axes are distinct and may be
// negative; a step is not 0. The bounds follow numpy (and ONNX's
// reference): negative ones count from the end and out-of-range ones are
// clamped. slice_dyn's result has x's rank; a dim that no axis can name
// keeps x's size, the others are dynamic unless the dims attribute (the
// result dims the builder knows, -1 for unknown, checked at run time)
// says. sizes is 1-D i32 or i64 of static length (the number of results),
// each >= 0, adding up to x's size along axis.
//
// slice_dyn_grad's result has the shape attribute's or like's shape, so
// the executor allocates it (Compute); slice_dyn and split_dyn read their
// results' shapes from operand values and allocate them (Bind).
//
// Gradients: slice_dyn writes dy into zeros of x's shape (slice_dyn_grad,
// from x's static shape when it has one), slice_dyn_grad's adjoint is
// slice_dyn, and split_dyn concatenates the result gradients (zeros for
// those without one).

func init() {
	register(&Def{Name: "slice_dyn", Infer: dynInferSlice, Bind: dynBindSlice, Grad: dynGradSlice})
	register(&Def{Name: "slice_dyn_grad", Infer: dynInferSliceGrad, Compute: dynComputeSliceGrad, Grad: dynGradSliceGrad})
	register(&Def{Name: "split_dyn", Infer: dynInferSplit, Bind: dynBindSplit, Grad: dynGradSplit})
}

// ---- slice_dyn ----

// dynSliceOperands checks the index operands of slice_dyn (starts, ends
// and optional axes and steps) and returns their common length, or
// ir.Dynamic when none is static.
func dynSliceOperands(in []ir.Type) (int, error) {
	if len(in) < 2 || len(in) > 4 {
		return 0, fmt.Errorf("takes starts, ends and optional axes and steps; got %d index operands", len(in))
	}
	n := ir.Dynamic
	for i, t := range in {
		what := []string{"starts", "ends", "axes", "steps"}[i]
		if !t.DType.IsInt() || t.Rank() != 1 {
			return 0, fmt.Errorf("%s %s must be a 1-D i32 or i64 tensor", what, t)
		}
		switch d := t.Dims[0]; {
		case d == ir.Dynamic:
		case n == ir.Dynamic:
			n = d
		case d != n:
			return 0, fmt.Errorf("%s %s differs in length from %s", what, t, in[0])
		}
	}
	return n, nil
}

// dynSliceDims is slice_dyn's result dims for operand dims: the dims that
// an axis can name are dynamic.
func dynSliceDims(dims []int, n int, hasAxes bool) ([]int, error) {
	out := slices.Clone(dims)
	switch {
	case hasAxes || n == ir.Dynamic:
		n = len(dims)
	case n > len(dims):
		return nil, fmt.Errorf("%d starts without axes for an operand of rank %d", n, len(dims))
	}
	for i := range n {
		out[i] = ir.Dynamic
	}
	return out, nil
}

func dynInferSlice(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if len(in) < 3 || len(in) > 5 {
		return nil, fmt.Errorf("takes 3 to 5 operands (x, starts, ends, axes, steps), got %d", len(in))
	}
	n, err := dynSliceOperands(in[1:])
	if err != nil {
		return nil, err
	}
	dims, err := dynSliceDims(in[0].Dims, n, len(in) > 3)
	if err != nil {
		return nil, err
	}
	if dims, err = dynRefine(attrs, dims); err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(in[0].DType, dims...)}, nil
}

// dynSliceLimit bounds slice indices, so that adding a dim cannot
// overflow; larger ones clamp the same.
const dynSliceLimit = 1 << 62

// dynSliceSpec reads the run-time index operands of slice_dyn (starts,
// ends, then optional axes and steps) for an operand of the given rank.
func dynSliceSpec(idx []*tensor.Tensor, rank int) (*shpSliceSpec, error) {
	clamp := func(xs []int) []int {
		for i, x := range xs {
			xs[i] = min(max(x, -dynSliceLimit), dynSliceLimit)
		}
		return xs
	}
	s := &shpSliceSpec{starts: clamp(dynInts(idx[0])), ends: clamp(dynInts(idx[1]))}
	n := len(s.starts)
	if len(idx) > 2 {
		s.axes = dynInts(idx[2])
	} else {
		s.axes = make([]int, n)
		for i := range n {
			s.axes[i] = i
		}
	}
	if len(idx) > 3 {
		s.strides = clamp(dynInts(idx[3]))
	} else {
		s.strides = make([]int, n)
		for i := range n {
			s.strides[i] = 1
		}
	}
	if len(s.ends) != n || len(s.axes) != n || len(s.strides) != n {
		return nil, fmt.Errorf("starts %v, ends %v, axes %v and steps %v differ in length", s.starts, s.ends, s.axes, s.strides)
	}
	if slices.Contains(s.strides, 0) {
		return nil, fmt.Errorf("steps %v: a step is 0", s.strides)
	}
	var err error
	if s.axes, err = shpAxes("axes", s.axes, rank); err != nil {
		return nil, err
	}
	return s, nil
}

func dynBindSlice(op *ir.Op) (Kernel, error) {
	rt := op.Result(0).Type()
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		s, err := dynSliceSpec(in[1:], x.Rank())
		if err != nil {
			return nil, fmt.Errorf("cannot slice %s: %w", x.Type(), err)
		}
		shape, off, strides := s.layout(x.Shape())
		if err := dynCheck(shape, rt); err != nil {
			return nil, fmt.Errorf("cannot slice %s: %w", x.Type(), err)
		}
		y, err := c.New(rt.DType, shape)
		if err != nil {
			return nil, err
		}
		shpStrided(c, y, x, shape, off, strides)
		return []*tensor.Tensor{y}, nil
	}, nil
}

// SliceDyn returns a copy of x[starts:ends:steps] along axes, all read at
// run time from 1-D operands; axes may be nil (0, 1, ...) and steps nil
// (ones), but steps need axes. dims, when not nil, are the result dims the
// caller knows (-1 for unknown), checked at run time.
func SliceDyn(b *ir.Builder, x, starts, ends, axes, steps *ir.Value, dims []int) *ir.Value {
	operands := []*ir.Value{x, starts, ends}
	if axes != nil || steps != nil {
		operands = append(operands, axes) // nil axes with steps: a build error
	}
	if steps != nil {
		operands = append(operands, steps)
	}
	var attrs ir.Attrs
	if dims != nil {
		attrs = ir.A("dims", dims)
	}
	return b.Op1("slice_dyn", attrs, operands...)
}

// dynGradSlice writes dy into zeros of x's shape.
func dynGradSlice(g *GradContext) ([]*ir.Value, error) {
	dx := make([]*ir.Value, g.Op.NumOperands())
	if !g.Need(0) {
		return dx, nil
	}
	operands := []*ir.Value{g.DY[0]}
	var attrs ir.Attrs
	if x := g.Op.Operand(0).Type(); x.IsStatic() {
		attrs = ir.A("shape", x.Dims)
	} else {
		operands = append(operands, g.X(0))
	}
	for i := 1; i < g.Op.NumOperands(); i++ {
		operands = append(operands, g.X(i))
	}
	dx[0] = g.B.Op1("slice_dyn_grad", attrs, operands...)
	return dx, nil
}

// ---- slice_dyn_grad ----

func dynInferSliceGrad(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if len(in) == 0 {
		return nil, fmt.Errorf("takes dy, a like operand or a shape attribute, then starts, ends and optional axes and steps")
	}
	var target []int
	var idx []ir.Type
	if attrs.Has("shape") {
		var err error
		if target, err = shapeAttr(attrs, false); err != nil {
			return nil, err
		}
		idx = in[1:]
	} else {
		if len(in) < 2 {
			return nil, fmt.Errorf("takes dy and a like operand, or a shape attribute")
		}
		target, idx = in[1].Dims, in[2:]
	}
	n, err := dynSliceOperands(idx)
	if err != nil {
		return nil, err
	}
	dy := in[0]
	if dy.Rank() != len(target) {
		return nil, fmt.Errorf("dy %s differs in rank from the target shape %s", dy, dimsString(target))
	}
	want, err := dynSliceDims(target, n, len(idx) > 2)
	if err != nil {
		return nil, err
	}
	for i, d := range dy.Dims {
		if d != ir.Dynamic && want[i] != ir.Dynamic && d != want[i] {
			return nil, fmt.Errorf("dy %s is not the shape %s a slice of %s has", dy, dimsString(want), dimsString(target))
		}
	}
	return []ir.Type{ir.TensorOf(dy.DType, target...)}, nil
}

func dynComputeSliceGrad(op *ir.Op) (Compute, error) {
	first := 2 // the first index operand
	if op.Attrs.Has("shape") {
		first = 1
	}
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		dy, y := in[0], out[0]
		to := y.Shape()
		s, err := dynSliceSpec(in[first:], len(to))
		if err != nil {
			return fmt.Errorf("cannot slice %v: %w", to, err)
		}
		shape, off, strides := s.layout(to)
		if !slices.Equal(shape, dy.Shape()) {
			return fmt.Errorf("dy %s is not the shape %v this slice of %v gives", dy.Type(), shape, to)
		}
		shpScatterInto(c, y, dy, shape, off, strides)
		return nil
	}}, nil
}

// dynGradSliceGrad: slice_dyn_grad is linear in dy and its adjoint is
// slice_dyn with the same index operands.
func dynGradSliceGrad(g *GradContext) ([]*ir.Value, error) {
	dx := make([]*ir.Value, g.Op.NumOperands())
	if !g.Need(0) {
		return dx, nil
	}
	first := 2
	if g.Op.Attrs.Has("shape") {
		first = 1
	}
	operands := []*ir.Value{g.DY[0]}
	for i := first; i < g.Op.NumOperands(); i++ {
		operands = append(operands, g.X(i))
	}
	dx[0] = g.B.Op1("slice_dyn", nil, operands...)
	return dx, nil
}

// ---- split_dyn ----

func dynInferSplit(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 2); err != nil {
		return nil, err
	}
	n, err := dynVector("sizes", in[1])
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("sizes %s is empty", in[1])
	}
	dims := in[0].Dims
	axis, err := shpAxis(attrs, "axis", 0, dims)
	if err != nil {
		return nil, err
	}
	out := make([]ir.Type, n)
	for i := range out {
		t := ir.TensorOf(in[0].DType, dims...)
		t.Dims[axis] = ir.Dynamic
		out[i] = t
	}
	return out, nil
}

func dynBindSplit(op *ir.Op) (Kernel, error) {
	axis, err := shpAxis(op.Attrs, "axis", 0, op.Operand(0).Type().Dims)
	if err != nil {
		return nil, err
	}
	dt := op.Operand(0).Type().DType
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		dims := x.Shape()
		sizes := dynInts(in[1])
		sum := 0
		for _, s := range sizes {
			if s < 0 {
				return nil, fmt.Errorf("cannot split %s: sizes %v must be >= 0", x.Type(), sizes)
			}
			sum += s
		}
		if sum != dims[axis] {
			return nil, fmt.Errorf("cannot split %s along axis %d: sizes %v add up to %d, not %d", x.Type(), axis, sizes, sum, dims[axis])
		}
		outer := shpSize(dims[:axis])
		inner := shpSize(dims[axis+1:])
		outs := make([]*tensor.Tensor, len(sizes))
		widths := make([]int, len(sizes))
		for i, s := range sizes {
			shape := slices.Clone(dims)
			shape[axis] = s
			if outs[i], err = c.New(dt, shape); err != nil {
				shpRelease(outs)
				return nil, err
			}
			widths[i] = s * inner
		}
		switch x.DType().Size() {
		case 1:
			kernels.SplitRows(shpWordsOf[uint8](nil, outs), shpWords[uint8](x), outer, widths, c.Threads)
		case 4:
			kernels.SplitRows(shpWordsOf[uint32](nil, outs), shpWords[uint32](x), outer, widths, c.Threads)
		case 8:
			kernels.SplitRows(shpWordsOf[uint64](nil, outs), shpWords[uint64](x), outer, widths, c.Threads)
		}
		return outs, nil
	}, nil
}

// SplitDyn cuts x along axis into pieces of the sizes held by the 1-D
// operand sizes (one result per element).
func SplitDyn(b *ir.Builder, x, sizes *ir.Value, axis int) []*ir.Value {
	return b.Op("split_dyn", ir.A("axis", axis), x, sizes).Results()
}

// dynGradSplit concatenates the result gradients along the axis.
func dynGradSplit(g *GradContext) ([]*ir.Value, error) {
	if !g.Need(0) {
		return make([]*ir.Value, 2), nil
	}
	axis, err := shpAxis(g.Op.Attrs, "axis", 0, g.Op.Operand(0).Type().Dims)
	if err != nil {
		return nil, err
	}
	return []*ir.Value{shpConcatDYs(g, axis), nil}, nil
}
