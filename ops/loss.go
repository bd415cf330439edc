package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Losses.
//
//	cross_entropy_with_softmax {axis, ignore_index} (logits, labels) -> (loss, softmax)
//	binary_cross_entropy_with_logits (logits, targets) -> loss
//
// cross_entropy_with_softmax: logits f32 or f64 of rank >= 1 with the
// classes on axis (default −1); labels are class indices, i64 (or i32),
// shaped like logits with the class axis removed (PyTorch's convention:
// logits N×C, labels N; logits N×C×H×W with axis 1, labels N×H×W). loss
// has the labels' shape and the logits' dtype:
// loss = logsumexp(logits) − logits[label] along the axis, computed
// stably in float64. softmax is the probabilities along the axis (logits'
// shape), returned so that the backward, softmax − onehot(label), is
// cheap. A sample whose label equals ignore_index (default −100) has loss
// 0 (its softmax is still computed). Any other label outside [0, C) fails
// the kernel with an error naming the label and its position.
//
// binary_cross_entropy_with_logits: logits and targets of the same shape
// and float dtype; loss is elementwise
// −(t·log σ(x) + (1−t)·log(1−σ(x))), computed stably as
// max(x, 0) − x·t + log(1 + exp(−|x|)).

func init() {
	register(&Def{Name: "cross_entropy_with_softmax", Infer: inferCrossEntropy, Bind: bindCrossEntropy})
	register(&Def{Name: "binary_cross_entropy_with_logits", Infer: inferBCELogits, Bind: bindBCELogits})
}

// nnXentShape checks the operands and returns the class axis and the loss
// dims.
func nnXentShape(logits, labels ir.Type, axisAttr int) (int, []int, error) {
	if err := nnWantFloat("logits", logits); err != nil {
		return 0, nil, err
	}
	if labels.DType != ir.I64 && labels.DType != ir.I32 {
		return 0, nil, fmt.Errorf("labels %s must be i64 or i32", labels)
	}
	axis, err := normAxis(axisAttr, logits.Rank())
	if err != nil || logits.Rank() == 0 {
		return 0, nil, fmt.Errorf("axis %d is out of range for logits %s", axisAttr, logits)
	}
	want := append(append([]int(nil), logits.Dims[:axis]...), logits.Dims[axis+1:]...)
	ok := labels.Rank() == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = nnDimEq(labels.Dims[i], want[i])
		if want[i] == ir.Dynamic {
			want[i] = labels.Dims[i]
		}
	}
	if !ok {
		return 0, nil, fmt.Errorf("labels %s must have the shape %s of logits %s without the class axis %d", labels, dimsString(want), logits, axis)
	}
	return axis, want, nil
}

func nnXentDecode(attrs ir.Attrs) (axis int, ignore int64, err error) {
	if axis, err = nnInt(attrs, "axis", -1); err != nil {
		return
	}
	ig, err := nnInt(attrs, "ignore_index", -100)
	return axis, int64(ig), err
}

func inferCrossEntropy(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 2); err != nil {
		return nil, err
	}
	axisAttr, _, err := nnXentDecode(attrs)
	if err != nil {
		return nil, err
	}
	_, lossDims, err := nnXentShape(in[0], in[1], axisAttr)
	if err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(in[0].DType, lossDims...), ir.TensorOf(in[0].DType, in[0].Dims...)}, nil
}

func bindCrossEntropy(op *ir.Op) (Kernel, error) {
	axisAttr, ignore, err := nnXentDecode(op.Attrs)
	if err != nil {
		return nil, err
	}
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		logits, labels := in[0], in[1]
		axis, lossDims, err := nnXentShape(nnType(logits), nnType(labels), axisAttr)
		if err != nil {
			return nil, err
		}
		dt := ir.DType(logits.DType())
		outs, err := nnNewAll(c, ir.Type{DType: dt, Dims: lossDims}, nnType(logits))
		if err != nil {
			return nil, err
		}
		outer, n, inner := nnSplitAxis(logits.Shape(), axis)
		th := nnThreads(c)
		bad := -1
		switch {
		case dt == ir.F32 && labels.DType() == tensor.I64:
			bad = kernels.SoftmaxCrossEntropy(logits.F32(), outs[1].F32(), outs[0].F32(), labels.I64(), outer, n, inner, ignore, th)
		case dt == ir.F32:
			bad = kernels.SoftmaxCrossEntropy(logits.F32(), outs[1].F32(), outs[0].F32(), labels.I32(), outer, n, inner, ignore, th)
		case labels.DType() == tensor.I64:
			bad = kernels.SoftmaxCrossEntropy(logits.F64(), outs[1].F64(), outs[0].F64(), labels.I64(), outer, n, inner, ignore, th)
		default:
			bad = kernels.SoftmaxCrossEntropy(logits.F64(), outs[1].F64(), outs[0].F64(), labels.I32(), outer, n, inner, ignore, th)
		}
		if bad >= 0 {
			nnRelease(outs)
			return nil, fmt.Errorf("label %d at position %v of labels %s is out of range [0, %d) (ignore_index %d)",
				int64(labels.Float64At(bad)), nnUnravel(bad, labels.Shape()), labels.Type(), n, ignore)
		}
		return outs, nil
	}, nil
}

// nnUnravel turns a flat row-major index into a multi-index of shape.
func nnUnravel(i int, shape []int) []int {
	idx := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			idx[d] = i % shape[d]
			i /= shape[d]
		}
	}
	return idx
}

// CrossEntropyWithSoftmax appends the softmax cross-entropy of logits
// against integer labels (the class axis removed) and returns the
// per-sample loss and the softmax.
func CrossEntropyWithSoftmax(b *ir.Builder, logits, labels *ir.Value, axis int, ignoreIndex int64) (loss, softmax *ir.Value) {
	op := b.Op("cross_entropy_with_softmax", ir.A("axis", axis, "ignore_index", ignoreIndex), logits, labels)
	return op.Result(0), op.Result(1)
}

func inferBCELogits(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 2); err != nil {
		return nil, err
	}
	dims, err := nnBCEShape(in[0], in[1])
	if err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(in[0].DType, dims...)}, nil
}

func nnBCEShape(x, t ir.Type) ([]int, error) {
	if err := nnWantFloat("logits", x); err != nil {
		return nil, err
	}
	if err := nnSameDType("targets", t, x.DType, "logits", x); err != nil {
		return nil, err
	}
	j, ok := ir.Join(x, t)
	for i := 0; ok && i < x.Rank(); i++ {
		ok = nnDimEq(x.Dims[i], t.Dims[i])
		if x.Dims[i] == ir.Dynamic {
			j.Dims[i] = t.Dims[i]
		} else {
			j.Dims[i] = x.Dims[i]
		}
	}
	if !ok {
		return nil, fmt.Errorf("logits %s and targets %s must have the same shape", x, t)
	}
	return j.Dims, nil
}

func bindBCELogits(*ir.Op) (Kernel, error) {
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, t := in[0], in[1]
		if _, err := nnBCEShape(nnType(x), nnType(t)); err != nil {
			return nil, err
		}
		out, err := c.New(ir.DType(x.DType()), x.Shape())
		if err != nil {
			return nil, err
		}
		switch x.DType() {
		case tensor.F32:
			kernels.BCEWithLogits(x.F32(), t.F32(), out.F32(), nnThreads(c))
		case tensor.F64:
			kernels.BCEWithLogits(x.F64(), t.F64(), out.F64(), nnThreads(c))
		}
		return []*tensor.Tensor{out}, nil
	}, nil
}

// BinaryCrossEntropyWithLogits appends the elementwise binary cross-entropy
// of sigmoid(logits) against targets.
func BinaryCrossEntropyWithLogits(b *ir.Builder, logits, targets *ir.Value) *ir.Value {
	return b.Op1("binary_cross_entropy_with_logits", nil, logits, targets)
}
