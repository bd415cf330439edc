package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// reduce_sum_to sums a broadcast result back to the shape of one of its
// operands: the gradient rule of every broadcasting op ends with it.
//
//	reduce_sum_to (x) {shape}   the target shape, static
//	reduce_sum_to (x, like)     the target is like's shape, read at run time
//
// Leading dims of x that the target lacks are summed away, and so are dims
// where the target has 1 and x does not.

func init() {
	register(&Def{Name: "reduce_sum_to", Infer: inferReduceSumTo, Bind: bindReduceSumTo,
		Grad: func(g *GradContext) ([]*ir.Value, error) {
			// The adjoint of summing to a shape is broadcasting back.
			dx := Add(g.B, FullLike(g.B, g.X(0), 0, ir.InvalidDType), g.DY[0])
			return []*ir.Value{dx, nil}, nil
		}})
}

func inferReduceSumTo(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	var target []int
	switch len(in) {
	case 1:
		shape, err := shapeAttr(attrs, false)
		if err != nil {
			return nil, err
		}
		target = shape
	case 2:
		if attrs.Has("shape") {
			return nil, fmt.Errorf("takes a shape attribute or a second operand, not both")
		}
		target = in[1].Dims
	default:
		return nil, fmt.Errorf("takes 1 or 2 operands, got %d", len(in))
	}
	x := in[0]
	if !x.DType.IsFloat() {
		return nil, fmt.Errorf("operand is %s; want f32 or f64", x)
	}
	if len(target) > x.Rank() {
		return nil, fmt.Errorf("cannot sum %s to the larger rank of shape %s", x, dimsString(target))
	}
	off := x.Rank() - len(target)
	for i, d := range target {
		xd := x.Dims[off+i]
		if d != 1 && d != ir.Dynamic && xd != ir.Dynamic && xd != d {
			return nil, fmt.Errorf("cannot sum %s to shape %s", x, dimsString(target))
		}
	}
	return []ir.Type{ir.TensorOf(x.DType, target...)}, nil
}

func bindReduceSumTo(op *ir.Op) (Kernel, error) {
	static := op.NumOperands() == 1
	target := op.Result(0).Type().Dims
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, to := in[0], target
		if !static {
			to = in[1].Shape()
		}
		axes, err := sumToAxes(x.Shape(), to)
		if err != nil {
			return nil, err
		}
		if len(axes) == 0 && len(to) == x.Rank() {
			return []*tensor.Tensor{x.Retain()}, nil
		}
		out, err := c.New(ir.DType(x.DType()), to)
		if err != nil {
			return nil, err
		}
		switch x.DType() {
		case tensor.F32:
			err = kernels.Reduce(kernels.ReduceSum, c.Threads, out.F32(), x.F32(), x.Shape(), axes)
		case tensor.F64:
			err = kernels.Reduce(kernels.ReduceSum, c.Threads, out.F64(), x.F64(), x.Shape(), axes)
		}
		if err != nil {
			out.Release()
			return nil, err
		}
		return []*tensor.Tensor{out}, nil
	}, nil
}

// sumToAxes lists the axes of a shape to sum so that it becomes to.
func sumToAxes(from, to []int) ([]int, error) {
	off := len(from) - len(to)
	if off < 0 {
		return nil, fmt.Errorf("cannot sum shape %v to the larger rank of %v", from, to)
	}
	var axes []int
	for i := range off {
		axes = append(axes, i)
	}
	for i, d := range to {
		switch f := from[off+i]; {
		case d == f:
		case d == 1:
			axes = append(axes, off+i)
		default:
			return nil, fmt.Errorf("cannot sum shape %v to %v", from, to)
		}
	}
	return axes, nil
}

// ReduceSumTo appends the sum of x to the shape of like: statically when
// like's type is static, else read at run time.
func ReduceSumTo(b *ir.Builder, x, like *ir.Value) *ir.Value {
	if t := like.Type(); t.IsStatic() {
		return b.Op1("reduce_sum_to", ir.A("shape", t.Dims), x)
	}
	return b.Op1("reduce_sum_to", nil, x, like)
}
