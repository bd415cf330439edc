package optimize

import "github.com/gopir/gopir/ir"

// SigmoidF32 makes each f32 sigmoid a sigmoid_f32: e^-x, its sum with 1
// and the division in float32, sixteen at a time (kernels.SigmoidF32),
// instead of float64 math.Exp for each element, as ONNX Runtime computes
// a float32 sigmoid. The results move by up to 2 float32 ulps, not bit
// for bit; ppyoloe_s's score sigmoid at batch 8 goes from 382–392 µs to
// 20–23 (docs/benchmarks.md). A sigmoid fused into a convolution's epilogue keeps its
// float64 form (fuse_epilogue runs first and is exact). It returns the
// new program and how many sigmoids it replaced.
func SigmoidF32(p *ir.Program) (*ir.Program, int, error) {
	return swapF32(p, "sigmoid", "sigmoid_f32")
}
