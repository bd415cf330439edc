package onnx

import (
	"slices"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Shape ops, constants and shape arithmetic. Where an op takes a shape,
// axes or indices as an input (ONNX moved many attributes to inputs in
// opset 13), an input known when the program is built (a constant, an
// initializer, or computed from static shapes) makes the static op; one
// computed at run time makes the op that reads it then (reshape_dyn,
// slice_dyn, ...), which needs only its length to be static, and the
// importer tracks what it knows of such vectors' elements (partial.go).

func init() {
	register(convIdentity, "Identity")
	register(convConstant, "Constant")
	register(convShape, "Shape")
	register(convSize, "Size")
	register(convReshape, "Reshape")
	register(convFlatten, "Flatten")
	register(convTranspose, "Transpose")
	register(convSqueeze, "Squeeze", "Unsqueeze")
	register(convConcat, "Concat")
	register(convSplit, "Split")
	register(convGather, "Gather")
	register(convSlice, "Slice")
	register(convExpand, "Expand")
	register(convConstantOfShape, "ConstantOfShape")
	register(convRange, "Range")
	register(convTile, "Tile")
}

// convIdentity passes its input on: the same value, no copy.
func convIdentity(n *node) ([]*value, error) { return []*value{n.in[0]}, nil }

// convConstant: the value is known at import time.
func convConstant(n *node) ([]*value, error) {
	var t *tensor.Tensor
	switch {
	case n.HasAttr("value"):
		t = n.Tensor("value")
	case n.HasAttr("value_float"):
		t = n.knownScalar(tensor.F32, n.Float("value_float", 0))
	case n.HasAttr("value_int"):
		t = n.knownScalar(tensor.I64, float64(n.Int("value_int", 0)))
	case n.HasAttr("value_floats"):
		t = n.knownF64s(tensor.F32, n.Floats("value_floats"))
	case n.HasAttr("value_ints"):
		vs := n.Ints("value_ints")
		fs := make([]float64, len(vs))
		for i, v := range vs {
			fs[i] = float64(v)
		}
		t = n.knownF64s(tensor.I64, fs)
	case n.HasAttr("sparse_value"):
		return nil, n.unsupported("sparse_value")
	default:
		return nil, n.unsupported("a Constant without a value")
	}
	if t == nil {
		return nil, n.err
	}
	return []*value{{known: t}}, nil
}

// knownScalar makes a known rank-0 value.
func (n *node) knownScalar(dt tensor.DType, v float64) *tensor.Tensor {
	t, err := tensor.Scalar(n.im.host, dt, v)
	if err != nil {
		n.fail("%v", err)
		return nil
	}
	return n.im.keep(t)
}

// knownF64s makes a known 1-D value of dt from vs.
func (n *node) knownF64s(dt tensor.DType, vs []float64) *tensor.Tensor {
	t, err := tensor.New(n.im.host, dt, len(vs))
	if err != nil {
		n.fail("%v", err)
		return nil
	}
	for i, v := range vs {
		t.SetFloat64At(i, v)
	}
	return n.im.keep(t)
}

// knownI64s makes a known 1-D i64 value.
func (n *node) knownI64s(vs []int64) *value {
	t, err := tensor.FromI64(n.im.host, vs, len(vs))
	if err != nil {
		n.fail("%v", err)
		return nil
	}
	return &value{known: n.im.keep(t)}
}

// convShape: the dims of a tensor, sliced by start and end (opset 15).
// Static dims are known at import time; otherwise the shape op reads them
// at run time, and the dynamic ones are symbols (partial.go).
func convShape(n *node) ([]*value, error) {
	t := n.Type(0)
	if t.IsStack() || t.Unranked {
		return nil, n.unsupported("the shape of %s", t)
	}
	r := int64(t.Rank())
	clamp := func(i int64) int64 {
		if i < 0 {
			i += r
		}
		return max(0, min(r, i))
	}
	start, end := clamp(n.Int("start", 0)), clamp(n.Int("end", r))
	end = max(start, end)
	var dims []int64
	for i := start; i < end; i++ {
		dims = append(dims, int64(t.Dims[i]))
	}
	if !slices.Contains(dims, ir.Dynamic) {
		if dims == nil {
			dims = []int64{}
		}
		return []*value{n.knownI64s(dims)}, nil
	}
	x := n.In(0)
	v := ops.Shape(n.b, x)
	var made []*ir.Op
	if start > 0 || end < r {
		made = append(made, v.Def())
		v = ops.Slice(n.b, v, []int{0}, []int{int(start)}, []int{int(end)})
	}
	return []*value{n.partial(v, dimElems(x)[start:end], made...)}, nil
}

// convSize: the element count, known for a static type.
func convSize(n *node) ([]*value, error) {
	t := n.Type(0)
	if t.IsStack() || t.Unranked {
		return nil, n.unsupported("the size of %s", t)
	}
	if !t.IsStatic() {
		return outv(ops.Size(n.b, n.In(0))), nil
	}
	s, err := tensor.Scalar(n.im.host, tensor.I64, float64(t.NumElements()))
	if err != nil {
		return nil, err
	}
	return []*value{{known: n.im.keep(s)}}, nil
}

// convReshape: ONNX's 0 copies the input's dim (unless allowzero), -1 is
// inferred. With the result dims known, or all but one that the element
// count determines, it is the static reshape; otherwise reshape_dyn reads
// the shape at run time, with the dims the importer knows in its type.
func convReshape(n *node) ([]*value, error) {
	x := n.In(0)
	var spec []elem
	if n.Opset() < 5 {
		for _, d := range n.Ints("shape") {
			spec = append(spec, knownElem(d))
		}
	} else {
		var ok bool
		if spec, ok = n.Elems(1); !ok || !n.vector(1) {
			return nil, n.unsupported("a shape input %s that is not 1-D of static length (the result's rank would be unknown)", n.Type(1))
		}
	}
	allowZero := n.Int("allowzero", 0) != 0
	xd := dimElems(x)
	res := make([]elem, len(spec))
	infer := -1
	for i, e := range spec {
		switch {
		case !e.known:
			// A run-time 0 copies x's dim i, unless allowzero: a symbol
			// stands for itself only if that is the same.
			if e.of != nil && (allowZero || i < len(xd) && e.sameSym(xd[i])) {
				res[i] = e
			}
		case e.val == -1 && infer >= 0:
			n.fail("shape %v has more than one -1", knownDims(spec))
			return nil, nil
		case e.val == -1:
			infer = i
		case e.val < 0:
			n.fail("shape %v: dims must be sizes >= 0, 0 or one -1", knownDims(spec))
			return nil, nil
		case e.val == 0 && !allowZero:
			if i >= len(xd) {
				n.fail("shape %v copies dim %d of an input of rank %d", knownDims(spec), i, len(xd))
				return nil, nil
			}
			res[i] = xd[i]
		default:
			res[i] = e
		}
	}
	if infer >= 0 {
		res[infer] = inferElem(xd, slices.Delete(slices.Clone(res), infer, infer+1))
	}
	var open []int // the result dims not known
	for i, e := range res {
		if !e.known {
			open = append(open, i)
		}
	}
	dims := knownDims(res)
	switch {
	case len(open) == 0:
		// A vector reshaped to a vector or a scalar keeps its elements.
		if xe, ok := n.smallElems(0); ok && (len(dims) == 0 && len(xe) == 1 || len(dims) == 1 && dims[0] == len(xe)) {
			return []*value{n.elemsResult(x.Type().DType, dims, xe, func() *ir.Value { return ops.Reshape(n.b, x, dims...) })}, nil
		}
		return outv(ops.Reshape(n.b, x, dims...)), nil
	case len(open) == 1 && (open[0] == infer || sameProduct(res, xd)):
		// The static reshape's -1 is that dim: ONNX's own -1, or a
		// symbol the element count determines.
		return outv(ops.Reshape(n.b, x, dims...)), nil
	case !n.Has(1):
		return nil, n.unsupported("copying the dynamic dims of %s with a shape attribute", x.Type())
	}
	return outv(ops.ReshapeDyn(n.b, x, n.In(1), allowZero, dims)), nil
}

// splitElems is the product of the known elements of es and its symbols;
// false when an element is unknown or the product is too large to track.
func splitElems(es []elem) (int64, []elem, bool) {
	k := int64(1)
	var syms []elem
	for _, e := range es {
		switch {
		case e.known && e.val != 0 && k > (1<<62)/e.val:
			return 0, nil, false
		case e.known:
			k *= e.val
		case e.of != nil:
			syms = append(syms, e)
		default:
			return 0, nil, false
		}
	}
	return k, syms, true
}

// inferElem is the -1 of a reshape of a tensor of dims xd whose other
// result dims are others: the quotient of their element counts, when the
// symbols cancel out.
func inferElem(xd, others []elem) elem {
	kx, sx, ok1 := splitElems(xd)
	ko, so, ok2 := splitElems(others)
	switch {
	case !ok1 || !ok2 || ko == 0:
		return elem{}
	case kx == 0:
		return knownElem(0)
	}
	for _, s := range so {
		i := slices.IndexFunc(sx, s.sameSym)
		if i < 0 {
			return elem{}
		}
		sx = slices.Delete(sx, i, i+1)
	}
	switch q := kx / ko; {
	case kx%ko != 0:
		return elem{}
	case len(sx) == 0:
		return knownElem(q)
	case len(sx) == 1 && q == 1:
		return sx[0]
	}
	return elem{}
}

// sameProduct reports whether a and b, known sizes and symbols only, have
// the same product whatever the symbols are, and it is not 0.
func sameProduct(a, b []elem) bool {
	ka, sa, ok1 := splitElems(a)
	kb, sb, ok2 := splitElems(b)
	if !ok1 || !ok2 || ka != kb || ka == 0 || len(sa) != len(sb) {
		return false
	}
	for _, s := range sa {
		i := slices.IndexFunc(sb, s.sameSym)
		if i < 0 {
			return false
		}
		sb = slices.Delete(sb, i, i+1)
	}
	return true
}

// outv wraps one program value as the node's only output.
func outv(v *ir.Value) []*value { return out(v) }

// convFlatten: a 2-D view, dims before axis times dims from axis.
func convFlatten(n *node) ([]*value, error) {
	x := n.In(0)
	r := x.Type().Rank()
	axis := n.Int("axis", 1)
	if axis < 0 {
		axis += int64(r)
	}
	if axis < 0 || axis > int64(r) {
		n.fail("axis %d is out of range for rank %d", n.Int("axis", 1), r)
		return nil, nil
	}
	a := int(axis)
	switch {
	case a == 0:
		return outv(ops.Flatten(n.b, ops.Unsqueeze(n.b, x, 0), 1, r)), nil
	case a == r:
		return outv(ops.Flatten(n.b, ops.Unsqueeze(n.b, x, r), 0, r-1)), nil
	}
	y := x
	if a < r-1 {
		y = ops.Flatten(n.b, y, a, r-1)
	}
	if a > 1 {
		y = ops.Flatten(n.b, y, 0, a-1)
	}
	if y == x {
		y = ops.Assign(n.b, x)
	}
	return outv(y), nil
}

func convTranspose(n *node) ([]*value, error) {
	x := n.In(0)
	r := x.Type().Rank()
	perm := n.Ints("perm")
	if perm == nil {
		for i := r - 1; i >= 0; i-- {
			perm = append(perm, int64(i))
		}
	}
	return outv(ops.Transpose(n.b, x, n.ints(perm)...)), nil
}

// convSqueeze: axes are an attribute before opset 13 and an input after;
// Squeeze without axes drops every size-1 dim of a static shape. Axes
// computed at run time make squeeze_dyn and unsqueeze_dyn.
func convSqueeze(n *node) ([]*value, error) {
	x := n.In(0)
	unsqueeze := n.p.GetOpType() == "Unsqueeze"
	var axes []int64
	if n.Opset() < 13 {
		axes = n.Ints("axes")
	} else if n.Has(1) {
		var ok bool
		axes, ok = n.KnownInts(1)
		switch {
		case ok:
		case !n.vector(1):
			return nil, n.unsupported("axes %s that are not 1-D of static length", n.Type(1))
		case n.Type(1).Dims[0] > 0 && unsqueeze:
			return outv(ops.UnsqueezeDyn(n.b, x, n.In(1))), nil
		case n.Type(1).Dims[0] > 0:
			return outv(ops.SqueezeDyn(n.b, x, n.In(1))), nil
		}
		if len(axes) == 0 {
			axes = nil // as if absent
		}
	}
	r := x.Type().Rank()
	if unsqueeze {
		r += len(axes)
	}
	ax := make([]int, len(axes))
	for i, a := range axes {
		ax[i] = n.axis(a, r)
	}
	if unsqueeze {
		return n.keepElems(func() *ir.Value { return ops.Unsqueeze(n.b, x, ax...) }), nil
	}
	if axes == nil {
		for i, d := range x.Type().Dims {
			if d == ir.Dynamic {
				return nil, n.unsupported("squeezing every size-1 dim of %s, whose dims are not all known", x.Type())
			}
			if d == 1 {
				ax = append(ax, i)
			}
		}
	}
	return n.keepElems(func() *ir.Value { return ops.Squeeze(n.b, x, ax...) }), nil
}

// keepElems is the result of build, a view of input 0: when both are
// vectors (rank 0 or 1), the elements known of the input are the
// result's.
func (n *node) keepElems(build func() *ir.Value) []*value {
	xe, ok := n.smallElems(0)
	if !ok {
		return outv(build())
	}
	v := build()
	t := v.Type()
	if t.Rank() > 1 || !t.IsStatic() || t.NumElements() != len(xe) {
		return outv(v)
	}
	if vs, ok := allKnown(xe); ok {
		return []*value{n.knownElems(t.DType, t.Dims, vs)}
	}
	return []*value{n.partial(v, xe)}
}

// convConcat: along axis; vectors joined along axis 0 keep what is known
// of their elements.
func convConcat(n *node) ([]*value, error) {
	r := n.rank(0)
	axis := n.axis(n.Int("axis", 0), r)
	if r == 1 {
		var es []elem
		ok := true
		for i := range n.NumIn() {
			xe, isVec := n.smallElems(i)
			ok = ok && isVec && n.Type(i).Rank() == 1
			es = append(es, xe...)
		}
		if ok {
			return []*value{n.elemsResult(n.Type(0).DType, []int{len(es)}, es, func() *ir.Value {
				return ops.Concat(n.b, axis, n.Ins()...)
			})}, nil
		}
	}
	return outv(ops.Concat(n.b, axis, n.Ins()...)), nil
}

// convSplit: into the given sizes (attribute before 13, input after), or
// into num_outputs (18) or as many equal parts as there are outputs.
// Sizes computed at run time make split_dyn.
func convSplit(n *node) ([]*value, error) {
	x := n.In(0)
	t := x.Type()
	axis := n.axis(n.Int("axis", 0), t.Rank())
	outs := len(n.p.GetOutput())
	n.Int("num_outputs", int64(outs))
	var split []int64
	if n.Opset() < 13 {
		split = n.Ints("split")
	} else if n.Has(1) {
		var ok bool
		if split, ok = n.KnownInts(1); !ok {
			if !n.vector(1) {
				return nil, n.unsupported("split sizes %s that are not 1-D of static length", n.Type(1))
			}
			if k := n.Type(1).Dims[0]; k != outs {
				n.fail("%d split sizes for %d outputs", k, outs)
				return nil, nil
			}
			return out(ops.SplitDyn(n.b, x, n.In(1), axis)...), nil
		}
	}
	if split == nil {
		d := t.Dims[axis]
		if d == ir.Dynamic {
			return nil, n.unsupported("splitting the dynamic dim %d of %s into equal parts", axis, t)
		}
		part := (d + outs - 1) / outs
		for i := range outs {
			split = append(split, int64(min(part, d-i*part)))
		}
	}
	parts := ops.Split(n.b, x, axis, n.ints(split)...)
	return out(parts...), nil
}

// convGather: numpy's take. Picking known indices from a vector keeps
// what is known of the picked elements.
func convGather(n *node) ([]*value, error) {
	x := n.In(0)
	axis := n.axis(n.Int("axis", 0), x.Type().Rank())
	build := func() *ir.Value { return ops.Gather(n.b, x, n.In(1), axis) }
	xe, ok1 := n.smallElems(0)
	idx, ok2 := n.KnownInts(1)
	if !ok1 || !ok2 || x.Type().Rank() != 1 || n.Type(1).Rank() > 1 {
		return outv(build()), nil
	}
	es := make([]elem, len(idx))
	for i, k := range idx {
		if k < 0 {
			k += int64(len(xe))
		}
		if k < 0 || k >= int64(len(xe)) {
			return outv(build()), nil // the run fails
		}
		es[i] = xe[k]
	}
	return []*value{n.elemsResult(x.Type().DType, n.Type(1).Dims, es, build)}, nil
}

// convSlice: starts, ends, axes and steps are attributes before opset 10
// and inputs after; ONNX's clamping is numpy's. Known ones make the
// static slice (which keeps what is known of a vector's elements), others
// slice_dyn.
func convSlice(n *node) ([]*value, error) {
	x := n.In(0)
	r := x.Type().Rank()
	var starts, ends, axes, steps []int64
	if n.Opset() < 10 {
		starts, ends, axes = n.Ints("starts"), n.Ints("ends"), n.Ints("axes")
	} else {
		var ok1, ok2, ok3, ok4 bool
		starts, ok1 = n.KnownInts(1)
		ends, ok2 = n.KnownInts(2)
		axes, ok3 = n.KnownInts(3)
		steps, ok4 = n.KnownInts(4)
		if !ok1 || !ok2 || n.Has(3) && !ok3 || n.Has(4) && !ok4 {
			return n.sliceDyn(x, axes, ok3)
		}
	}
	if axes == nil {
		for i := range starts {
			axes = append(axes, int64(i))
		}
	}
	if steps == nil {
		for range starts {
			steps = append(steps, 1)
		}
	}
	if len(ends) != len(starts) || len(axes) != len(starts) || len(steps) != len(starts) {
		n.fail("starts, ends, axes and steps have lengths %d, %d, %d and %d", len(starts), len(ends), len(axes), len(steps))
		return nil, nil
	}
	ax := make([]int, len(axes))
	for i, a := range axes {
		ax[i] = n.axis(a, r)
	}
	clampInt := func(v int64) int {
		const lim = 1 << 62
		return int(max(-lim, min(lim, v)))
	}
	st, en, sp := make([]int, len(starts)), make([]int, len(ends)), make([]int, len(steps))
	for i := range starts {
		st[i], en[i], sp[i] = clampInt(starts[i]), clampInt(ends[i]), clampInt(steps[i])
	}
	build := func() *ir.Value { return ops.SliceStrided(n.b, x, ax, st, en, sp) }
	xe, ok := n.smallElems(0)
	if !ok || r != 1 || len(ax) != 1 || sp[0] == 0 {
		return outv(build()), nil
	}
	var es []elem
	for _, i := range sliceIndices(st[0], en[0], sp[0], len(xe)) {
		es = append(es, xe[i])
	}
	return []*value{n.elemsResult(x.Type().DType, []int{len(es)}, es, build)}, nil
}

// sliceIndices lists the indices start:end:step selects from a dim of
// size d, by numpy's rules (which ONNX's reference follows).
func sliceIndices(start, end, step, d int) []int {
	norm := func(i, lo, hi int) int {
		if i < 0 {
			i += d
		}
		return min(max(i, lo), hi)
	}
	var out []int
	if step > 0 {
		for i := norm(start, 0, d); i < norm(end, 0, d); i += step {
			out = append(out, i)
		}
	} else {
		for i := norm(start, -1, d-1); i > norm(end, -1, d-1); i += step {
			out = append(out, i)
		}
	}
	return out
}

// sliceDyn converts a Slice whose bounds are read at run time. The dims
// that no axis names keep their size: axes default to the first
// len(starts), and known axes name themselves.
func (n *node) sliceDyn(x *ir.Value, axes []int64, axesKnown bool) ([]*value, error) {
	t := x.Type()
	r := t.Rank()
	k := ir.Dynamic // the number of starts, if static
	if st := n.Type(1); st.Rank() == 1 {
		k = st.Dims[0]
	}
	sliced := make([]bool, r)
	switch {
	case axesKnown:
		for _, a := range axes {
			sliced[n.axis(a, r)] = true
		}
	case n.Has(3):
		for i := range sliced {
			sliced[i] = true
		}
	default:
		for i := range sliced {
			sliced[i] = k == ir.Dynamic || i < k
		}
	}
	dims := slices.Clone(t.Dims)
	for i, s := range sliced {
		if s {
			dims[i] = ir.Dynamic
		}
	}
	axesV := n.In(3)
	if axesV == nil && n.Has(4) { // steps without axes: the first k
		if k == ir.Dynamic {
			return nil, n.unsupported("steps without axes for starts %s of dynamic length", n.Type(1))
		}
		all := make([]int64, k)
		for i := range all {
			all[i] = int64(i)
		}
		axesV = n.s.use(n.knownI64s(all))
	}
	return outv(ops.SliceDyn(n.b, x, n.In(1), n.In(2), axesV, n.In(4), dims)), nil
}

// convExpand: numpy broadcasting of the input against the shape, both ways
// (a 1 in the shape keeps the input's dim). A shape whose elements are
// known, or equal to the dims of the input they broadcast with, makes the
// static expand; others expand_dyn.
func convExpand(n *node) ([]*value, error) {
	x := n.In(0)
	es, ok := n.Elems(1)
	if !ok || !n.vector(1) {
		return nil, n.unsupported("a shape %s that is not 1-D of static length (the result's rank would be unknown)", n.Type(1))
	}
	xd := dimElems(x)
	r := max(len(xd), len(es))
	target := make([]int, r) // the static expand's, if static
	dims := make([]int, r)   // the result dims known
	static := true
	for i := range r {
		s := knownElem(1)
		if j := i - (r - len(es)); j >= 0 {
			s = es[j]
		}
		d := knownElem(1)
		j := i - (r - len(xd))
		if j >= 0 {
			d = xd[j]
		}
		dims[i] = ir.Dynamic
		switch {
		case s.known && s.val < 0:
			n.fail("shape %v: dims must be sizes >= 0", knownDims(es))
			return nil, nil
		case s.known && s.val != 1:
			target[i], dims[i] = int(s.val), int(s.val)
		case s.known && j >= 0 || s.sameSym(d):
			target[i] = -1 // keep the input's dim (ops.Expand's -1)
			if d.known {
				dims[i] = int(d.val)
			}
		case s.known:
			target[i], dims[i] = 1, 1
		default:
			static = false
			if d.known && d.val != 1 {
				dims[i] = int(d.val)
			}
		}
	}
	if !static {
		return outv(ops.ExpandDyn(n.b, x, n.In(1), dims)), nil
	}
	y := x
	if len(xd) < r {
		lead := make([]int, r-len(xd))
		for i := range lead {
			lead[i] = i
		}
		y = ops.Unsqueeze(n.b, y, lead...)
	}
	return outv(ops.Expand(n.b, y, target...)), nil
}

// convConstantOfShape: a tensor of the given shape filled with the value
// attribute's one element (0.0 f32 by default). A shape known at import
// time makes a full; others constant_of_shape, with the dims the importer
// knows in its type.
func convConstantOfShape(n *node) ([]*value, error) {
	es, ok := n.Elems(0)
	if !ok || !n.vector(0) {
		return nil, n.unsupported("a shape %s that is not 1-D of static length (the result's rank would be unknown)", n.Type(0))
	}
	dt, v := ir.F32, ir.Attr(ir.Float(0))
	if t := n.Tensor("value"); t != nil {
		if t.Len() != 1 {
			n.fail("value has %d elements, want 1", t.Len())
			return nil, nil
		}
		dt = ir.DType(t.DType())
		switch t.DType() {
		case tensor.I64:
			v = ir.Int(t.I64()[0])
		case tensor.I32:
			v = ir.Int(t.I32()[0])
		case tensor.Bool:
			v = ir.Int(int64(t.Float64At(0)))
		default:
			v = ir.Float(t.Float64At(0))
		}
	}
	for _, e := range es {
		if e.known && e.val < 0 {
			n.fail("shape %v: dims must be sizes >= 0", knownDims(es))
			return nil, nil
		}
	}
	if shape, ok := allKnown(es); ok {
		return outv(n.b.Op1("full", ir.A("shape", n.ints(shape), "value", v, "dtype", dt))), nil
	}
	return outv(ops.ConstantOfShape(n.b, n.In(0), dt, v, knownDims(es))), nil
}

// convRange: start, limit and delta are scalars of one dtype; known ones
// fold to a constant, others make range.
func convRange(n *node) ([]*value, error) {
	dt := n.Type(0).DType
	if dt != ir.F32 && dt != ir.F64 && dt != ir.I32 && dt != ir.I64 {
		return nil, n.unsupported("Range of %s", dt)
	}
	start, ok1 := n.KnownFloats(0)
	limit, ok2 := n.KnownFloats(1)
	delta, ok3 := n.KnownFloats(2)
	if !ok1 || !ok2 || !ok3 {
		return outv(ops.Range(n.b, n.In(0), n.In(1), n.In(2))), nil
	}
	return outv(ops.Arange(n.b, dt, start[0], limit[0], delta[0])), nil
}

// convTile: repeats (an input from opset 6) known at import time make the
// static tile; others are read at run time, with the dims the importer
// knows in the result's type.
func convTile(n *node) ([]*value, error) {
	if n.Opset() < 6 {
		return nil, n.unsupported("Tile before opset 6 (tiles and axis inputs)")
	}
	x := n.In(0)
	es, ok := n.Elems(1)
	if !ok || !n.vector(1) {
		return nil, n.unsupported("repeats %s that are not 1-D of static length", n.Type(1))
	}
	if len(es) != x.Type().Rank() {
		n.fail("%d repeats for an input of rank %d", len(es), x.Type().Rank())
		return nil, nil
	}
	if reps, ok := allKnown(es); ok {
		return outv(ops.Tile(n.b, x, n.ints(reps)...)), nil
	}
	dims := make([]int, len(es))
	for i, d := range x.Type().Dims {
		e := es[i]
		switch {
		case e.known && e.val < 0:
			n.fail("repeats %v: entries must be >= 0", knownDims(es))
			return nil, nil
		case e.known && e.val == 0 || d == 0:
			dims[i] = 0
		case e.known && d != ir.Dynamic && e.val <= (1<<62)/int64(d):
			dims[i] = d * int(e.val)
		default:
			dims[i] = ir.Dynamic
		}
	}
	return outv(ops.TileDyn(n.b, x, n.In(1), dims)), nil
}
