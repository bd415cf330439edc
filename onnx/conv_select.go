package onnx

import (
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// Arg-reductions and ops built from comparisons of positions: ArgMin,
// ArgMax's select_last_index, Hardmax, Trilu and EyeLike. Positions along
// an axis come from arange, so the dims they range over must be static.

func init() {
	register(convArgMin, "ArgMin")
	register(convHardmax, "Hardmax")
	register(convTrilu, "Trilu")
	register(convEyeLike, "EyeLike")
}

// convArgMin: the positions of the minimum are those of the maximum of an
// order-reversing map of x: −x for floats (exact; NaN stays NaN, which
// argmax selects, as numpy's argmin does), −1−x for integers (no overflow
// at the type's minimum, where −x would wrap).
func convArgMin(n *node) ([]*value, error) { return convArg(n, true) }

// convArg is ArgMax (argMin false) or ArgMin: the first position of the
// extreme along axis, or the last with select_last_index (opset 12),
// found as the first one along the reversed axis.
func convArg(n *node, argMin bool) ([]*value, error) {
	if !n.tensors(1) {
		return nil, nil
	}
	x := n.In(0)
	t := x.Type()
	axis := n.axis(n.Int("axis", 0), t.Rank())
	keep := n.Int("keepdims", 1) != 0
	last := n.Int("select_last_index", 0) != 0
	if n.err != nil {
		return nil, nil
	}
	b := n.b
	if argMin {
		if t.DType.IsFloat() {
			x = ops.Neg(b, x)
		} else {
			x = ops.Subtract(b, scalar(b, t.DType, -1), x)
		}
	}
	if !last {
		return outv(ops.Argmax(b, x, axis, keep)), nil
	}
	d := t.Dims[axis]
	if d == ir.Dynamic {
		return nil, n.unsupported("select_last_index=1 along the dynamic axis %d of %s", axis, t)
	}
	rev := ops.SliceStrided(b, x, []int{axis}, []int{-1}, []int{-1 << 62}, []int{-1})
	i := ops.Argmax(b, rev, axis, keep)
	return outv(ops.Subtract(b, scalar(b, ir.I64, float64(d-1)), i)), nil
}

// positions returns the positions 0..d−1 (i64) laid along axis of a rank-r
// tensor whose other dims are 1.
func positions(b *ir.Builder, d, axis, r int) *ir.Value {
	shape := make([]int, r)
	for i := range shape {
		shape[i] = 1
	}
	shape[axis] = d
	return ops.Reshape(b, ops.Arange(b, ir.I64, 0, float64(d), 1), shape...)
}

// convHardmax: 1 at the first maximum along axis, 0 elsewhere. Before
// opset 13 the input is seen as 2-D, dims before axis by dims from axis
// (default 1); from 13 the op works along axis (default −1).
func convHardmax(n *node) ([]*value, error) {
	if !n.tensors(1) {
		return nil, nil
	}
	x := n.In(0)
	t := x.Type()
	r := t.Rank()
	b := n.b
	if n.Opset() >= 13 {
		axis := n.axis(n.Int("axis", -1), r)
		if n.err != nil {
			return nil, nil
		}
		d := t.Dims[axis]
		switch d {
		case ir.Dynamic:
			return nil, n.unsupported("Hardmax along the dynamic axis %d of %s", axis, t)
		case 0:
			return []*value{n.in[0]}, nil // nothing to mark
		}
		return outv(hardmax(b, x, axis, d)), nil
	}
	a := n.Int("axis", 1)
	if a < 0 {
		a += int64(r)
	}
	if a < 0 || a > int64(r) || r == 0 {
		n.fail("axis %d is out of range for rank %d", n.Int("axis", 1), r)
		return nil, nil
	}
	if !t.IsStatic() {
		return nil, n.unsupported("Hardmax of %s, whose dims are not all known, before opset 13", t)
	}
	rows, cols := 1, 1
	for i, d := range t.Dims {
		if i < int(a) {
			rows *= d
		} else {
			cols *= d
		}
	}
	if rows*cols == 0 {
		return []*value{n.in[0]}, nil // nothing to mark
	}
	y := hardmax(b, ops.Reshape(b, x, rows, cols), 1, cols)
	return outv(ops.Reshape(b, y, t.Dims...)), nil
}

// hardmax marks the first maximum of x along axis, of static size d.
func hardmax(b *ir.Builder, x *ir.Value, axis, d int) *ir.Value {
	t := x.Type()
	at := ops.Argmax(b, x, axis, true)
	return ops.Cast(b, ops.Equal(b, at, positions(b, d, axis, t.Rank())), t.DType)
}

// convTrilu keeps the upper (default) or lower triangle of the last two
// dims, from the k-th diagonal (an optional scalar input, which may be
// computed at run time): element (i, j) stays where j − i ≥ k (upper) or
// j − i ≤ k (lower), and is zero elsewhere.
func convTrilu(n *node) ([]*value, error) {
	if !n.tensors(1) {
		return nil, nil
	}
	x := n.In(0)
	t := x.Type()
	upper := n.Int("upper", 1) != 0
	r := t.Rank()
	if r < 2 {
		n.fail("input %s has rank %d, want at least 2", t, r)
		return nil, nil
	}
	rows, cols := t.Dims[r-2], t.Dims[r-1]
	if rows == ir.Dynamic || cols == ir.Dynamic {
		return nil, n.unsupported("Trilu of %s, whose last two dims are not both known", t)
	}
	b := n.b
	var k *ir.Value
	if n.Has(1) {
		kt := n.Type(1)
		if !kt.DType.IsInt() || kt.Rank() > 1 || kt.Rank() == 1 && kt.Dims[0] != 1 && kt.Dims[0] != ir.Dynamic {
			n.fail("k %s must be an integer scalar", kt)
			return nil, nil
		}
		// Beyond ±(rows+cols) every k selects the same elements; the
		// clip keeps i + k from overflowing.
		k = ops.Clip(b, scalarOf(b, ops.Cast(b, n.In(1), ir.I64)), -float64(rows+cols), float64(rows+cols))
	} else {
		k = scalar(b, ir.I64, 0)
	}
	// i + k against j, so that the mask is the only rows×cols value.
	i := ops.Add(b, positions(b, rows, 0, 2), k)
	j := positions(b, cols, 1, 2)
	var keep *ir.Value
	if upper {
		keep = ops.GreaterEqual(b, j, i)
	} else {
		keep = ops.LessEqual(b, j, i)
	}
	return outv(ops.Where(b, keep, x, scalar(b, t.DType, 0))), nil
}

// convEyeLike: ones on the k-th diagonal of a 2-D tensor of the input's
// shape (which must be static), zeros elsewhere; dtype defaults to the
// input's.
func convEyeLike(n *node) ([]*value, error) {
	if !n.tensors(1) {
		return nil, nil
	}
	t := n.Type(0)
	dt := t.DType
	if n.HasAttr("dtype") {
		var err error
		if dt, err = dtypeOf(n.Int("dtype", 0)); err != nil {
			return nil, err
		}
	}
	k := n.Int("k", 0)
	if t.Rank() != 2 {
		n.fail("input %s must be 2-D", t)
		return nil, nil
	}
	if !t.IsStatic() {
		return nil, n.unsupported("EyeLike of %s, whose dims are not both known", t)
	}
	b := n.b
	k = max(-int64(t.Dims[0]), min(int64(t.Dims[1]), k)) // the same ones, no overflow
	i := ops.Add(b, positions(b, t.Dims[0], 0, 2), scalar(b, ir.I64, float64(k)))
	return outv(ops.Cast(b, ops.Equal(b, positions(b, t.Dims[1], 1, 2), i), dt)), nil
}
