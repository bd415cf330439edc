package ops

import (
	"fmt"

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

// AccumulateInto appends to b the form of batch sum op (one BatchGroup
// reports) that adds its sum over the given operands into acc:
// conv2d_grad_filter_acc or reduce_sum_to_acc (batch_acc.go). operands
// stand for op's own.
func AccumulateInto(b *ir.Builder, op *ir.Op, acc *ir.Value, operands []*ir.Value) (*ir.Value, error) {
	b.SetPos(op.Pos)
	switch op.Name() {
	case "conv2d_grad_filter":
		attrs := ir.Attrs{}
		for _, a := range op.Attrs {
			if a.Name != "filter_size" {
				attrs = append(attrs, a)
			}
		}
		return b.Op1("conv2d_grad_filter_acc", attrs, acc, operands[0], operands[1]), b.Err()
	case "reduce_sum_to":
		return b.Op1("reduce_sum_to_acc", nil, acc, operands[0]), b.Err()
	}
	return nil, fmt.Errorf("%q at %s has no form that adds into a running sum", op.Name(), op.Pos)
}
