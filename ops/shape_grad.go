package ops

import (
	"fmt"
	"slices"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Helper ops of the shape gradients, for shapes known only at run time.
// Each reads only the shape of its "like" operands, never their elements.
//
//	reshape_like (x, like)                           -> view of x with like's shape
//	split_like   {axis, sections} (x, like1..likeM)  -> len(sections) pieces of x along axis
//	slice_grad   {axes, starts, ends, strides?, shape} (dy)
//	slice_grad   {axes, starts, ends, strides?} (dy, like)
//	                                                 -> zeros of shape (or like's shape) with dy
//	                                                    written where slice would read
//
// split_like: a section >= 0 is a size; each -1 takes, in order, the size
// along axis of the next like operand; the sizes must add up to x's.
// slice_grad's attributes are slice's, for the shape of slice's operand;
// dy must have the shape slice gives. All three take any dtype. The
// executor allocates the results (Compute), or makes reshape_like's view.

func init() {
	register(&Def{Name: "reshape_like", Infer: shpInferReshapeLike, Compute: shpComputeReshapeLike, Grad: shpGradReshapeLike})
	register(&Def{Name: "split_like", Infer: shpInferSplitLike, Compute: shpComputeSplit, Grad: shpGradSplitLike})
	register(&Def{Name: "slice_grad", Infer: shpInferSliceGrad, Compute: shpComputeSliceGrad, Grad: shpGradSliceGrad})
}

// ---- reshape_like ----

func shpInferReshapeLike(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 2); err != nil {
		return nil, err
	}
	x, like := in[0], in[1]
	n, okx := shpProd(x.Dims)
	m, okl := shpProd(like.Dims)
	if okx && okl && n != m {
		return nil, fmt.Errorf("cannot reshape %s (%d elements) to the shape of %s (%d elements)", x, n, like, m)
	}
	return []ir.Type{ir.TensorOf(x.DType, like.Dims...)}, nil
}

func shpComputeReshapeLike(op *ir.Op) (Compute, error) { return shpViewOf(), nil }

// shpGradReshapeLike views dy back in x's shape; like gets none.
func shpGradReshapeLike(g *GradContext) ([]*ir.Value, error) {
	if !g.Need(0) {
		return make([]*ir.Value, 2), nil
	}
	return []*ir.Value{shpReshapeBack(g, g.DY[0], 0), nil}, nil
}

// ReshapeLike returns a view of x in the run-time shape of like (whose
// elements are not read); the element counts must match.
func ReshapeLike(b *ir.Builder, x, like *ir.Value) *ir.Value {
	return b.Op1("reshape_like", nil, x, like)
}

// ---- split_like ----

// shpSplitLikeSizes resolves the sections of split_like against the sizes
// along axis of the like operands.
func shpSplitLikeSizes(sections, likes []int) ([]int, error) {
	out := slices.Clone(sections)
	k := 0
	for i, s := range sections {
		switch {
		case s == -1 && k < len(likes):
			out[i] = likes[k]
			k++
		case s == -1:
			return nil, fmt.Errorf("sections %v has more -1 entries than the %d like operands", sections, len(likes))
		case s < 0:
			return nil, fmt.Errorf("sections %v: sizes must be >= 0, or -1 for a like operand's", sections)
		}
	}
	if k != len(likes) {
		return nil, fmt.Errorf("sections %v has %d -1 entries for %d like operands", sections, k, len(likes))
	}
	return out, nil
}

func shpInferSplitLike(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if len(in) == 0 {
		return nil, fmt.Errorf("takes at least 1 operand, got 0")
	}
	dims := in[0].Dims
	sections, axis, err := shpSplitAttrs(attrs, dims)
	if err != nil {
		return nil, err
	}
	likes := make([]int, len(in)-1)
	for i, t := range in[1:] {
		if t.Rank() != len(dims) {
			return nil, fmt.Errorf("like operand %s differs in rank from %s", t, in[0])
		}
		likes[i] = t.Dims[axis]
	}
	sizes, err := shpSplitLikeSizes(sections, likes)
	if err != nil {
		return nil, err
	}
	if dims[axis] != ir.Dynamic && !slices.Contains(sizes, ir.Dynamic) {
		sum := 0
		for _, s := range sizes {
			sum += s
		}
		if sum != dims[axis] {
			return nil, fmt.Errorf("sizes %v add up to %d, not the size %d of axis %d of %s", sizes, sum, dims[axis], axis, in[0])
		}
	}
	return shpSplitTypes(in[0].DType, dims, axis, sizes), nil
}

// shpGradSplitLike concatenates the result gradients, like split's rule.
func shpGradSplitLike(g *GradContext) ([]*ir.Value, error) {
	dx := make([]*ir.Value, g.Op.NumOperands())
	if !g.Need(0) {
		return dx, nil
	}
	_, axis, err := shpSplitAttrs(g.Op.Attrs, g.Op.Operand(0).Type().Dims)
	if err != nil {
		return nil, err
	}
	dx[0] = shpConcatDYs(g, axis)
	return dx, nil
}

// SplitLike cuts x along axis into len(sections) pieces: sections[i] >= 0
// is a size, and each -1 takes the run-time size along axis of the next
// of likes (whose elements are not read).
func SplitLike(b *ir.Builder, x *ir.Value, axis int, sections []int, likes ...*ir.Value) []*ir.Value {
	return b.Op("split_like", ir.A("axis", axis, "sections", sections), append([]*ir.Value{x}, likes...)...).Results()
}

// ---- slice_grad ----

// shapeOrLike returns the target shape of an op that takes it either as
// attribute shape (one operand) or as the dims of a second, like operand:
// slice_grad, tile_grad, reduce_sum_to.
func shapeOrLike(in []ir.Type, attrs ir.Attrs) ([]int, error) {
	switch len(in) {
	case 1:
		return shapeAttr(attrs, false)
	case 2:
		if attrs.Has("shape") {
			return nil, fmt.Errorf("takes a shape attribute or a like operand, not both")
		}
		return in[1].Dims, nil
	}
	return nil, fmt.Errorf("takes 1 or 2 operands, got %d", len(in))
}

func shpInferSliceGrad(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	target, err := shapeOrLike(in, attrs)
	if err != nil {
		return nil, err
	}
	s, err := shpSliceAttrs(attrs, target)
	if err != nil {
		return nil, err
	}
	dy := in[0]
	want := s.dims(target)
	if dy.Rank() != len(want) {
		return nil, fmt.Errorf("dy %s differs in rank from the target shape %s", dy, dimsString(target))
	}
	for i, d := range dy.Dims {
		if d != ir.Dynamic && want[i] != ir.Dynamic && d != want[i] {
			return nil, fmt.Errorf("dy %s is not the shape %s this slice of %s gives", dy, dimsString(want), dimsString(target))
		}
	}
	return []ir.Type{ir.TensorOf(dy.DType, target...)}, nil
}

func shpComputeSliceGrad(op *ir.Op) (Compute, error) {
	s, err := shpSliceAttrs(op.Attrs, op.Result(0).Type().Dims)
	if err != nil {
		return Compute{}, err
	}
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		shape, off, strides := s.layout(out[0].Shape())
		shpScatterInto(c, out[0], in[0], shape, off, strides)
		return nil
	}}, nil
}

// shpScatterInto fills y with zeros and copies dy, of the given shape,
// into it at offset off with the given strides (kernels.StridedScatter).
func shpScatterInto(c *Ctx, y, dy *tensor.Tensor, shape []int, off int, strides []int) {
	clear(y.Raw())
	switch y.DType().Size() {
	case 1:
		kernels.StridedScatter(shpWords[uint8](y), shpWords[uint8](dy), shape, off, strides, c.Threads)
	case 4:
		kernels.StridedScatter(shpWords[uint32](y), shpWords[uint32](dy), shape, off, strides, c.Threads)
	case 8:
		kernels.StridedScatter(shpWords[uint64](y), shpWords[uint64](dy), shape, off, strides, c.Threads)
	}
}

// shpGradSliceGrad: slice_grad is linear in dy, and its adjoint is the
// slice itself.
func shpGradSliceGrad(g *GradContext) ([]*ir.Value, error) {
	dx := make([]*ir.Value, g.Op.NumOperands())
	if !g.Need(0) {
		return dx, nil
	}
	s, err := shpSliceAttrs(g.Op.Attrs, g.Op.Result(0).Type().Dims)
	if err != nil {
		return nil, err
	}
	dx[0] = SliceStrided(g.B, g.DY[0], s.axes, s.starts, s.ends, s.strides)
	return dx, nil
}

// SliceGrad returns zeros with dy written where slice {axes, starts, ends,
// strides} reads: in the run-time shape of like when it is not nil, else
// in the static shape.
func SliceGrad(b *ir.Builder, dy, like *ir.Value, shape, axes, starts, ends, strides []int) *ir.Value {
	attrs := ir.A("axes", axes, "starts", starts, "ends", ends, "strides", strides)
	if like != nil {
		return b.Op1("slice_grad", attrs, dy, like)
	}
	return b.Op1("slice_grad", append(attrs, ir.A("shape", shape)...), dy)
}
