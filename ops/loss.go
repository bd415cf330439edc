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

//
// Gradients: cross_entropy_with_softmax's with respect to the logits uses
// a helper op,
//
//	cross_entropy_with_softmax_grad {axis, ignore_index} (softmax, labels, dloss) -> dlogits
//
// dlogits = (softmax − onehot(label))·dloss per sample, 0 for ignored
// samples (a label outside [0, C) that is not ignore_index is an error);
// a gradient flowing into the softmax result adds softmax's own backward.
// The labels get none. binary_cross_entropy_with_logits differentiates
// in both operands: dlogits = (σ(x) − t)·dy and dtargets = −x·dy.

func init() {
	register(&Def{Name: "cross_entropy_with_softmax", Infer: inferCrossEntropy, Compute: bindCrossEntropy, Grad: nnGradCrossEntropy})
	register(&Def{Name: "binary_cross_entropy_with_logits", Infer: inferBCELogits, Compute: bindBCELogits, Grad: nnGradBCELogits})
	register(&Def{Name: "cross_entropy_with_softmax_grad", Grad: noSecondOrder, Infer: nnInferXentGrad, Compute: nnBindXentGrad})
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

// bindCrossEntropy returns cross_entropy_with_softmax's kernel: Infer has
// checked the operands' run-time shapes, and the executor allocates the
// loss and the softmax.
func bindCrossEntropy(op *ir.Op) (Compute, error) {
	axisAttr, ignore, err := nnXentDecode(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		logits, labels := in[0], in[1]
		axis, err := normAxis(axisAttr, logits.Rank())
		if err != nil {
			return err
		}
		loss, probs := out[0], out[1]
		outer, n, inner := nnSplitAxis(logits.Shape(), axis)
		th := nnThreads(c)
		bad := -1
		switch {
		case logits.DType() == tensor.F32 && labels.DType() == tensor.I64:
			bad = kernels.SoftmaxCrossEntropy(logits.F32(), probs.F32(), loss.F32(), labels.I64(), outer, n, inner, ignore, th)
		case logits.DType() == tensor.F32:
			bad = kernels.SoftmaxCrossEntropy(logits.F32(), probs.F32(), loss.F32(), labels.I32(), outer, n, inner, ignore, th)
		case labels.DType() == tensor.I64:
			bad = kernels.SoftmaxCrossEntropy(logits.F64(), probs.F64(), loss.F64(), labels.I64(), outer, n, inner, ignore, th)
		default:
			bad = kernels.SoftmaxCrossEntropy(logits.F64(), probs.F64(), loss.F64(), labels.I32(), outer, n, inner, ignore, th)
		}
		if bad >= 0 {
			return nnBadLabel(labels, bad, n, ignore)
		}
		return nil
	}}, nil
}

// nnBadLabel is the error for the out-of-range label at flat position bad
// of labels, for n classes.
func nnBadLabel(labels *tensor.Tensor, bad, n int, ignore int64) error {
	return fmt.Errorf("label %d at position %v of labels %s is out of range [0, %d) (ignore_index %d)",
		int64(labels.Float64At(bad)), nnUnravel(bad, labels.Shape()), labels.Type(), n, ignore)
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

// bindBCELogits returns binary_cross_entropy_with_logits' kernel: Infer
// has checked that logits and targets have one shape.
func bindBCELogits(*ir.Op) (Compute, error) {
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		x, t, y := in[0], in[1], out[0]
		switch x.DType() {
		case tensor.F32:
			kernels.BCEWithLogits(x.F32(), t.F32(), y.F32(), nnThreads(c))
		case tensor.F64:
			kernels.BCEWithLogits(x.F64(), t.F64(), y.F64(), nnThreads(c))
		}
		return nil
	}}, nil
}

// BinaryCrossEntropyWithLogits appends the elementwise binary cross-entropy
// of sigmoid(logits) against targets.
func BinaryCrossEntropyWithLogits(b *ir.Builder, logits, targets *ir.Value) *ir.Value {
	return b.Op1("binary_cross_entropy_with_logits", nil, logits, targets)
}

// nnGradCrossEntropy: the logits' gradient from the softmax result, plus
// the softmax backward when the softmax result itself is used.
func nnGradCrossEntropy(g *GradContext) ([]*ir.Value, error) {
	dx := make([]*ir.Value, 2)
	if !g.Need(0) {
		return dx, nil
	}
	axis, ignore, err := nnXentDecode(g.Op.Attrs)
	if err != nil {
		return nil, err
	}
	if g.DY[0] != nil {
		dx[0] = g.B.Op1("cross_entropy_with_softmax_grad", ir.A("axis", axis, "ignore_index", ignore), g.Y(1), g.X(1), g.DY[0])
	}
	if g.DY[1] != nil {
		ds := g.B.Op1("softmax_grad", ir.A("axis", axis), g.Y(1), g.DY[1])
		if dx[0] == nil {
			dx[0] = ds
		} else {
			dx[0] = Add(g.B, dx[0], ds)
		}
	}
	return dx, nil
}

// nnGradBCELogits: with loss = max(x,0) − x·t + log(1 + e^−|x|),
// ∂/∂x = σ(x) − t and ∂/∂t = −x.
func nnGradBCELogits(g *GradContext) ([]*ir.Value, error) {
	dy := g.DY[0]
	dx := make([]*ir.Value, 2)
	if g.Need(0) {
		dx[0] = Multiply(g.B, Subtract(g.B, Sigmoid(g.B, g.X(0)), g.X(1)), dy)
	}
	if g.Need(1) {
		dx[1] = Neg(g.B, Multiply(g.B, g.X(0), dy))
	}
	return dx, nil
}

// nnXentGradShape checks cross_entropy_with_softmax_grad's operands and
// returns the class axis.
func nnXentGradShape(in []ir.Type, attrs ir.Attrs) (int, error) {
	if err := wantOperands(in, 3); err != nil {
		return 0, err
	}
	axisAttr, _, err := nnXentDecode(attrs)
	if err != nil {
		return 0, err
	}
	probs, labels, dloss := in[0], in[1], in[2]
	axis, lossDims, err := nnXentShape(probs, labels, axisAttr)
	if err != nil {
		return 0, err
	}
	if _, ok := nnMatchShape(dloss, ir.TensorOf(probs.DType, lossDims...)); !ok {
		return 0, fmt.Errorf("dloss %s must have the dtype of softmax %s and the shape %s of the loss", dloss, probs, dimsString(lossDims))
	}
	return axis, nil
}

func nnInferXentGrad(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if _, err := nnXentGradShape(in, attrs); err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(in[0].DType, in[0].Dims...)}, nil
}

// nnBindXentGrad returns cross_entropy_with_softmax_grad's kernel: Infer
// has checked the operands' run-time shapes.
func nnBindXentGrad(op *ir.Op) (Compute, error) {
	axisAttr, ignore, err := nnXentDecode(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		probs, labels, dloss, dlogits := in[0], in[1], in[2], out[0]
		axis, err := normAxis(axisAttr, probs.Rank())
		if err != nil {
			return err
		}
		outer, n, inner := nnSplitAxis(probs.Shape(), axis)
		th := nnThreads(c)
		var bad int
		switch {
		case probs.DType() == tensor.F32 && labels.DType() == tensor.I64:
			bad = kernels.SoftmaxCrossEntropyGrad(probs.F32(), dloss.F32(), labels.I64(), dlogits.F32(), outer, n, inner, ignore, th)
		case probs.DType() == tensor.F32:
			bad = kernels.SoftmaxCrossEntropyGrad(probs.F32(), dloss.F32(), labels.I32(), dlogits.F32(), outer, n, inner, ignore, th)
		case labels.DType() == tensor.I64:
			bad = kernels.SoftmaxCrossEntropyGrad(probs.F64(), dloss.F64(), labels.I64(), dlogits.F64(), outer, n, inner, ignore, th)
		default:
			bad = kernels.SoftmaxCrossEntropyGrad(probs.F64(), dloss.F64(), labels.I32(), dlogits.F64(), outer, n, inner, ignore, th)
		}
		if bad >= 0 {
			return nnBadLabel(labels, bad, n, ignore)
		}
		return nil
	}}, nil
}
