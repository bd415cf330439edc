package onnx

import (
	"math"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// Indexing ops: GatherElements, ScatterElements (and its old name
// Scatter), GatherND, ScatterND, NonZero, Compress, OneHot, TopK,
// CumSum, Unique and NonMaxSuppression.

func init() {
	register(convGatherElements, "GatherElements")
	register(convCumSum, "CumSum")
	register(convScatterElements, "ScatterElements", "Scatter")
	register(convGatherND, "GatherND")
	register(convScatterND, "ScatterND")
	register(convNonZero, "NonZero")
	register(convCompress, "Compress")
	register(convTopK, "TopK")
	register(convOneHot, "OneHot")
	register(convUnique, "Unique")
	register(convNMS, "NonMaxSuppression")
}

// tensors records a problem unless the first k inputs are given and are
// tensors, and reports whether they are.
func (n *node) tensors(k int) bool {
	for i := range k {
		switch {
		case !n.Has(i):
			n.fail("input %d is missing", i)
		case n.Type(i).IsStack():
			n.fail("input %d is a sequence, want a tensor", i)
		default:
			continue
		}
		return false
	}
	return true
}

// convGatherElements is take_along_axis. ONNX lets indices be smaller
// than data outside axis (then only data's leading corner is read): with
// static dims, data is sliced to that corner first; with dynamic ones the
// kernel requires equal dims.
func convGatherElements(n *node) ([]*value, error) {
	if !n.tensors(2) {
		return nil, nil
	}
	x, idx := n.In(0), n.In(1)
	xt, it := x.Type(), idx.Type()
	r := xt.Rank()
	axis := n.axis(n.Int("axis", 0), r)
	if it.Rank() != r {
		n.fail("indices %s must have the rank of data %s", it, xt)
	}
	if n.err != nil {
		return nil, nil
	}
	var axes, starts, ends []int
	for i := range r {
		xd, id := xt.Dims[i], it.Dims[i]
		if i == axis || xd == id || xd == ir.Dynamic || id == ir.Dynamic {
			continue
		}
		if id > xd {
			n.fail("indices %s are larger than data %s outside axis %d", it, xt, axis)
			return nil, nil
		}
		axes, starts, ends = append(axes, i), append(starts, 0), append(ends, id)
	}
	if axes != nil {
		x = ops.Slice(n.b, x, axes, starts, ends)
	}
	return outv(ops.TakeAlongAxis(n.b, x, idx, axis)), nil
}

// convCumSum: the axis is an input, read at run time unless known.
func convCumSum(n *node) ([]*value, error) {
	if !n.tensors(2) {
		return nil, nil
	}
	x := n.In(0)
	exclusive := n.Int("exclusive", 0) != 0
	reverse := n.Int("reverse", 0) != 0
	if a, ok := n.KnownInts(1); ok && len(a) == 1 {
		return outv(ops.CumSum(n.b, x, n.axis(a[0], x.Type().Rank()), exclusive, reverse)), nil
	}
	return outv(ops.CumSumAt(n.b, x, n.In(1), exclusive, reverse)), nil
}

// reduction reads a scatter's reduction attribute: from opset 16 (add,
// mul) and 18 (max, min); gopir's scatters take the same names.
func (n *node) reduction() string {
	return n.String("reduction", "none")
}

// convScatterElements is scatter_elements; Scatter is its name before
// opset 11. gopir's requires indices of data's dims outside axis (ONNX
// lets them be smaller).
func convScatterElements(n *node) ([]*value, error) {
	if !n.tensors(3) {
		return nil, nil
	}
	x, idx, upd := n.In(0), n.In(1), n.In(2)
	xt, it := x.Type(), idx.Type()
	axis := n.axis(n.Int("axis", 0), xt.Rank())
	red := n.reduction()
	if n.err != nil {
		return nil, nil
	}
	if it.Rank() == xt.Rank() {
		for i, d := range xt.Dims {
			if i != axis && d != ir.Dynamic && it.Dims[i] != ir.Dynamic && it.Dims[i] < d {
				return nil, n.unsupported("indices %s smaller than data %s outside axis %d", it, xt, axis)
			}
		}
	}
	return outv(ops.ScatterElements(n.b, x, idx, upd, axis, red)), nil
}

func convGatherND(n *node) ([]*value, error) {
	if !n.tensors(2) {
		return nil, nil
	}
	return outv(ops.GatherND(n.b, n.In(0), n.In(1), int(n.Int("batch_dims", 0)))), nil
}

func convScatterND(n *node) ([]*value, error) {
	if !n.tensors(3) {
		return nil, nil
	}
	return outv(ops.ScatterND(n.b, n.In(0), n.In(1), n.In(2), 0, n.reduction())), nil
}

func convNonZero(n *node) ([]*value, error) {
	if !n.tensors(1) {
		return nil, nil
	}
	if n.rank(0) == 0 {
		return nil, n.unsupported("NonZero of a scalar")
	}
	return outv(ops.Nonzero(n.b, n.In(0))), nil
}

// convUnique: gopir's unique, which computes all four outputs.
func convUnique(n *node) ([]*value, error) {
	if !n.tensors(1) {
		return nil, nil
	}
	sorted := n.Int("sorted", 1) != 0
	hasAxis := n.HasAttr("axis")
	axis := 0
	if hasAxis {
		axis = n.axis(n.Int("axis", 0), n.rank(0))
	}
	switch dt := n.Type(0).DType; dt {
	case ir.F32, ir.F64, ir.I32, ir.I64, ir.I1:
	default:
		return nil, n.unsupported("Unique of %s", n.Type(0))
	}
	if n.err != nil {
		return nil, nil
	}
	y, idx, inv, counts := ops.Unique(n.b, n.In(0), axis, hasAxis, sorted)
	return out(y, idx, inv, counts), nil
}

// convNMS: gopir's non_max_suppression, with ONNX's defaults for the
// optional inputs (no box selected without max_output_boxes_per_class,
// iou_threshold 0, no score threshold).
func convNMS(n *node) ([]*value, error) {
	if !n.tensors(2) {
		return nil, nil
	}
	center := n.Int("center_point_box", 0)
	if center != 0 && center != 1 {
		n.fail("center_point_box %d is not 0 or 1", center)
		return nil, nil
	}
	dt := n.Type(0).DType
	if !dt.IsFloat() || n.Type(1).DType != dt {
		return nil, n.unsupported("NonMaxSuppression of %s and %s", n.Type(0), n.Type(1))
	}
	maxOut, iou := ops.Full(n.b, ir.I64, 0), ops.Full(n.b, dt, 0)
	if n.Has(2) {
		maxOut = n.In(2)
	}
	if n.Has(3) {
		iou = n.In(3)
	}
	var score *ir.Value
	if n.Has(4) {
		score = n.In(4)
	}
	return outv(ops.NonMaxSuppression(n.b, n.In(0), n.In(1), maxOut, iou, score, center == 1)), nil
}

// convCompress gathers the slices along axis (of the flattened input
// without one) where condition holds: gather at nonzero(condition). A
// condition longer than the axis fails at run time if it selects beyond
// the end; a shorter one leaves the rest out.
func convCompress(n *node) ([]*value, error) {
	if !n.tensors(2) {
		return nil, nil
	}
	x, cond := n.In(0), n.In(1)
	if r := cond.Type().Rank(); r != 1 {
		n.fail("condition %s must be 1-D", cond.Type())
		return nil, nil
	}
	axis := 0
	if n.HasAttr("axis") {
		axis = n.axis(n.Int("axis", 0), x.Type().Rank())
	} else {
		x = ops.Reshape(n.b, x, -1)
	}
	if n.err != nil {
		return nil, nil
	}
	at := ops.Squeeze(n.b, ops.Nonzero(n.b, cond), 0)
	return outv(ops.Gather(n.b, x, at, axis)), nil
}

// convTopK: k is an attribute before opset 10 and an input after, read at
// run time unless known. largest (opset 11) picks the smallest instead;
// the results are always sorted, which sorted=0 allows.
func convTopK(n *node) ([]*value, error) {
	inputs := 1
	if n.Opset() >= 10 {
		inputs = 2 // k
	}
	if !n.tensors(inputs) {
		return nil, nil
	}
	x := n.In(0)
	axis := n.axis(n.Int("axis", -1), n.rank(0))
	largest := n.Int("largest", 1) != 0
	n.Int("sorted", 1)
	if n.err != nil {
		return nil, nil
	}
	if n.Opset() < 10 {
		v, i := ops.TopK(n.b, x, int(n.Int("k", 0)), axis, largest)
		return out(v, i), nil
	}
	if k, ok := n.KnownInts(1); ok && len(k) == 1 {
		v, i := ops.TopK(n.b, x, n.ints(k)[0], axis, largest)
		return out(v, i), nil
	}
	v, i := ops.TopKAt(n.b, x, n.In(1), axis, largest)
	return out(v, i), nil
}

// convOneHot: off_value everywhere and on_value (values = [off, on]) at
// each index along a new axis (default −1) of size depth. Indices and
// depth of other types are cast to i64 (truncating); negative indices
// count from the end, and one outside [−depth, depth) gives a row of
// off_value. depth is read at run time unless known.
func convOneHot(n *node) ([]*value, error) {
	if !n.tensors(3) {
		return nil, nil
	}
	idx, values := n.In(0), n.In(2)
	r := n.rank(0)
	axis := n.axis(n.Int("axis", -1), r+1)
	if vt := values.Type(); vt.Rank() != 1 || vt.Dims[0] != 2 && vt.Dims[0] != ir.Dynamic {
		n.fail("values %s must hold [off_value, on_value]", vt)
	}
	if dt := n.Type(1); dt.Rank() > 1 || dt.Rank() == 1 && dt.Dims[0] != 1 && dt.Dims[0] != ir.Dynamic {
		n.fail("depth %s must be a scalar", dt)
	}
	if n.err != nil {
		return nil, nil
	}
	b := n.b
	depth, d := -1, (*ir.Value)(nil)
	if known, ok := n.KnownFloats(1); ok {
		k := math.Trunc(known[0])
		switch {
		case k < 1:
			n.fail("depth %v must be at least 1", known[0])
			return nil, nil
		case k > 1<<40:
			return nil, n.unsupported("depth %v", known[0])
		}
		depth, d = int(k), scalar(b, ir.I64, k)
	} else {
		d = scalarOf(b, ops.Cast(b, n.In(1), ir.I64))
	}
	zero := scalar(b, ir.I64, 0)
	i := ops.Cast(b, idx, ir.I64)
	i = ops.Where(b, ops.LessThan(b, i, zero), ops.Add(b, i, d), i)
	in := ops.LogicalAnd(b, ops.GreaterEqual(b, i, zero), ops.LessThan(b, i, d))
	at := ops.Where(b, in, i, zero)
	var hot *ir.Value
	if depth > 0 {
		hot = ops.OneHot(b, at, depth, ir.I1)
	} else {
		hot = ops.OneHotAt(b, at, d, ir.I1)
	}
	hot = ops.LogicalAnd(b, hot, ops.Unsqueeze(b, in, r))
	off := ops.Gather(b, values, scalar(b, ir.I64, 0), 0)
	on := ops.Gather(b, values, scalar(b, ir.I64, 1), 0)
	y := ops.Where(b, hot, on, off)
	if axis != r {
		perm := make([]int, 0, r+1)
		for j := range r {
			if j == axis {
				perm = append(perm, r)
			}
			perm = append(perm, j)
		}
		y = ops.Transpose(b, y, perm...)
	}
	return outv(y), nil
}
