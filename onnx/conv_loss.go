package onnx

import (
	"math"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, composed
// from take_along_axis, gather, where and reductions (so they are
// differentiable through those ops' rules).

func init() {
	register(convNLLLoss, "NegativeLogLikelihoodLoss")
	register(convSoftmaxCrossEntropy, "SoftmaxCrossEntropyLoss")
}

// lossAttrs reads the attributes both losses share.
type lossAttrs struct {
	reduction string
	ignore    int64
	hasIgnore bool
}

func (n *node) lossAttrs() lossAttrs {
	a := lossAttrs{reduction: n.String("reduction", "mean")}
	if n.HasAttr("ignore_index") {
		a.ignore, a.hasIgnore = n.Int("ignore_index", 0), true
	}
	switch a.reduction {
	case "none", "sum", "mean":
	default:
		n.fail("reduction %q is not none, sum or mean", a.reduction)
	}
	return a
}

// convNLLLoss: input is N×C or N×C×d1×…×dk log-probabilities, target
// N or N×d1×…×dk class indices, weight (optional) C per-class weights.
func convNLLLoss(n *node) ([]*value, error) {
	if !n.tensors(2) {
		return nil, nil
	}
	a := n.lossAttrs()
	var w *ir.Value
	if n.Has(2) {
		w = n.In(2)
	}
	loss := nllLoss(n, n.In(0), n.In(1), w, a)
	if loss == nil {
		return nil, nil
	}
	return outv(loss), nil
}

// convSoftmaxCrossEntropy is the NLL of log_softmax(scores) along the
// class axis 1; the optional second output is that log-softmax.
func convSoftmaxCrossEntropy(n *node) ([]*value, error) {
	if !n.tensors(2) {
		return nil, nil
	}
	a := n.lossAttrs()
	x := n.In(0)
	if r := x.Type().Rank(); r < 2 {
		n.fail("scores %s must have rank 2 or more (N×C×…)", x.Type())
		return nil, nil
	}
	if !x.Type().DType.IsFloat() {
		return nil, n.unsupported("scores of type %s", x.Type())
	}
	logp := ops.LogSoftmax(n.b, x, 1)
	var w *ir.Value
	if n.Has(2) {
		w = n.In(2)
	}
	loss := nllLoss(n, logp, n.In(1), w, a)
	if loss == nil {
		return nil, nil
	}
	return out(loss, logp), nil
}

// nllLoss builds ONNX's negative log-likelihood: per element
// loss = −x[n, t, d…]·w[t] with t = target[n, d…], and 0 with weight 0
// where t is ignore_index; reduced by "none", "sum", or "mean" (the sum
// divided by the sum of the weights taken, or by the count of targets
// not ignored when there are no weights). It records a problem on n and
// returns nil when the operands do not fit.
//
// A target outside [0, C) that is not ignore_index must not be read
// silently: take_along_axis and gather fail on indices ≥ C, and would
// count negative ones from the end, so negative targets are first mapped
// to a value far above any C.
func nllLoss(n *node, x, target, weight *ir.Value, a lossAttrs) *ir.Value {
	xt, tt := x.Type(), target.Type()
	if xt.Rank() < 2 || tt.Rank() != xt.Rank()-1 {
		n.fail("input %s and target %s: want N×C×d1…dk and N×d1…dk", xt, tt)
		return nil
	}
	if !xt.DType.IsFloat() {
		n.err = n.unsupported("input of type %s", xt)
		return nil
	}
	if !tt.DType.IsInt() {
		n.fail("target %s must be of an integer type", tt)
		return nil
	}
	if weight != nil {
		wt := weight.Type()
		if wt.Rank() != 1 || wt.DType != xt.DType {
			n.fail("weight %s must be 1-D of the input's type %s", wt, xt.DType)
			return nil
		}
	}
	b := n.b
	dt, it := xt.DType, tt.DType
	safe := target
	var keep *ir.Value // where the target is not ignored
	// An ignore_index outside the target type's range matches nothing.
	if a.hasIgnore && fits(it, a.ignore) {
		if a.ignore > 1<<53 || a.ignore < -1<<53 {
			n.err = n.unsupported("ignore_index %d, beyond ±2^53", a.ignore)
			return nil
		}
		keep = ops.NotEqual(b, target, scalar(b, it, float64(a.ignore)))
		safe = ops.Where(b, keep, target, scalar(b, it, 0))
	}
	huge := float64(math.MaxInt32)
	if it == ir.I64 {
		huge = 1 << 62
	}
	safe = ops.Where(b, ops.LessThan(b, safe, scalar(b, it, 0)), scalar(b, it, huge), safe)
	picked := ops.Squeeze(b, ops.TakeAlongAxis(b, x, ops.Unsqueeze(b, safe, 1), 1), 1)
	zero := scalar(b, dt, 0)
	if keep != nil {
		picked = ops.Where(b, keep, picked, zero)
	}
	loss := ops.Neg(b, picked)
	var taken *ir.Value // the weight of each element, for the mean
	if weight != nil {
		taken = ops.Gather(b, weight, safe, 0)
		if keep != nil {
			taken = ops.Where(b, keep, taken, zero)
		}
		loss = ops.Multiply(b, loss, taken)
	} else if keep != nil {
		taken = ops.Cast(b, keep, dt)
	}
	switch a.reduction {
	case "sum":
		return ops.ReduceSum(b, loss, nil, false)
	case "mean":
		if taken == nil {
			return ops.ReduceMean(b, loss, nil, false)
		}
		return ops.Divide(b, ops.ReduceSum(b, loss, nil, false), ops.ReduceSum(b, taken, nil, false))
	}
	return loss
}

// fits reports whether v is a value of the integer dtype dt.
func fits(dt ir.DType, v int64) bool {
	return dt == ir.I64 || v >= math.MinInt32 && v <= math.MaxInt32
}
