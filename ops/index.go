package ops

import (
	"fmt"
	"slices"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Indexing ops.
//
//	slice   {axes, starts, ends, strides?} (x) -> copy of x[start:end:stride] along each listed axis
//	gather  {axis} (x, index)                 -> numpy take: x.shape[:axis] + index.shape + x.shape[axis+1:]
//	one_hot {depth, dtype?} (index)           -> index.shape + [depth], f32 by default
//	one_hot {dtype?} (index, depth)              the same with depth an i32/i64 scalar read at run time
//	topk    {k, axis, largest?} (x)           -> (values, indices i64), the k largest along axis
//	topk    {axis, largest?} (x, k)              the same with k an i32/i64 scalar read at run time
//
// slice and gather work on every dtype; one_hot takes i32/i64 indices and
// makes any dtype; topk takes f32, f64, i32, i64, and with largest false
// (default true) returns the k smallest instead, smallest first.
//
// slice and gather write into results the executor allocates (Compute).
// one_hot and topk allocate their own (Bind): with depth or k an operand,
// their result shapes depend on its value.
//
// Gradients: slice writes dy into zeros of the operand's shape
// (slice_grad), gather and topk scatter-add dy back along the axis
// (gather_grad, scatter_add_along_axis); those helper ops are in
// index_grad.go and shape_grad.go. one_hot has none (integer operand).

func init() {
	register(&Def{Name: "slice", Infer: shpInferSlice, Compute: shpComputeSlice, Grad: shpGradSlice})
	register(&Def{Name: "gather", Infer: shpInferGather, Compute: shpComputeGather, Grad: shpGradGather})
	register(&Def{Name: "one_hot", Infer: shpInferOneHot, Bind: shpBindOneHot, NoGrad: true})
	register(&Def{Name: "topk", Infer: shpInferTopK, Bind: shpBindTopK, Grad: shpGradTopK})
}

// ---- slice ----

// shpSliceSpec is the decoded attributes of slice.
type shpSliceSpec struct {
	axes, starts, ends, strides []int
}

func shpSliceAttrs(attrs ir.Attrs, dims []int) (*shpSliceSpec, error) {
	var s shpSliceSpec
	var err error
	if s.axes, err = attrs.Ints("axes"); err != nil {
		return nil, err
	}
	if s.starts, err = attrs.Ints("starts"); err != nil {
		return nil, err
	}
	if s.ends, err = attrs.Ints("ends"); err != nil {
		return nil, err
	}
	ones := make([]int, len(s.axes))
	for i := range ones {
		ones[i] = 1
	}
	if s.strides, err = shpOptInts(attrs, "strides", ones); err != nil {
		return nil, err
	}
	if len(s.starts) != len(s.axes) || len(s.ends) != len(s.axes) || len(s.strides) != len(s.axes) {
		return nil, fmt.Errorf("axes %v, starts %v, ends %v and strides %v differ in length", s.axes, s.starts, s.ends, s.strides)
	}
	if s.axes, err = shpAxes("axes", s.axes, len(dims)); err != nil {
		return nil, fmt.Errorf("cannot slice %s: %v", dimsString(dims), err)
	}
	if slices.Contains(s.strides, 0) {
		return nil, fmt.Errorf("strides %v: a stride is 0", s.strides)
	}
	return &s, nil
}

// shpSliceRange applies numpy's rules to start:end:step over a dim of size
// d: negative indices count from the end and out-of-range ones are clamped.
// It returns the first index, the number of elements and the step, capped
// to ±max(d,1) (a larger one selects the same elements).
func shpSliceRange(start, end, step, d int) (first, n, st int) {
	clamp := func(i, lo, hi int) int {
		if i < 0 {
			i += d
		}
		return min(max(i, lo), hi)
	}
	if step > 0 {
		step = min(step, max(d, 1))
		start, end = clamp(start, 0, d), clamp(end, 0, d)
		if end > start {
			n = (end-start-1)/step + 1
		}
	} else {
		step = max(step, -max(d, 1))
		start, end = clamp(start, -1, d-1), clamp(end, -1, d-1)
		if start > end {
			n = (start-end-1)/-step + 1
		}
	}
	return start, n, step
}

// dims returns the result dims for input dims (dynamic ones stay dynamic).
func (s *shpSliceSpec) dims(in []int) []int {
	out := slices.Clone(in)
	for i, a := range s.axes {
		if in[a] != ir.Dynamic {
			_, out[a], _ = shpSliceRange(s.starts[i], s.ends[i], s.strides[i], in[a])
		}
	}
	return out
}

func shpInferSlice(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	s, err := shpSliceAttrs(attrs, in[0].Dims)
	if err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(in[0].DType, s.dims(in[0].Dims)...)}, nil
}

// layout returns, for an operand of the given run-time shape, the result
// shape and where its elements are in the operand: the offset of the first
// and the stride of each result dim (for kernels.StridedCopy).
func (s *shpSliceSpec) layout(in []int) (shape []int, off int, strides []int) {
	shape = slices.Clone(in)
	strides = shpStrides(shape)
	for i, a := range s.axes {
		first, n, step := shpSliceRange(s.starts[i], s.ends[i], s.strides[i], shape[a])
		shape[a] = n
		if n > 0 {
			off += first * strides[a]
		}
		strides[a] *= step
	}
	return shape, off, strides
}

func shpComputeSlice(op *ir.Op) (Compute, error) {
	s, err := shpSliceAttrs(op.Attrs, op.Operand(0).Type().Dims)
	if err != nil {
		return Compute{}, err
	}
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		x := in[0]
		shape, off, strides := s.layout(x.Shape())
		shpStrided(c, out[0], x, shape, off, strides)
		return nil
	}}, nil
}

// Slice returns a copy of x[starts[i]:ends[i]] along each axes[i], with
// numpy's rules: negative indices count from the end and out-of-range ones
// are clamped.
func Slice(b *ir.Builder, x *ir.Value, axes, starts, ends []int) *ir.Value {
	return b.Op1("slice", ir.A("axes", axes, "starts", starts, "ends", ends), x)
}

// SliceStrided is Slice with a step per axis; a negative step walks
// backwards from start (so start > end), as in numpy.
func SliceStrided(b *ir.Builder, x *ir.Value, axes, starts, ends, strides []int) *ir.Value {
	return b.Op1("slice", ir.A("axes", axes, "starts", starts, "ends", ends, "strides", strides), x)
}

// shpGradSlice writes dy into zeros of the operand's shape: its static
// shape when it has one (nothing is kept from the forward pass), else read
// from the operand at run time.
func shpGradSlice(g *GradContext) ([]*ir.Value, error) {
	x := g.Op.Operand(0).Type()
	s, err := shpSliceAttrs(g.Op.Attrs, x.Dims)
	if err != nil {
		return nil, err
	}
	if x.IsStatic() {
		return []*ir.Value{SliceGrad(g.B, g.DY[0], nil, x.Dims, s.axes, s.starts, s.ends, s.strides)}, nil
	}
	return []*ir.Value{SliceGrad(g.B, g.DY[0], g.X(0), nil, s.axes, s.starts, s.ends, s.strides)}, nil
}

// ---- gather ----

func shpWantIndex(what string, t ir.Type) error {
	if !t.DType.IsInt() {
		return fmt.Errorf("%s %s must be i32 or i64", what, t)
	}
	return nil
}

func shpInferGather(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 2); err != nil {
		return nil, err
	}
	if err := shpWantIndex("index", in[1]); err != nil {
		return nil, err
	}
	x := in[0].Dims
	axis, err := shpAxis(attrs, "axis", 0, x)
	if err != nil {
		return nil, err
	}
	out := slices.Concat(x[:axis], in[1].Dims, x[axis+1:])
	return []ir.Type{ir.TensorOf(in[0].DType, out...)}, nil
}

// shpIndexError reports index element pos of idx as out of [lo, hi).
func shpIndexError(idx *tensor.Tensor, pos int) error {
	pi := make([]int, idx.Rank())
	for k, p := len(pi)-1, pos; k >= 0; k-- {
		pi[k] = p % idx.Shape()[k]
		p /= idx.Shape()[k]
	}
	var v int64
	if idx.DType() == tensor.I32 {
		v = int64(idx.I32()[pos])
	} else {
		v = idx.I64()[pos]
	}
	return fmt.Errorf("index %d at position %v of %s", v, pi, idx.Type())
}

// shpOutOfRange returns the first element of the i32/i64 tensor idx
// outside [lo, hi), or -1.
func shpOutOfRange(idx *tensor.Tensor, lo, hi int64) int {
	if idx.DType() == tensor.I32 {
		return kernels.OutOfRange(idx.I32(), lo, hi)
	}
	return kernels.OutOfRange(idx.I64(), lo, hi)
}

func shpComputeGather(op *ir.Op) (Compute, error) {
	axis, err := shpAxis(op.Attrs, "axis", 0, op.Operand(0).Type().Dims)
	if err != nil {
		return Compute{}, err
	}
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		x, idx, y := in[0], in[1], out[0]
		dims := x.Shape()
		d := dims[axis]
		if p := shpOutOfRange(idx, -int64(d), int64(d)); p >= 0 {
			return fmt.Errorf("%v is out of range for axis %d of %s (size %d)", shpIndexError(idx, p), axis, x.Type(), d)
		}
		outer, inner := shpSize(dims[:axis]), shpSize(dims[axis+1:])
		switch y.DType().Size() {
		case 1:
			shpGather(shpWords[uint8](y), shpWords[uint8](x), idx, outer, d, inner, c.Threads)
		case 4:
			shpGather(shpWords[uint32](y), shpWords[uint32](x), idx, outer, d, inner, c.Threads)
		case 8:
			shpGather(shpWords[uint64](y), shpWords[uint64](x), idx, outer, d, inner, c.Threads)
		}
		return nil
	}}, nil
}

func shpGather[W shpWord](dst, src []W, idx *tensor.Tensor, outer, d, inner, threads int) {
	if idx.DType() == tensor.I32 {
		kernels.Gather(dst, src, idx.I32(), outer, d, inner, threads)
	} else {
		kernels.Gather(dst, src, idx.I64(), outer, d, inner, threads)
	}
}

// Gather takes the elements of x at the positions index (i32 or i64, any
// rank; negative counts from the end) along axis, like numpy.take: the
// result has shape x.shape[:axis] + index.shape + x.shape[axis+1:].
func Gather(b *ir.Builder, x, index *ir.Value, axis int) *ir.Value {
	return b.Op1("gather", ir.A("axis", axis), x, index)
}

// shpGradGather scatter-adds dy into zeros of x's shape at the gathered
// positions (duplicates accumulate). It keeps the index; x itself only
// when its size along the axis is dynamic.
func shpGradGather(g *GradContext) ([]*ir.Value, error) {
	if !g.Need(0) {
		return make([]*ir.Value, 2), nil
	}
	x := g.Op.Operand(0).Type()
	axis, err := shpAxis(g.Op.Attrs, "axis", 0, x.Dims)
	if err != nil {
		return nil, err
	}
	var like *ir.Value
	if x.Dims[axis] == ir.Dynamic {
		like = g.X(0)
	}
	return []*ir.Value{GatherGrad(g.B, g.DY[0], g.X(1), like, axis, x.Dims[axis]), nil}, nil
}

// ---- one_hot ----

// shpOneHotAttrs decodes one_hot's attributes; depth is 0 when it is the
// second of n operands, read at run time.
func shpOneHotAttrs(attrs ir.Attrs, n int) (int, ir.DType, error) {
	var depth int64
	if n == 2 {
		if attrs.Has("depth") {
			return 0, 0, fmt.Errorf("takes a depth attribute or a depth operand, not both")
		}
	} else {
		var err error
		if depth, err = attrs.Int("depth"); err != nil {
			return 0, 0, err
		}
		if depth < 1 {
			return 0, 0, fmt.Errorf("depth %d must be at least 1", depth)
		}
	}
	dt := ir.F32
	if attrs.Has("dtype") {
		var err error
		if dt, err = attrs.DType("dtype"); err != nil {
			return 0, 0, err
		}
	}
	return int(depth), dt, nil
}

func shpInferOneHot(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if len(in) != 1 && len(in) != 2 {
		return nil, fmt.Errorf("takes 1 or 2 operands, got %d", len(in))
	}
	if err := shpWantIndex("index", in[0]); err != nil {
		return nil, err
	}
	depth, dt, err := shpOneHotAttrs(attrs, len(in))
	if err != nil {
		return nil, err
	}
	if len(in) == 2 {
		if err := wantScalarInt("depth", in[1]); err != nil {
			return nil, err
		}
		depth = ir.Dynamic
	}
	return []ir.Type{ir.TensorOf(dt, append(slices.Clone(in[0].Dims), depth)...)}, nil
}

func shpBindOneHot(op *ir.Op) (Kernel, error) {
	attrDepth, dt, err := shpOneHotAttrs(op.Attrs, op.NumOperands())
	if err != nil {
		return nil, err
	}
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		idx := in[0]
		depth := attrDepth
		if len(in) == 2 {
			d, err := scalarInt("depth", in[1])
			if err != nil {
				return nil, err
			}
			if d < 1 {
				return nil, fmt.Errorf("depth %d must be at least 1", d)
			}
			depth = int(d)
		}
		if p := shpOutOfRange(idx, 0, int64(depth)); p >= 0 {
			return nil, fmt.Errorf("%v is out of range for depth %d", shpIndexError(idx, p), depth)
		}
		y, err := c.New(dt, append(slices.Clone(idx.Shape()), depth))
		if err != nil {
			return nil, err
		}
		switch y.DType() {
		case tensor.F32:
			shpOneHot(y.F32(), idx, depth, 1, c.Threads)
		case tensor.F64:
			shpOneHot(y.F64(), idx, depth, 1, c.Threads)
		case tensor.I32:
			shpOneHot(y.I32(), idx, depth, 1, c.Threads)
		case tensor.I64:
			shpOneHot(y.I64(), idx, depth, 1, c.Threads)
		case tensor.Bool:
			shpOneHot(y.Bool(), idx, depth, true, c.Threads)
		}
		return []*tensor.Tensor{y}, nil
	}, nil
}

func shpOneHot[T any](dst []T, idx *tensor.Tensor, depth int, one T, threads int) {
	if idx.DType() == tensor.I32 {
		kernels.OneHot(dst, idx.I32(), depth, one, threads)
	} else {
		kernels.OneHot(dst, idx.I64(), depth, one, threads)
	}
}

// OneHot encodes the integer tensor index (i32 or i64, values in
// [0, depth)) as a tensor of dtype dt with a new last dim of size depth.
func OneHot(b *ir.Builder, index *ir.Value, depth int, dt ir.DType) *ir.Value {
	return b.Op1("one_hot", ir.A("depth", depth, "dtype", dt), index)
}

// OneHotAt is OneHot with depth the i32/i64 scalar value depth, read at
// run time; the result's last dim is then dynamic.
func OneHotAt(b *ir.Builder, index, depth *ir.Value, dt ir.DType) *ir.Value {
	return b.Op1("one_hot", ir.A("dtype", dt), index, depth)
}

// ---- topk ----

// shpTopKAttrs decodes topk's attributes for an operand of dims; k is −1
// when it is the second of n operands, read at run time.
func shpTopKAttrs(attrs ir.Attrs, dims []int, n int) (k, axis int, largest bool, err error) {
	k = -1
	if n == 2 {
		if attrs.Has("k") {
			return 0, 0, false, fmt.Errorf("takes a k attribute or a k operand, not both")
		}
	} else {
		k64, err := attrs.Int("k")
		if err != nil {
			return 0, 0, false, err
		}
		if k64 < 0 {
			return 0, 0, false, fmt.Errorf("k %d must be >= 0", k64)
		}
		k = int(k64)
	}
	if largest, err = nnBool(attrs, "largest", true); err != nil {
		return 0, 0, false, err
	}
	if axis, err = shpAxis(attrs, "axis", -1, dims); err != nil {
		return 0, 0, false, err
	}
	return k, axis, largest, nil
}

func shpInferTopK(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if len(in) != 1 && len(in) != 2 {
		return nil, fmt.Errorf("takes 1 or 2 operands, got %d", len(in))
	}
	x := in[0]
	if x.DType == ir.I1 {
		return nil, fmt.Errorf("operand %s: topk takes f32, f64, i32 or i64", x)
	}
	k, axis, _, err := shpTopKAttrs(attrs, x.Dims, len(in))
	if err != nil {
		return nil, err
	}
	out := slices.Clone(x.Dims)
	if len(in) == 2 {
		if err := wantScalarInt("k", in[1]); err != nil {
			return nil, err
		}
		out[axis] = ir.Dynamic
	} else {
		if d := x.Dims[axis]; d != ir.Dynamic && k > d {
			return nil, fmt.Errorf("k %d is larger than axis %d of %s", k, axis, dimsString(x.Dims))
		}
		out[axis] = k
	}
	return []ir.Type{ir.TensorOf(x.DType, out...), ir.TensorOf(ir.I64, out...)}, nil
}

func shpBindTopK(op *ir.Op) (Kernel, error) {
	attrK, axis, largest, err := shpTopKAttrs(op.Attrs, op.Operand(0).Type().Dims, op.NumOperands())
	if err != nil {
		return nil, err
	}
	dt := op.Result(0).Type().DType
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		dims := x.Shape()
		n := dims[axis]
		k := attrK
		if len(in) == 2 {
			k64, err := scalarInt("k", in[1])
			if err != nil {
				return nil, err
			}
			if k64 < 0 || k64 > int64(n) {
				return nil, fmt.Errorf("k %d is out of range [0, %d] for axis %d of %s", k64, n, axis, x.Type())
			}
			k = int(k64)
		}
		if k > n {
			return nil, fmt.Errorf("k %d is larger than axis %d of %s", k, axis, x.Type())
		}
		outer, inner := shpSize(dims[:axis]), shpSize(dims[axis+1:])
		out := slices.Clone(dims)
		out[axis] = k
		outs := make([]*tensor.Tensor, 2)
		if outs[0], err = c.New(dt, out); err != nil {
			return nil, err
		}
		if outs[1], err = c.New(ir.I64, out); err != nil {
			shpRelease(outs)
			return nil, err
		}
		scratch, err := c.New(ir.I64, []int{kernels.TopKScratch(c.Threads, outer, n, inner, k)})
		if err != nil {
			shpRelease(outs)
			return nil, err
		}
		defer scratch.Release()
		v, idx, sc := outs[0], outs[1].I64(), scratch.I64()
		switch x.DType() {
		case tensor.F32:
			kernels.TopK(v.F32(), idx, x.F32(), outer, n, inner, k, largest, sc, c.Threads)
		case tensor.F64:
			kernels.TopK(v.F64(), idx, x.F64(), outer, n, inner, k, largest, sc, c.Threads)
		case tensor.I32:
			kernels.TopK(v.I32(), idx, x.I32(), outer, n, inner, k, largest, sc, c.Threads)
		case tensor.I64:
			kernels.TopK(v.I64(), idx, x.I64(), outer, n, inner, k, largest, sc, c.Threads)
		}
		return outs, nil
	}, nil
}

// TopK returns the k largest elements of x along axis (negative counts
// from the end), largest first, or with largest false the k smallest,
// smallest first; and their positions (i64). Equal values keep the lower
// position first; NaN counts as the largest.
func TopK(b *ir.Builder, x *ir.Value, k, axis int, largest bool) (values, indices *ir.Value) {
	r := b.Op("topk", ir.A("k", k, "axis", axis, "largest", largest), x).Results()
	return r[0], r[1]
}

// TopKAt is TopK with k the i32/i64 scalar value k, read at run time; the
// results' size along axis is then dynamic.
func TopKAt(b *ir.Builder, x, k *ir.Value, axis int, largest bool) (values, indices *ir.Value) {
	r := b.Op("topk", ir.A("axis", axis, "largest", largest), x, k).Results()
	return r[0], r[1]
}

// shpGradTopK scatters dy of the values back to the positions the indices
// result holds (distinct within each slice), into zeros of x's shape. It
// keeps the indices; x itself only when its size along the axis is
// dynamic.
func shpGradTopK(g *GradContext) ([]*ir.Value, error) {
	dx := make([]*ir.Value, g.Op.NumOperands())
	if g.DY[0] == nil {
		return dx, nil
	}
	x := g.Op.Operand(0).Type()
	_, axis, _, err := shpTopKAttrs(g.Op.Attrs, x.Dims, g.Op.NumOperands())
	if err != nil {
		return nil, err
	}
	var like *ir.Value
	if x.Dims[axis] == ir.Dynamic {
		like = g.X(0)
	}
	dx[0] = ScatterAddAlongAxis(g.B, g.DY[0], g.Y(1), like, axis, x.Dims[axis])
	return dx, nil
}
