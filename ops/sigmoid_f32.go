package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Sigmoid with float32 arithmetic, for inference.
//
//	sigmoid_f32 (x) -> y   y = 1/(1+e^-x)
//
// x is f32. It is sigmoid with e^-x, 1 + e^-x and the division in
// float32, sixteen at a time (kernels.SigmoidF32): within 2 float32 ulps
// of the exact sigmoid, where sigmoid computes in float64 and rounds once,
// so not bit for bit. Package optimize puts it in place of f32 sigmoids
// in inference programs; programs that are trained keep sigmoid. Its
// gradient is sigmoid's rule (dy·y·(1−y)).

func init() {
	register(&Def{Name: "sigmoid_f32", Infer: inferSigmoidF32, Compute: bindSigmoidF32, Grad: ewGradSigmoid,
		PerSample: perSampleUnary, NCHWc: nchwcUnary})
}

func inferSigmoidF32(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	if in[0].DType != ir.F32 {
		return nil, fmt.Errorf("x %s must be f32", in[0])
	}
	return []ir.Type{in[0]}, nil
}

func bindSigmoidF32(op *ir.Op) (Compute, error) {
	return ewMapKernel(op, func(c *Ctx, out, x *tensor.Tensor) error {
		kernels.SigmoidF32(x.F32(), out.F32(), nnThreads(c))
		return nil
	}), nil
}

// SigmoidF32 appends sigmoid_f32(x).
func SigmoidF32(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("sigmoid_f32", nil, x) }
