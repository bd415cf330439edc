package ops

import (
	"slices"

	"github.com/gopir/gopir/ir"
)

// PerSample reports whether op computes each sample of its results (the
// index along axis 0 of a batch value) from the same sample of its batch
// operands and the whole of its other operands, to the same bits whatever
// the batch and wherever it is cut: remat may then run op on pieces of a
// batch. batch says which values carry the batch along axis 0. Ops say so
// through Def.PerSample; for any other op it is false.
func PerSample(op *ir.Op, batch func(*ir.Value) bool) bool {
	d, ok := defs[op.Name()]
	return ok && d.PerSample != nil && d.PerSample(op, batch)
}

// The PerSample hooks of the op families.

// perSampleUnary: an op of one operand, the batch.
func perSampleUnary(op *ir.Op, batch func(*ir.Value) bool) bool {
	return op.NumOperands() == 1 && batch(op.Operand(0))
}

// perSampleAll: an op whose operands all carry the batch (the gradients
// of activations and pools).
func perSampleAll(op *ir.Op, batch func(*ir.Value) bool) bool {
	for _, v := range op.Operands() {
		if !batch(v) {
			return false
		}
	}
	return true
}

// perSampleFirst: an op whose first operand is the batch and whose second
// (weights) is not: the convolutions.
func perSampleFirst(op *ir.Op, batch func(*ir.Value) bool) bool {
	return op.NumOperands() >= 2 && batch(op.Operand(0)) && !batch(op.Operand(1))
}

// perSampleBroadcast: a binary elementwise op; an operand that carries
// the batch aligns with the result's axis 0, and one that does not
// broadcasts along it.
func perSampleBroadcast(op *ir.Op, batch func(*ir.Value) bool) bool {
	if op.NumResults() != 1 {
		return false
	}
	rank := op.Result(0).Type().Rank()
	for _, v := range op.Operands() {
		t := v.Type()
		if batch(v) != (t.Rank() == rank && (t.Rank() == 0 || t.Dims[0] != 1)) {
			return false
		}
	}
	return true
}

// perSampleReshape: a reshape that keeps axis 0 (shape [-1, fixed...]).
func perSampleReshape(op *ir.Op, batch func(*ir.Value) bool) bool {
	shape, err := op.Attrs.Ints("shape")
	return err == nil && perSampleUnary(op, batch) && len(shape) > 0 && shape[0] == -1 &&
		!slices.Contains(shape[1:], -1) && !slices.Contains(shape, 0)
}

// perSampleFlatten: a flatten that keeps axis 0.
func perSampleFlatten(op *ir.Op, batch func(*ir.Value) bool) bool {
	start, err := op.Attrs.Int("start_axis")
	return err == nil && perSampleUnary(op, batch) && start >= 1
}
