package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// The gradient of relu in one pass.
//
//	relu_grad (y, dy) -> dx      f32 f64
//
// dx = dy where y > 0, else 0 (also where y is NaN): with y = relu(x),
// the gradient of relu at x. y and dy have one type (no broadcasting) and
// so does dx. It replaces the three buffers of where(y > 0, dy, 0) by one,
// which may be y's or dy's when either dies here (Compute.InPlace).
//
// It is linear in dy and piecewise constant in y, so its gradient is
// relu_grad(y, ddx) for dy and none for y.

func init() {
	register(&Def{Name: "relu_grad", Infer: ewInferActGrad(false), Compute: fuseBindReluGrad,
		Grad: fuseGradReluGrad, PerSample: perSampleAll})
}

// ReluGrad appends the gradient of relu given its output y and the
// gradient dy of that output.
func ReluGrad(b *ir.Builder, y, dy *ir.Value) *ir.Value { return b.Op1("relu_grad", nil, y, dy) }

// fuseBindReluGrad returns relu_grad's kernel: Infer has checked that y
// and dy have one shape. The result may be y's or dy's buffer
// (Compute.InPlace); kernels.ReluGrad reads each element before it writes
// it.
func fuseBindReluGrad(op *ir.Op) (Compute, error) {
	dt := op.Operand(0).Type().DType
	if dt != ir.F32 && dt != ir.F64 {
		return Compute{}, fmt.Errorf("relu_grad: no kernel for %s", dt)
	}
	return Compute{
		Fn: func(c *Ctx, in, outs []*tensor.Tensor) error {
			y, dy, out := in[0], in[1], outs[0]
			if ir.DType(y.DType()) != dt || ir.DType(dy.DType()) != dt {
				return fmt.Errorf("relu_grad: operands %s and %s, compiled for %s", y.Type(), dy.Type(), dt)
			}
			if dt == ir.F32 {
				kernels.ReluGrad(out.F32(), y.F32(), dy.F32(), nnThreads(c))
			} else {
				kernels.ReluGrad(out.F64(), y.F64(), dy.F64(), nnThreads(c))
			}
			return nil
		},
		InPlace: [][]int{{0, 1}},
	}, nil
}

// fuseGradReluGrad: d(dy) = relu_grad(y, ddx); y gets none.
func fuseGradReluGrad(g *GradContext) ([]*ir.Value, error) {
	if !g.Need(1) || g.DY[0] == nil {
		return []*ir.Value{nil, nil}, nil
	}
	return []*ir.Value{nil, ReluGrad(g.B, g.X(0), g.DY[0])}, nil
}
