package ops

import (
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
)

// BatchGroup returns, for an op that sums over axis 0 of its operands (a
// batch's), how many samples each of its partial sums covers when its
// kernel sums the canonical way (kernels.BatchGroup: the partials of
// whole groups added in order, so that the batch cut into pieces of one
// group, each piece's sum added to the running one, gives the same bits);
// 0 for any other op, or for operand types its kernel sums otherwise.
// remat splits a step over the batch only through such sums.
func BatchGroup(op *ir.Op, in []ir.Type) int {
	switch op.Name() {
	case "reduce_sum_to":
		out, err := ResultTypesOf(op, in)
		if err != nil || !in[0].IsStatic() || !out[0].IsStatic() {
			return 0
		}
		axes, err := sumToAxes(in[0].Dims, out[0].Dims)
		if err != nil || len(axes) == 0 || axes[0] != 0 {
			return 0
		}
		return kernels.BatchGroup
	case "conv2d_grad_filter":
		a, _, _, out, err := nnConvGradTypes(false, in, op.Attrs)
		if err != nil || !in[1].IsStatic() || !out.IsStatic() || in[0].DType != in[1].DType {
			return 0
		}
		return kernels.BatchGroupOf(nnConvGradParams(false, a, in[1].Dims, out.Dims), in[0].DType == ir.F32)
	}
	return 0
}
