package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// reduce_grad is the gradient of reduce_sum and reduce_mean when a reduced
// dim is dynamic: it broadcasts dy back to the shape of the forward
// operand x, read at run time, dividing by the number of elements reduced
// if mean.
//
//	reduce_grad {axes, keepdim, mean = false} (dy, x)   dy f32 f64; x any
//
// axes and keepdim are those of the forward reduction, of x's rank; dy has
// the reduction's result shape. The result has x's shape and dy's dtype.
// Only x's shape is read.

func init() {
	register(&Def{Name: "reduce_grad", Infer: redInferGrad, Compute: redBindGrad, Grad: redGradGrad})
}

// redGradOpAttrs decodes reduce_grad's attributes against x's type.
func redGradOpAttrs(attrs ir.Attrs, x ir.Type) (axes []int, keepdim, mean bool, err error) {
	if axes, err = redAxes(attrs, x); err != nil {
		return nil, false, false, err
	}
	if keepdim, err = ewOptBool(attrs, "keepdim", false); err != nil {
		return nil, false, false, err
	}
	mean, err = ewOptBool(attrs, "mean", false)
	return axes, keepdim, mean, err
}

func redInferGrad(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 2); err != nil {
		return nil, err
	}
	dy, x := in[0], in[1]
	if err := ewFloats.check(dy); err != nil {
		return nil, err
	}
	axes, keepdim, _, err := redGradOpAttrs(attrs, x)
	if err != nil {
		return nil, err
	}
	want := redShape(x.Dims, axes, keepdim)
	ok := len(want) == dy.Rank()
	for i := 0; ok && i < len(want); i++ {
		ok = want[i] == dy.Dims[i] || want[i] == ir.Dynamic || dy.Dims[i] == ir.Dynamic
	}
	if !ok {
		return nil, fmt.Errorf("gradient %s does not fit the reduction of %s over axes %v (keepdim %v)", dy, x, axes, keepdim)
	}
	return []ir.Type{ir.TensorOf(dy.DType, x.Dims...)}, nil
}

// redBindGrad returns reduce_grad's kernel: Infer has checked that dy fits
// the reduction of x's run-time shape, and the executor allocates the
// result, of x's shape.
func redBindGrad(op *ir.Op) (Compute, error) {
	xt := op.Operand(1).Type()
	axes, _, mean, err := redGradOpAttrs(op.Attrs, xt)
	if err != nil {
		return Compute{}, err
	}
	dt := op.Operand(0).Type().DType
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		dy, xs := in[0], in[1].Shape()
		if ir.DType(dy.DType()) != dt {
			return fmt.Errorf("reduce_grad: gradient is %s, compiled for %s", dy.Type(), dt)
		}
		count := 1
		for _, a := range axes {
			count *= xs[a]
		}
		s := 1.0
		if mean && count > 0 {
			s = 1 / float64(count)
		}
		kept := redShape(xs, axes, true)
		var err error
		switch dt {
		case ir.F32:
			err = kernels.BroadcastScale(c.Threads, out[0].F32(), xs, dy.F32(), kept, float32(s))
		default:
			err = kernels.BroadcastScale(c.Threads, out[0].F64(), xs, dy.F64(), kept, s)
		}
		if err != nil {
			return fmt.Errorf("reduce_grad: %w", err)
		}
		return nil
	}}, nil
}

// redGradGrad: reduce_grad is the adjoint of the reduction, so its own
// gradient is the reduction again; x only gives a shape.
func redGradGrad(g *GradContext) ([]*ir.Value, error) {
	dx := make([]*ir.Value, 2)
	if !g.Need(0) {
		return dx, nil
	}
	axes, keepdim, mean, err := redGradOpAttrs(g.Op.Attrs, g.Op.Operand(1).Type())
	if err != nil {
		return nil, err
	}
	if mean {
		dx[0] = ReduceMean(g.B, g.DY[0], axes, keepdim)
	} else {
		dx[0] = ReduceSum(g.B, g.DY[0], axes, keepdim)
	}
	return dx, nil
}
