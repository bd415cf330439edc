package optimize

import "github.com/gopir/gopir/ir"

// SoftmaxF32 makes each f32 softmax a softmax_f32 with the same axis:
// float32 exponentials sixteen at a time instead of float64 math.Exp, as
// ONNX Runtime and PyTorch compute float32 softmax (kernels.SoftmaxF32).
// The results move by a few float32 ulps (under 3e-8 absolute), not bit
// for bit; in ppyoloe_s's inference the softmax over its distribution
// bins goes from 1.5 ms to about 0.3 ms at batch 1. It returns the new
// program and how many softmaxes it replaced.
func SoftmaxF32(p *ir.Program) (*ir.Program, int, error) {
	return swapF32(p, "softmax", "softmax_f32")
}
