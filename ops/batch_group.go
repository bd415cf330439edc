package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
)

// BatchSum is how an op that sums over axis 0 of its operands (a batch's)
// does it the canonical way (kernels.BatchGroup: the partials of whole
// groups of samples added in order, so that the batch cut into pieces of
// whole groups, each piece's sum added to the running one, gives the same
// bits). remat splits a step over the batch only through such sums.
type BatchSum struct {
	// Group returns how many samples each partial sum covers for operand
	// types in, or 0 where the kernel sums otherwise.
	Group func(op *ir.Op, in []ir.Type) int
	// Accumulate appends to b the op's form that adds its sum over
	// operands (standing for op's own) into acc.
	Accumulate func(b *ir.Builder, op *ir.Op, acc *ir.Value, operands []*ir.Value) *ir.Value
}

// BatchGroup returns, for an op with a BatchSum, how many samples each of
// its partial sums covers for operand types in; 0 for any other op, or
// for operand types its kernel sums otherwise.
func BatchGroup(op *ir.Op, in []ir.Type) int {
	d, ok := defs[op.Name()]
	if !ok || d.BatchSum == nil {
		return 0
	}
	return d.BatchSum.Group(op, in)
}

// AccumulateInto appends to b the form of batch sum op (one BatchGroup
// reports) that adds its sum over the given operands into acc
// (conv2d_grad_filter_acc, reduce_sum_to_acc: batch_acc.go). operands
// stand for op's own.
func AccumulateInto(b *ir.Builder, op *ir.Op, acc *ir.Value, operands []*ir.Value) (*ir.Value, error) {
	d, ok := defs[op.Name()]
	if !ok || d.BatchSum == nil {
		return nil, fmt.Errorf("%q at %s has no form that adds into a running sum", op.Name(), op.Pos)
	}
	b.SetPos(op.Pos)
	v := d.BatchSum.Accumulate(b, op, acc, operands)
	return v, b.Err()
}

// reduceSumToBatch: reduce_sum_to sums the canonical way when it sums
// away axis 0.
var reduceSumToBatch = &BatchSum{
	Group: func(op *ir.Op, in []ir.Type) int {
		out, err := ResultTypesOf(op, in)
		if err != nil || !in[0].IsStatic() || !out[0].IsStatic() {
			return 0
		}
		axes, err := sumToAxes(in[0].Dims, out[0].Dims)
		if err != nil || len(axes) == 0 || axes[0] != 0 {
			return 0
		}
		return kernels.BatchGroup
	},
	Accumulate: func(b *ir.Builder, _ *ir.Op, acc *ir.Value, operands []*ir.Value) *ir.Value {
		return b.Op1("reduce_sum_to_acc", nil, acc, operands[0])
	},
}

// convGradFilterBatch: conv2d_grad_filter sums the canonical way on every
// kernels path.
var convGradFilterBatch = &BatchSum{
	Group: func(op *ir.Op, in []ir.Type) int {
		_, _, _, out, err := nnConvGradTypes(false, in, op.Attrs)
		if err != nil || !in[1].IsStatic() || !out.IsStatic() || in[0].DType != in[1].DType {
			return 0
		}
		return kernels.BatchGroup
	},
	Accumulate: func(b *ir.Builder, op *ir.Op, acc *ir.Value, operands []*ir.Value) *ir.Value {
		attrs := ir.Attrs{}
		for _, a := range op.Attrs {
			if a.Name != "filter_size" {
				attrs = append(attrs, a)
			}
		}
		return b.Op1("conv2d_grad_filter_acc", attrs, acc, operands[0], operands[1])
	},
}
