package ops

import (
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Shape ops. All work on every dtype (f32, f64, i32, i64, i1): they move
// elements without looking at them.
//
//	reshape   {shape} (x)             -> view; one -1 is inferred, 0 is a literal size 0
//	transpose {perm} (x)              -> copy with dims permuted
//	squeeze   {axes} (x)              -> view without the listed size-1 dims
//	unsqueeze {axes} (x)              -> view with size-1 dims at the listed result positions
//	flatten   {start_axis, stop_axis} (x) -> view with dims start..stop merged
//	expand    {shape} (x)             -> copy broadcast to shape (-1 keeps the input dim)
//	concat    {axis} (x1, ..., xn)    -> copy of the operands joined along axis
//	split     {sections, axis} (x)    -> len(sections) copies of consecutive pieces along axis
//
// Views share the input's storage (one more reference, no bytes). The
// executor makes those of reshape, unsqueeze and flatten (Compute.View),
// and the other ops write into results it allocates with the shapes Infer
// gives (Compute), so Infer makes every run-time check of shapes. squeeze
// makes its view itself (Bind): without axes it drops the dims the
// operand's static type says are 1, which Infer, given run-time shapes,
// cannot tell from dynamic dims that happen to be 1.
//
// Gradients (each rule sits after its op's kernel): the views and transpose
// map dy back to the operand's layout, expand sums dy back to the operand
// (reduce_sum_to), concat slices dy per operand and split concatenates the
// result gradients. Only static types are read where they suffice; the
// helper ops for dynamic shapes (reshape_like, split_like) are in
// shape_grad.go.

func init() {
	register(&Def{Name: "reshape", Infer: shpInferReshape, Compute: shpComputeReshape, Grad: shpGradView, PerSample: perSampleReshape})
	register(&Def{Name: "transpose", Infer: shpInferTranspose, Compute: shpComputeTranspose, Grad: shpGradTranspose})
	register(&Def{Name: "squeeze", Infer: shpInferSqueeze, Bind: shpBindSqueeze, Grad: shpGradSqueeze})
	register(&Def{Name: "unsqueeze", Infer: shpInferUnsqueeze, Compute: shpComputeUnsqueeze, Grad: shpGradUnsqueeze})
	register(&Def{Name: "flatten", Infer: shpInferFlatten, Compute: shpComputeFlatten, Grad: shpGradView, PerSample: perSampleFlatten})
	register(&Def{Name: "expand", Infer: shpInferExpand, Compute: shpComputeExpand, Grad: shpGradExpand})
	register(&Def{Name: "concat", Infer: shpInferConcat, Compute: shpComputeConcat, Grad: shpGradConcat, NCHWc: nchwcConcat})
	register(&Def{Name: "split", Infer: shpInferSplit, Compute: shpComputeSplit, Grad: shpGradSplit})
}

// ---- helpers shared by the shape and index ops ----

// shpWord is the machine word a dtype's elements are moved as.
type shpWord interface{ ~uint8 | ~uint32 | ~uint64 }

// shpWords views t's elements as words of its element size.
func shpWords[W shpWord](t *tensor.Tensor) []W {
	raw := t.Raw()
	if len(raw) == 0 {
		return nil
	}
	return unsafe.Slice((*W)(unsafe.Pointer(unsafe.SliceData(raw))), t.Len())
}

// shpStrided copies src into dst through kernels.StridedCopy (see there).
func shpStrided(c *Ctx, dst, src *tensor.Tensor, shape []int, off int, strides []int) {
	switch dst.DType().Size() {
	case 1:
		kernels.StridedCopy(shpWords[uint8](dst), shpWords[uint8](src), shape, off, strides, c.Threads)
	case 4:
		kernels.StridedCopy(shpWords[uint32](dst), shpWords[uint32](src), shape, off, strides, c.Threads)
	case 8:
		kernels.StridedCopy(shpWords[uint64](dst), shpWords[uint64](src), shape, off, strides, c.Threads)
	}
}

// shpStrides returns the row-major element strides of shape.
func shpStrides(shape []int) []int {
	st := make([]int, len(shape))
	s := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = s
		s *= shape[i]
	}
	return st
}

// shpProd is the product of dims: its value and true when all are static,
// or 0 and true when a static dim is 0, else (-1, false).
func shpProd(dims []int) (int, bool) {
	n, known := 1, true
	for _, d := range dims {
		switch d {
		case 0:
			return 0, true
		case ir.Dynamic:
			known = false
		default:
			n *= d
		}
	}
	if !known {
		return ir.Dynamic, false
	}
	return n, true
}

// shpSize is the element count of static dims.
func shpSize(dims []int) int {
	n := 1
	for _, d := range dims {
		n *= d
	}
	return n
}

// shpAxes normalizes a list of axes against rank and rejects duplicates.
func shpAxes(name string, axes []int, rank int) ([]int, error) {
	out := make([]int, len(axes))
	for i, a := range axes {
		if rank == 0 || a < -rank || a >= rank {
			return nil, fmt.Errorf("%s %v: axis %d is out of range for rank %d", name, axes, a, rank)
		}
		if a < 0 {
			a += rank
		}
		if slices.Contains(out[:i], a) {
			return nil, fmt.Errorf("%s %v: axis %d appears twice", name, axes, a)
		}
		out[i] = a
	}
	return out, nil
}

// shpAxis normalizes the single axis attribute name (default def when
// absent) against rank, which must be at least 1.
func shpAxis(attrs ir.Attrs, name string, def int, dims []int) (int, error) {
	axis := def
	if attrs.Has(name) {
		a, err := attrs.Int(name)
		if err != nil {
			return 0, err
		}
		axis = int(a)
	}
	rank := len(dims)
	if axis < -rank || axis >= rank {
		return 0, fmt.Errorf("%s %d is out of range for operand shape %s (rank %d)", name, axis, dimsString(dims), rank)
	}
	if axis < 0 {
		axis += rank
	}
	return axis, nil
}

// shpOptInts returns the list-of-ints attribute name, or def when absent.
func shpOptInts(attrs ir.Attrs, name string, def []int) ([]int, error) {
	if !attrs.Has(name) {
		return def, nil
	}
	return attrs.Ints(name)
}

// shpOptInt returns the int attribute name, or def when absent.
func shpOptInt(attrs ir.Attrs, name string, def int) (int, error) {
	if !attrs.Has(name) {
		return def, nil
	}
	v, err := attrs.Int(name)
	return int(v), err
}

// shpView returns x reshaped to shape as a view; its error names both
// shapes.
func shpView(x *tensor.Tensor, shape []int) ([]*tensor.Tensor, error) {
	v, err := x.Reshape(shape...)
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{v}, nil
}

// shpViewOf is the Compute of an op whose one result is a view of operand
// 0 in the shape Infer gives: the executor makes it, and nothing is left
// to run.
func shpViewOf() Compute { return Compute{Fn: shpNothing, View: []int{0}} }

func shpNothing(*Ctx, []*tensor.Tensor, []*tensor.Tensor) error { return nil }

// shpRelease releases the tensors made so far when a kernel fails.
func shpRelease(ts []*tensor.Tensor) {
	for _, t := range ts {
		if t != nil {
			t.Release()
		}
	}
}

// ---- reshape ----

// shpReshapeDims resolves a reshape spec against input dims: one -1 is
// inferred from the element count (dynamic when that count is unknown), 0
// is a literal size 0. With static dims it is also the run-time check.
func shpReshapeDims(in, spec []int) ([]int, error) {
	infer := -1
	p := 1
	for i, d := range spec {
		switch {
		case d == -1 && infer >= 0:
			return nil, fmt.Errorf("shape %v has more than one -1", spec)
		case d == -1:
			infer = i
		case d < 0:
			return nil, fmt.Errorf("shape %v: dims must be sizes >= 0 or one -1", spec)
		default:
			p *= d
		}
	}
	out := slices.Clone(spec)
	if infer >= 0 && p == 0 {
		return nil, fmt.Errorf("cannot reshape %s to %v: the -1 is ambiguous next to a size 0", dimsString(in), spec)
	}
	n, known := shpProd(in)
	if !known {
		if infer >= 0 {
			out[infer] = ir.Dynamic
			return out, nil
		}
		// The element count is a multiple of the static dims' product.
		k := 1
		for _, d := range in {
			if d != ir.Dynamic {
				k *= d
			}
		}
		if p%k != 0 {
			return nil, fmt.Errorf("cannot reshape %s to %v (%d elements, not a multiple of %d)", dimsString(in), spec, p, k)
		}
		return out, nil
	}
	if infer >= 0 {
		if n%p != 0 {
			return nil, fmt.Errorf("cannot reshape %s (%d elements) to %v: the -1 cannot be inferred", dimsString(in), n, spec)
		}
		out[infer] = n / p
		return out, nil
	}
	if n != p {
		return nil, fmt.Errorf("cannot reshape %s (%d elements) to %v (%d elements)", dimsString(in), n, spec, p)
	}
	return out, nil
}

func shpInferReshape(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	spec, err := attrs.Ints("shape")
	if err != nil {
		return nil, err
	}
	out, err := shpReshapeDims(in[0].Dims, spec)
	if err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(in[0].DType, out...)}, nil
}

func shpComputeReshape(op *ir.Op) (Compute, error) {
	if _, err := op.Attrs.Ints("shape"); err != nil {
		return Compute{}, err
	}
	return shpViewOf(), nil
}

// Reshape returns a view of x with the given shape: one dim may be -1
// (inferred from the element count); 0 is a literal size 0, not "copy the
// input dim".
func Reshape(b *ir.Builder, x *ir.Value, shape ...int) *ir.Value {
	return b.Op1("reshape", ir.A("shape", shape), x)
}

// shpGradView is the rule of reshape and flatten: dy viewed in the
// operand's shape.
func shpGradView(g *GradContext) ([]*ir.Value, error) {
	return []*ir.Value{shpReshapeBack(g, g.DY[0], 0)}, nil
}

// shpReshapeBack views dy in the shape of operand i of g's op. From the
// static type when it has at most one dynamic dim (that one becomes the -1
// of the reshape), so nothing is kept from the forward pass; otherwise the
// shape is read from the operand at run time by reshape_like.
func shpReshapeBack(g *GradContext, dy *ir.Value, i int) *ir.Value {
	dims := g.Op.Operand(i).Type().Dims
	dyn, zero := 0, false
	for _, d := range dims {
		dyn += shpB2i(d == ir.Dynamic)
		zero = zero || d == 0
	}
	switch {
	case dyn == 0 && slices.Equal(dy.Type().Dims, dims):
		return dy
	case dyn == 0 || dyn == 1 && !zero:
		// ir.Dynamic is -1, the inferred dim of a reshape.
		return Reshape(g.B, dy, dims...)
	}
	return ReshapeLike(g.B, dy, g.X(i))
}

// shpB2i is 1 for true and 0 for false.
func shpB2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ---- transpose ----

func shpPerm(attrs ir.Attrs, dims []int) ([]int, error) {
	perm, err := attrs.Ints("perm")
	if err != nil {
		return nil, err
	}
	if len(perm) != len(dims) {
		return nil, fmt.Errorf("perm %v is not a permutation of the %d axes of %s", perm, len(dims), dimsString(dims))
	}
	out, err := shpAxes("perm", perm, len(dims))
	if err != nil {
		return nil, fmt.Errorf("perm %v is not a permutation of the axes of %s: %v", perm, dimsString(dims), err)
	}
	return out, nil
}

func shpInferTranspose(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	perm, err := shpPerm(attrs, in[0].Dims)
	if err != nil {
		return nil, err
	}
	out := make([]int, len(perm))
	for i, p := range perm {
		out[i] = in[0].Dims[p]
	}
	return []ir.Type{ir.TensorOf(in[0].DType, out...)}, nil
}

func shpComputeTranspose(op *ir.Op) (Compute, error) {
	perm, err := shpPerm(op.Attrs, op.Operand(0).Type().Dims)
	if err != nil {
		return Compute{}, err
	}
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		x := in[0]
		src := shpStrides(x.Shape())
		strides := make([]int, len(perm))
		for i, p := range perm {
			strides[i] = src[p]
		}
		shpStrided(c, out[0], x, out[0].Shape(), 0, strides)
		return nil
	}}, nil
}

// Transpose returns a copy of x with its axes permuted: result axis i is
// axis perm[i] of x.
func Transpose(b *ir.Builder, x *ir.Value, perm ...int) *ir.Value {
	return b.Op1("transpose", ir.A("perm", perm), x)
}

// shpGradTranspose transposes dy by the inverse permutation.
func shpGradTranspose(g *GradContext) ([]*ir.Value, error) {
	perm, err := shpPerm(g.Op.Attrs, g.Op.Operand(0).Type().Dims)
	if err != nil {
		return nil, err
	}
	inv := make([]int, len(perm))
	identity := true
	for i, p := range perm {
		inv[p] = i
		identity = identity && p == i
	}
	if identity {
		return []*ir.Value{g.DY[0]}, nil
	}
	return []*ir.Value{Transpose(g.B, g.DY[0], inv...)}, nil
}

// ---- squeeze / unsqueeze ----

// shpSqueezeAxes returns the axes squeeze removes from dims: the listed
// ones, each of size 1 or dynamic (checked at run time), or with no list
// every dim statically known to be 1. Dynamic dims are kept then, since the
// result rank must be static.
func shpSqueezeAxes(attrs ir.Attrs, dims []int) ([]int, error) {
	axes, err := shpOptInts(attrs, "axes", nil)
	if err != nil {
		return nil, err
	}
	if len(axes) == 0 {
		var out []int
		for i, d := range dims {
			if d == 1 {
				out = append(out, i)
			}
		}
		return out, nil
	}
	out, err := shpAxes("axes", axes, len(dims))
	if err != nil {
		return nil, fmt.Errorf("cannot squeeze %s: %v", dimsString(dims), err)
	}
	for _, a := range out {
		if d := dims[a]; d != 1 && d != ir.Dynamic {
			return nil, fmt.Errorf("cannot squeeze axis %d of %s: its size is %d, not 1", a, dimsString(dims), d)
		}
	}
	return out, nil
}

// shpDrop returns dims without the listed axes.
func shpDrop(dims, axes []int) []int {
	out := make([]int, 0, len(dims))
	for i, d := range dims {
		if !slices.Contains(axes, i) {
			out = append(out, d)
		}
	}
	return out
}

func shpInferSqueeze(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	axes, err := shpSqueezeAxes(attrs, in[0].Dims)
	if err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(in[0].DType, shpDrop(in[0].Dims, axes)...)}, nil
}

func shpBindSqueeze(op *ir.Op) (Kernel, error) {
	axes, err := shpSqueezeAxes(op.Attrs, op.Operand(0).Type().Dims)
	if err != nil {
		return nil, err
	}
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		dims := in[0].Shape()
		for _, a := range axes {
			if a >= len(dims) || dims[a] != 1 {
				return nil, fmt.Errorf("cannot squeeze axis %d of %s: its size is not 1", a, in[0].Type())
			}
		}
		return shpView(in[0], shpDrop(dims, axes))
	}, nil
}

// Squeeze returns a view of x without the given size-1 axes; with no axes,
// without every dim statically known to be 1.
func Squeeze(b *ir.Builder, x *ir.Value, axes ...int) *ir.Value {
	if axes == nil {
		axes = []int{}
	}
	return b.Op1("squeeze", ir.A("axes", axes), x)
}

// shpGradSqueeze puts the removed size-1 dims back into dy.
func shpGradSqueeze(g *GradContext) ([]*ir.Value, error) {
	axes, err := shpSqueezeAxes(g.Op.Attrs, g.Op.Operand(0).Type().Dims)
	if err != nil {
		return nil, err
	}
	if len(axes) == 0 {
		return []*ir.Value{g.DY[0]}, nil
	}
	return []*ir.Value{Unsqueeze(g.B, g.DY[0], axes...)}, nil
}

// shpUnsqueezeAxes normalizes the axes of unsqueeze: positions in the
// result, whose rank is rank+len(axes).
func shpUnsqueezeAxes(attrs ir.Attrs, dims []int) ([]int, error) {
	axes, err := attrs.Ints("axes")
	if err != nil {
		return nil, err
	}
	out, err := shpAxes("axes", axes, len(dims)+len(axes))
	if err != nil {
		return nil, fmt.Errorf("cannot unsqueeze %s: %v", dimsString(dims), err)
	}
	return out, nil
}

// shpInsertOnes returns dims with 1s at the result positions axes.
func shpInsertOnes(dims, axes []int) []int {
	out := make([]int, len(dims)+len(axes))
	j := 0
	for i := range out {
		if slices.Contains(axes, i) {
			out[i] = 1
		} else {
			out[i] = dims[j]
			j++
		}
	}
	return out
}

func shpInferUnsqueeze(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	axes, err := shpUnsqueezeAxes(attrs, in[0].Dims)
	if err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(in[0].DType, shpInsertOnes(in[0].Dims, axes)...)}, nil
}

func shpComputeUnsqueeze(op *ir.Op) (Compute, error) {
	if _, err := shpUnsqueezeAxes(op.Attrs, op.Operand(0).Type().Dims); err != nil {
		return Compute{}, err
	}
	return shpViewOf(), nil
}

// Unsqueeze returns a view of x with size-1 dims inserted at the given
// positions of the result.
func Unsqueeze(b *ir.Builder, x *ir.Value, axes ...int) *ir.Value {
	return b.Op1("unsqueeze", ir.A("axes", axes), x)
}

// shpGradUnsqueeze removes the inserted size-1 dims from dy. (Squeeze with
// no axes would remove every size-1 dim, hence the empty case.)
func shpGradUnsqueeze(g *GradContext) ([]*ir.Value, error) {
	axes, err := shpUnsqueezeAxes(g.Op.Attrs, g.Op.Operand(0).Type().Dims)
	if err != nil {
		return nil, err
	}
	if len(axes) == 0 {
		return []*ir.Value{g.DY[0]}, nil
	}
	return []*ir.Value{Squeeze(g.B, g.DY[0], axes...)}, nil
}

// ---- flatten ----

// shpFlattenRange decodes start_axis (default 1) and stop_axis (default -1)
// against rank >= 1.
func shpFlattenRange(attrs ir.Attrs, dims []int) (int, int, error) {
	start, err := shpOptInt(attrs, "start_axis", 1)
	if err != nil {
		return 0, 0, err
	}
	stop, err := shpOptInt(attrs, "stop_axis", -1)
	if err != nil {
		return 0, 0, err
	}
	r := len(dims)
	s, e := start, stop
	if s < 0 {
		s += r
	}
	if e < 0 {
		e += r
	}
	if s < 0 || s >= r || e < 0 || e >= r || s > e {
		return 0, 0, fmt.Errorf("start_axis %d and stop_axis %d are not an axis range of %s (rank %d)", start, stop, dimsString(dims), r)
	}
	return s, e, nil
}

// shpFlattenDims merges dims start..stop; a rank-0 input gives [1].
func shpFlattenDims(dims []int, start, stop int) []int {
	if len(dims) == 0 {
		return []int{1}
	}
	m, _ := shpProd(dims[start : stop+1])
	out := slices.Clone(dims[:start])
	out = append(out, m)
	return append(out, dims[stop+1:]...)
}

func shpInferFlatten(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	dims := in[0].Dims
	if len(dims) == 0 {
		return []ir.Type{ir.TensorOf(in[0].DType, 1)}, nil
	}
	s, e, err := shpFlattenRange(attrs, dims)
	if err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(in[0].DType, shpFlattenDims(dims, s, e)...)}, nil
}

func shpComputeFlatten(op *ir.Op) (Compute, error) {
	if dims := op.Operand(0).Type().Dims; len(dims) > 0 {
		if _, _, err := shpFlattenRange(op.Attrs, dims); err != nil {
			return Compute{}, err
		}
	}
	return shpViewOf(), nil
}

// Flatten returns a view of x with axes start..stop (inclusive, negative
// counting from the end) merged into one; Paddle's defaults are 1 and -1.
// A rank-0 x gives shape [1].
func Flatten(b *ir.Builder, x *ir.Value, start, stop int) *ir.Value {
	return b.Op1("flatten", ir.A("start_axis", start, "stop_axis", stop), x)
}

// ---- expand ----

// shpExpandDims broadcasts dims to the target shape (aligned right; -1
// keeps the input dim). A dynamic input dim against a size k becomes k and
// is checked at run time.
func shpExpandDims(dims, shape []int) ([]int, error) {
	if len(shape) < len(dims) {
		return nil, fmt.Errorf("cannot expand %s to %v: the target has fewer dims", dimsString(dims), shape)
	}
	lead := len(shape) - len(dims)
	out := make([]int, len(shape))
	for i, t := range shape {
		if t < -1 {
			return nil, fmt.Errorf("cannot expand %s to %v: dims must be sizes >= 0 or -1", dimsString(dims), shape)
		}
		if i < lead {
			if t == -1 {
				return nil, fmt.Errorf("cannot expand %s to %v: -1 at position %d has no input dim to keep", dimsString(dims), shape, i)
			}
			out[i] = t
			continue
		}
		d := dims[i-lead]
		switch {
		case t == -1:
			out[i] = d
		case d == t || d == 1 || d == ir.Dynamic:
			out[i] = t
		default:
			return nil, fmt.Errorf("cannot expand %s to %v: dim %d is %d, not 1 or %d", dimsString(dims), shape, i-lead, d, t)
		}
	}
	return out, nil
}

func shpInferExpand(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	shape, err := attrs.Ints("shape")
	if err != nil {
		return nil, err
	}
	out, err := shpExpandDims(in[0].Dims, shape)
	if err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(in[0].DType, out...)}, nil
}

func shpComputeExpand(op *ir.Op) (Compute, error) {
	if _, err := op.Attrs.Ints("shape"); err != nil {
		return Compute{}, err
	}
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		shpBroadcastInto(c, out[0], in[0])
		return nil
	}}, nil
}

// shpBroadcastInto copies x broadcast (numpy rules, aligned right) to
// y's shape into y.
func shpBroadcastInto(c *Ctx, y, x *tensor.Tensor) {
	dims, out := x.Shape(), y.Shape()
	lead := len(out) - len(dims)
	src := shpStrides(dims)
	strides := make([]int, len(out))
	for i := lead; i < len(out); i++ {
		if dims[i-lead] != 1 {
			strides[i] = src[i-lead]
		}
	}
	shpStrided(c, y, x, out, 0, strides)
}

// Expand returns a copy of x broadcast (numpy rules) to shape; -1 keeps
// the input dim.
func Expand(b *ir.Builder, x *ir.Value, shape ...int) *ir.Value {
	return b.Op1("expand", ir.A("shape", shape), x)
}

// shpGradExpand sums dy over the broadcast dims, back to the operand's
// shape.
func shpGradExpand(g *GradContext) ([]*ir.Value, error) {
	return []*ir.Value{g.Unbroadcast(g.DY[0], 0)}, nil
}

// ---- concat ----

// shpConcatDims checks the operand dims of concat along axis and returns
// the result dims.
func shpConcatDims(in [][]int, axis int) ([]int, error) {
	out := slices.Clone(in[0])
	for k := 1; k < len(in); k++ {
		dims := in[k]
		if len(dims) != len(out) {
			return nil, fmt.Errorf("operand shapes %s and %s differ in rank", dimsString(in[0]), dimsString(dims))
		}
		for i, d := range dims {
			switch {
			case i == axis:
				if d == ir.Dynamic || out[i] == ir.Dynamic {
					out[i] = ir.Dynamic
				} else {
					out[i] += d
				}
			case out[i] == ir.Dynamic:
				out[i] = d
			case d != ir.Dynamic && d != out[i]:
				return nil, fmt.Errorf("operand shapes %s and %s differ outside axis %d", dimsString(in[0]), dimsString(dims), axis)
			}
		}
	}
	return out, nil
}

func shpInferConcat(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if len(in) == 0 {
		return nil, fmt.Errorf("takes at least 1 operand, got 0")
	}
	for _, t := range in[1:] {
		if t.DType != in[0].DType {
			return nil, fmt.Errorf("operands %s and %s differ in dtype", in[0], t)
		}
	}
	axis, err := shpAxis(attrs, "axis", 0, in[0].Dims)
	if err != nil {
		return nil, err
	}
	dims := make([][]int, len(in))
	for i, t := range in {
		dims[i] = t.Dims
	}
	out, err := shpConcatDims(dims, axis)
	if err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(in[0].DType, out...)}, nil
}

func shpComputeConcat(op *ir.Op) (Compute, error) {
	axis, err := shpAxis(op.Attrs, "axis", 0, op.Operand(0).Type().Dims)
	if err != nil {
		return Compute{}, err
	}
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		shpConcatInto(c, out[0], in, axis)
		return nil
	}}, nil
}

// shpConcat joins in (at least one, of dtype dt) along axis into a new
// tensor (for the sequence ops, which allocate their results).
func shpConcat(c *Ctx, dt ir.DType, in []*tensor.Tensor, axis int) (*tensor.Tensor, error) {
	dims := make([][]int, len(in))
	for i, x := range in {
		dims[i] = x.Shape()
	}
	out, err := shpConcatDims(dims, axis)
	if err != nil {
		return nil, err
	}
	y, err := c.New(dt, out)
	if err != nil {
		return nil, err
	}
	shpConcatInto(c, y, in, axis)
	return y, nil
}

// shpConcatInto joins in along axis into y, of the joined shape.
func shpConcatInto(c *Ctx, y *tensor.Tensor, in []*tensor.Tensor, axis int) {
	out := y.Shape()
	outer := shpSize(out[:axis])
	inner := shpSize(out[axis+1:])
	var wbuf [shpParts]int
	widths := wbuf[:0]
	for _, x := range in {
		widths = append(widths, x.Shape()[axis]*inner)
	}
	switch y.DType().Size() {
	case 1:
		shpConcatWords[uint8](y, in, outer, widths, c.Threads)
	case 4:
		shpConcatWords[uint32](y, in, outer, widths, c.Threads)
	case 8:
		shpConcatWords[uint64](y, in, outer, widths, c.Threads)
	}
}

// shpParts is how many pieces a concat or split keeps on the stack; more
// take a Go allocation.
const shpParts = 8

func shpConcatWords[W shpWord](y *tensor.Tensor, in []*tensor.Tensor, outer int, widths []int, threads int) {
	var buf [shpParts][]W
	kernels.ConcatRows(shpWords[W](y), shpWordsOf(buf[:0], in), outer, widths, threads)
}

// shpWordsOf appends shpWords of each tensor of ts to dst.
func shpWordsOf[W shpWord](dst [][]W, ts []*tensor.Tensor) [][]W {
	for _, t := range ts {
		dst = append(dst, shpWords[W](t))
	}
	return dst
}

// Concat joins xs (at least one, same dtype, dims equal except along axis)
// along axis into a new tensor.
func Concat(b *ir.Builder, axis int, xs ...*ir.Value) *ir.Value {
	return b.Op1("concat", ir.A("axis", axis), xs...)
}

// shpEnd is a slice bound past the end of any dim (clamped to it).
const shpEnd = math.MaxInt64

// shpGradConcat cuts dy along the axis into the operands' pieces. The
// operands' sizes along the axis come from their static types: when at
// most one is dynamic, each needed piece is a slice of dy, counted from
// the start for the operands before the dynamic one and from the end for
// those after it, so nothing is kept from the forward pass. With two or
// more dynamic sizes, split_like reads them from those operands at run
// time.
func shpGradConcat(g *GradContext) ([]*ir.Value, error) {
	n := g.Op.NumOperands()
	axis, err := shpAxis(g.Op.Attrs, "axis", 0, g.Op.Operand(0).Type().Dims)
	if err != nil {
		return nil, err
	}
	dy := g.DY[0]
	dx := make([]*ir.Value, n)
	if n == 1 {
		dx[0] = dy
		return dx, nil
	}
	sizes := make([]int, n)
	var dyns []int
	for i := range n {
		sizes[i] = g.Op.Operand(i).Type().Dims[axis]
		if sizes[i] == ir.Dynamic {
			dyns = append(dyns, i)
		}
	}
	if len(dyns) > 1 {
		likes := make([]*ir.Value, len(dyns))
		for k, i := range dyns {
			likes[k] = g.X(i)
		}
		parts := SplitLike(g.B, dy, axis, sizes, likes...)
		for i := range n {
			if g.Need(i) {
				dx[i] = parts[i]
			}
		}
		return dx, nil
	}
	dyn := n // the operand with a dynamic size, or n
	if len(dyns) == 1 {
		dyn = dyns[0]
	}
	// suffix[i] is the total size of operands i.. (static past dyn).
	suffix := make([]int, n+1)
	for i := n - 1; i > dyn; i-- {
		suffix[i] = suffix[i+1] + sizes[i]
	}
	pre := 0
	for i := range n {
		var start, end int
		switch {
		case i < dyn:
			start, end = pre, pre+sizes[i]
			pre += sizes[i]
		case i == dyn:
			start, end = pre, -suffix[i+1]
		case sizes[i] == 0:
			start, end = shpEnd, shpEnd
		default:
			start, end = -suffix[i], -suffix[i+1]
		}
		if i >= dyn && end == 0 {
			end = shpEnd
		}
		if g.Need(i) {
			dx[i] = Slice(g.B, dy, []int{axis}, []int{start}, []int{end})
		}
	}
	return dx, nil
}

// ---- split ----

// shpSections resolves the sections of split against the split dim d: one
// -1 takes the rest (dynamic when d is).
func shpSections(sections []int, d int) ([]int, error) {
	if len(sections) == 0 {
		return nil, fmt.Errorf("sections is empty")
	}
	rest, sum := -1, 0
	for i, s := range sections {
		switch {
		case s == -1 && rest >= 0:
			return nil, fmt.Errorf("sections %v has more than one -1", sections)
		case s == -1:
			rest = i
		case s < 0:
			return nil, fmt.Errorf("sections %v: sizes must be >= 0 or one -1", sections)
		default:
			sum += s
		}
	}
	out := slices.Clone(sections)
	switch {
	case d == ir.Dynamic:
		// rest stays -1, which is ir.Dynamic; the sum is checked at run time.
	case rest >= 0 && sum > d:
		return nil, fmt.Errorf("sections %v add up to more than the dim's size %d", sections, d)
	case rest >= 0:
		out[rest] = d - sum
	case sum != d:
		return nil, fmt.Errorf("sections %v add up to %d, not the dim's size %d", sections, sum, d)
	}
	return out, nil
}

func shpSplitAttrs(attrs ir.Attrs, dims []int) ([]int, int, error) {
	sections, err := attrs.Ints("sections")
	if err != nil {
		return nil, 0, err
	}
	axis, err := shpAxis(attrs, "axis", 0, dims)
	if err != nil {
		return nil, 0, err
	}
	return sections, axis, nil
}

func shpInferSplit(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	dims := in[0].Dims
	sections, axis, err := shpSplitAttrs(attrs, dims)
	if err != nil {
		return nil, err
	}
	sizes, err := shpSections(sections, dims[axis])
	if err != nil {
		return nil, fmt.Errorf("cannot split %s, of shape %s, along axis %d: %v", in[0], dimsString(dims), axis, err)
	}
	return shpSplitTypes(in[0].DType, dims, axis, sizes), nil
}

// shpSplitTypes is the types of the pieces of a dt tensor of dims cut
// along axis into the given sizes.
func shpSplitTypes(dt ir.DType, dims []int, axis int, sizes []int) []ir.Type {
	out := make([]ir.Type, len(sizes))
	for i, s := range sizes {
		t := ir.TensorOf(dt, dims...)
		t.Dims[axis] = s
		out[i] = t
	}
	return out
}

// shpComputeSplit cuts operand 0 along the axis attribute into the
// results: split's and split_like's kernel.
func shpComputeSplit(op *ir.Op) (Compute, error) {
	_, axis, err := shpSplitAttrs(op.Attrs, op.Operand(0).Type().Dims)
	if err != nil {
		return Compute{}, err
	}
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		shpSplitInto(c, out, in[0], axis)
		return nil
	}}, nil
}

// shpSplitInto cuts x along axis into outs, whose sizes along axis add up
// to x's.
func shpSplitInto(c *Ctx, outs []*tensor.Tensor, x *tensor.Tensor, axis int) {
	dims := x.Shape()
	outer := shpSize(dims[:axis])
	inner := shpSize(dims[axis+1:])
	var wbuf [shpParts]int
	widths := wbuf[:0]
	for _, y := range outs {
		widths = append(widths, y.Shape()[axis]*inner)
	}
	switch x.DType().Size() {
	case 1:
		shpSplitWords[uint8](outs, x, outer, widths, c.Threads)
	case 4:
		shpSplitWords[uint32](outs, x, outer, widths, c.Threads)
	case 8:
		shpSplitWords[uint64](outs, x, outer, widths, c.Threads)
	}
}

func shpSplitWords[W shpWord](outs []*tensor.Tensor, x *tensor.Tensor, outer int, widths []int, threads int) {
	var buf [shpParts][]W
	kernels.SplitRows(shpWordsOf(buf[:0], outs), shpWords[W](x), outer, widths, threads)
}

// Split cuts x along axis into len(sections) copies of the given sizes;
// one size may be -1 for the rest.
func Split(b *ir.Builder, x *ir.Value, axis int, sections ...int) []*ir.Value {
	return b.Op("split", ir.A("sections", sections, "axis", axis), x).Results()
}

// shpGradSplit concatenates the result gradients along the axis, with
// zeros for the results that got none.
func shpGradSplit(g *GradContext) ([]*ir.Value, error) {
	axis, err := shpAxis(g.Op.Attrs, "axis", 0, g.Op.Operand(0).Type().Dims)
	if err != nil {
		return nil, err
	}
	return []*ir.Value{shpConcatDYs(g, axis)}, nil
}

// shpConcatDYs concatenates the gradients of all of g's results along
// axis: zeros stand for a missing one, from its static type when it has
// one, else shaped like the result at run time.
func shpConcatDYs(g *GradContext, axis int) *ir.Value {
	parts := make([]*ir.Value, g.Op.NumResults())
	for j := range parts {
		switch t := g.Op.Result(j).Type(); {
		case g.DY[j] != nil:
			parts[j] = g.DY[j]
		case t.IsStatic():
			parts[j] = Full(g.B, t.DType, 0, t.Dims...)
		default:
			parts[j] = g.DYOrZero(j)
		}
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return Concat(g.B, axis, parts...)
}
