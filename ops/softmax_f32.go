package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Softmax with float32 exponentials, for inference.
//
//	softmax_f32 {axis} (x) -> y   y = exp(x − max) / Σ exp(x − max)
//
// x is f32. It is softmax with each exponential computed in float32
// arithmetic, sixteen at a time (kernels.SoftmaxF32): within a few
// float32 ulps of softmax's float64 result, not bit for bit. Package
// optimize puts it in place of f32 softmaxes in inference programs;
// programs that are trained keep softmax. Its gradient is softmax's rule
// (softmax_grad on y).

func init() {
	register(&Def{Name: "softmax_f32", Infer: inferSoftmaxF32, Compute: bindSoftmaxF32, Grad: nnGradSoftmax("softmax_grad")})
}

func inferSoftmaxF32(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	if in[0].DType != ir.F32 {
		return nil, fmt.Errorf("x %s must be f32", in[0])
	}
	return inferSoftmax(in, attrs)
}

func bindSoftmaxF32(op *ir.Op) (Compute, error) {
	axis, err := nnAxis(op.Attrs, op.Operand(0).Type())
	if err != nil {
		return Compute{}, err
	}
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		outer, n, inner := nnSplitAxis(in[0].Shape(), axis)
		kernels.SoftmaxF32(in[0].F32(), out[0].F32(), outer, n, inner, nnThreads(c))
		return nil
	}}, nil
}
