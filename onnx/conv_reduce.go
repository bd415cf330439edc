package onnx

import (
	"math"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// Reductions and arg-reductions.

func init() {
	register(convReduce, "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
		"ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp")
	register(convArgMax, "ArgMax")
}

// convReduce: axes are an attribute, or an input from opset 13 for
// ReduceSum (18 for the others); no axes means every axis, unless
// noop_with_empty_axes makes the op an identity. Axes computed at run time
// (and not empty: their length is static) make the reduce_*_dyn ops.
func convReduce(n *node) ([]*value, error) {
	x := n.In(0)
	r := x.Type().Rank()
	axes := n.Ints("axes")
	keep := n.Int("keepdims", 1) != 0
	noop := n.Int("noop_with_empty_axes", 0) != 0
	if n.Has(1) {
		var ok bool
		if axes, ok = n.KnownInts(1); !ok {
			if !n.vector(1) {
				return nil, n.unsupported("axes %s that are not 1-D of static length", n.Type(1))
			}
			if n.p.GetOpType() == "ReduceProd" {
				return nil, n.unsupported("axes computed at run time")
			}
			if n.Type(1).Dims[0] > 0 {
				return outv(reduceDyn(n.b, n.p.GetOpType(), x, n.In(1), keep)), nil
			}
		}
	}
	if len(axes) == 0 && noop {
		return []*value{n.in[0]}, nil
	}
	ax := make([]int, len(axes))
	for i, a := range axes {
		ax[i] = n.axis(a, r)
	}
	if len(ax) == 0 {
		ax = nil // every axis
		if r == 0 {
			ax = []int{}
		}
	}
	b := n.b
	dt := x.Type().DType
	switch n.p.GetOpType() {
	case "ReduceSum":
		return outv(ops.ReduceSum(b, x, ax, keep)), nil
	case "ReduceMean":
		return outv(ops.ReduceMean(b, x, ax, keep)), nil
	case "ReduceMax":
		return outv(ops.ReduceMax(b, x, ax, keep)), nil
	case "ReduceMin":
		return outv(ops.ReduceMin(b, x, ax, keep)), nil
	case "ReduceProd":
		if !isNumber(dt) {
			return nil, n.unsupported("an input of type %s", x.Type())
		}
		return outv(ops.ReduceProd(b, x, ax, keep)), nil
	case "ReduceSumSquare":
		return outv(ops.ReduceSum(b, ops.Square(b, x), ax, keep)), nil
	case "ReduceL1":
		return outv(ops.ReduceSum(b, ops.Abs(b, x), ax, keep)), nil
	case "ReduceL2":
		return outv(ops.Sqrt(b, ops.ReduceSum(b, ops.Square(b, x), ax, keep))), nil
	case "ReduceLogSum":
		return outv(ops.Log(b, ops.ReduceSum(b, x, ax, keep))), nil
	case "ReduceLogSumExp":
		// log Σ exp(x − m) + m with m the max, for stability; m is kept
		// as 0 where it is infinite so that all −inf gives −inf.
		m := ops.ReduceMax(b, x, ax, true)
		finite := ops.Where(b, ops.Equal(b, ops.Abs(b, m), scalar(b, dt, math.Inf(1))), ops.FullLike(b, m, 0, ir.InvalidDType), m)
		s := ops.Log(b, ops.ReduceSum(b, ops.Exp(b, ops.Subtract(b, x, finite)), ax, true))
		y := ops.Add(b, s, finite)
		if !keep {
			y = ops.Squeeze(b, y, reduceAxes(ax, r)...)
		}
		return outv(y), nil
	}
	return nil, nil
}

// reduceDyn is the reduction op of ONNX type op of x over the axes held
// by the 1-D value axes (at least one axis), read at run time.
func reduceDyn(b *ir.Builder, op string, x, axes *ir.Value, keep bool) *ir.Value {
	sum := func(x *ir.Value, keep bool) *ir.Value {
		return ops.ReduceDyn(b, "reduce_sum_dyn", x, axes, keep, false)
	}
	switch op {
	case "ReduceSum":
		return sum(x, keep)
	case "ReduceMean":
		return ops.ReduceDyn(b, "reduce_mean_dyn", x, axes, keep, false)
	case "ReduceMax":
		return ops.ReduceDyn(b, "reduce_max_dyn", x, axes, keep, false)
	case "ReduceMin":
		return ops.ReduceDyn(b, "reduce_min_dyn", x, axes, keep, false)
	case "ReduceSumSquare":
		return sum(ops.Square(b, x), keep)
	case "ReduceL1":
		return sum(ops.Abs(b, x), keep)
	case "ReduceL2":
		return ops.Sqrt(b, sum(ops.Square(b, x), keep))
	case "ReduceLogSum":
		return ops.Log(b, sum(x, keep))
	}
	// ReduceLogSumExp, as in convReduce.
	m := ops.ReduceDyn(b, "reduce_max_dyn", x, axes, true, false)
	finite := ops.Where(b, ops.Equal(b, ops.Abs(b, m), scalar(b, x.Type().DType, math.Inf(1))), ops.FullLike(b, m, 0, ir.InvalidDType), m)
	y := ops.Add(b, ops.Log(b, sum(ops.Exp(b, ops.Subtract(b, x, finite)), true)), finite)
	if !keep {
		y = ops.SqueezeDyn(b, y, axes)
	}
	return y
}

// reduceAxes lists the axes a reduction over ax (nil: all) removes.
func reduceAxes(ax []int, r int) []int {
	if ax != nil {
		return ax
	}
	all := make([]int, r)
	for i := range all {
		all[i] = i
	}
	return all
}

// convArgMax: the first (or, with select_last_index, last) index of the
// maximum along axis; see convArg.
func convArgMax(n *node) ([]*value, error) { return convArg(n, false) }
