// Package optimize rewrites inference programs into cheaper ones that
// compute the same results: the compile mode `gopir run --optimize` and
// the inference benchmark use (docs/optimize.md).
//
// Each pass is a function from a program to a new program (the input is
// not changed), so that its result can be printed, compiled and compared
// with the original on its own:
//
//   - RemoveIdentities drops ops that return their operand: reshapes to
//     the same shape, identity transposes, casts to the same dtype, assign,
//     stop_gradient, dropout in evaluation mode, x+0, x−0, x·1, x/1, scale
//     by 1 plus 0.
//   - FoldBatchNorm folds batch_norm in evaluation mode (running
//     statistics) into the conv2d or matmul before it: the weights are
//     scaled per output channel and the shift becomes a bias, computed
//     once from the parameter values.
//   - FoldScaleShift folds chains of per-channel (or scalar) multiplies,
//     divides, adds and subtracts by known values after a conv2d or
//     matmul into its weights and bias the same way.
//   - FuseEpilogue replaces conv2d / matmul followed by a bias add, a
//     residual add and an activation (relu, sigmoid, silu, swish, clip)
//     by one conv2d_fused / matmul_fused op, whose kernel applies them to
//     each block of the output as soon as it is computed.
//   - DropPoolIndices replaces max_pool2d whose indices are unused by
//     max_pool2d_values, which computes the maxima alone.
//
// Folded weights are new parameters, with names derived from the
// originals, in a store of their own (Params) that shares the user's
// tensors: the user's store is never written. The passes assume the
// parameters are frozen, so they refuse programs with a backward
// (CheckInference). Inference runs them all.
package optimize
