package ops

import (
	"fmt"
	"slices"

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
// where the target has 1 and x does not. When x already has the target
// shape the result is x: shared (a view) when the types say so, else x's
// own buffer if x dies here, else a copy.

func init() {
	register(&Def{Name: "reduce_sum_to", Infer: inferReduceSumTo, Compute: bindReduceSumTo,
		Grad: func(g *GradContext) ([]*ir.Value, error) {
			// The adjoint of summing to a shape is broadcasting back.
			dx := Add(g.B, FullLike(g.B, g.X(0), 0, ir.InvalidDType), g.DY[0])
			return []*ir.Value{dx, nil}, nil
		},
		BatchSum: reduceSumToBatch})
}

func inferReduceSumTo(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	target, err := shapeOrLike(in, attrs)
	if err != nil {
		return nil, err
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

// bindReduceSumTo returns reduce_sum_to's kernel. When x's type already
// has the target shape the result is x, shared (a view). When that is
// only known at run time, the result takes over x's buffer if x dies here
// (Compute.InPlace: the executor hands it over only when the shapes are
// equal) and is a copy of x otherwise.
func bindReduceSumTo(op *ir.Op) (Compute, error) {
	static := op.NumOperands() == 1
	target := op.Result(0).Type().Dims
	size := int(op.Operand(0).Type().DType.Size())
	xt := op.Operand(0).Type()
	if xt.IsStatic() && (static || op.Operand(1).Type().IsStatic()) && slices.Equal(xt.Dims, target) {
		return Compute{Fn: func(*Ctx, []*tensor.Tensor, []*tensor.Tensor) error { return nil }, View: []int{0}}, nil
	}
	return Compute{
		Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
			x, to := in[0], target
			if !static {
				to = in[1].Shape()
			}
			axes, err := sumToAxes(x.Shape(), to)
			if err != nil {
				return err
			}
			y := out[0]
			if len(axes) == 0 && len(to) == x.Rank() {
				if y != x {
					kernels.CopyInto(y.Raw(), x.Raw(), c.Threads)
				}
				return nil
			}
			batch := len(axes) > 0 && axes[0] == 0
			n := 0
			if batch {
				n = sumToScratch(x.Shape(), y.Len())
			}
			switch x.DType() {
			case tensor.F32:
				if batch {
					return kernels.ReduceSumBatch(c.Threads, y.F32(), Scratch[float32](c, n), x.F32(), x.Shape(), axes)
				}
				return kernels.Reduce(kernels.ReduceSum, c.Threads, y.F32(), x.F32(), x.Shape(), axes)
			case tensor.F64:
				if batch {
					return kernels.ReduceSumBatch(c.Threads, y.F64(), Scratch[float64](c, n), x.F64(), x.Shape(), axes)
				}
				return kernels.Reduce(kernels.ReduceSum, c.Threads, y.F64(), x.F64(), x.Shape(), axes)
			}
			return fmt.Errorf("reduce_sum_to: no kernel for %s", x.Type())
		},
		// A sum over axis 0 (a batch's) runs group by group
		// (kernels.ReduceSumBatch): one group's sum as scratch.
		Work: func(shapes [][]int, _ int) int64 {
			to := target
			if !static {
				to = shapes[1]
			}
			axes, err := sumToAxes(shapes[0], to)
			if err != nil || len(axes) == 0 || axes[0] != 0 {
				return 0
			}
			out := 1
			for _, d := range to {
				out *= d
			}
			return int64(sumToScratch(shapes[0], out) * size)
		},
		InPlace: [][]int{{0}},
	}, nil
}

// sumToScratch is the scratch elements reduce_sum_to takes to sum x of
// this shape over its batch axis into out elements.
func sumToScratch(x []int, out int) int {
	if len(x) == 0 || x[0] <= kernels.BatchGroup {
		return 0
	}
	return out
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
