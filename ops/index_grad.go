package ops

import (
	"fmt"
	"slices"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Helper ops of the indexing gradients.
//
//	gather_grad {axis, size} (dy, index)          -> zeros of gather's operand shape with
//	gather_grad {axis} (dy, index, like)             dy's rows added at the indexed positions
//	take_along_axis {axis} (x, index)             -> x[..., index[..., k, ...], ...] elementwise
//	scatter_add_along_axis {axis, size} (src, index)
//	scatter_add_along_axis {axis} (src, index, like)
//	                                              -> zeros with src[..., k, ...] added at
//	                                                 [..., index[..., k, ...], ...]
//
// gather_grad is the adjoint of gather {axis}: dy has gather's result
// shape, the result has the operand's shape, whose size along axis is the
// size attribute or like's run-time size (like's elements are not read);
// axis counts in the result. take_along_axis (numpy's, without
// broadcasting) takes an index of x's rank whose dims equal x's except
// along axis, and has the index's shape; scatter_add_along_axis is its
// adjoint: src and index have the same shape, and the result is src's
// shape with size (or like's size) along axis.
//
// Indices are i32 or i64, negative ones count from the end, and repeated
// ones accumulate, in a fixed order whatever the thread count. The
// scatter-adds take f32 or f64; take_along_axis any dtype. All three write
// into results the executor allocates (Compute).

func init() {
	register(&Def{Name: "gather_grad", Infer: shpInferGatherGrad, Compute: shpComputeGatherGrad, Grad: shpGradGatherGrad})
	register(&Def{Name: "take_along_axis", Infer: shpInferTakeAlong, Compute: shpComputeTakeAlong, Grad: shpGradTakeAlong})
	register(&Def{Name: "scatter_add_along_axis", Infer: shpInferScatterAdd, Compute: shpComputeScatterAdd, Grad: shpGradScatterAdd})
}

// shpAxisOfRank normalizes the axis attribute (default 0) against rank.
func shpAxisOfRank(attrs ir.Attrs, rank int) (int, error) {
	axis, err := shpOptInt(attrs, "axis", 0)
	if err != nil {
		return 0, err
	}
	if axis < -rank || axis >= rank {
		return 0, fmt.Errorf("axis %d is out of range for a result of rank %d", axis, rank)
	}
	if axis < 0 {
		axis += rank
	}
	return axis, nil
}

// shpLikeSize returns the size along axis of the scatter ops' result: the
// size attribute with two operands, like's dim with three.
func shpLikeSize(in []ir.Type, attrs ir.Attrs, axis, rank int) (int, error) {
	switch len(in) {
	case 2:
		size, err := attrs.Int("size")
		if err != nil {
			return 0, err
		}
		if size < 0 {
			return 0, fmt.Errorf("size %d must be >= 0", size)
		}
		return int(size), nil
	case 3:
		if attrs.Has("size") {
			return 0, fmt.Errorf("takes a size attribute or a like operand, not both")
		}
		if in[2].Rank() != rank {
			return 0, fmt.Errorf("like operand %s is not of the result's rank %d", in[2], rank)
		}
		return in[2].Dims[axis], nil
	}
	return 0, fmt.Errorf("takes 2 or 3 operands, got %d", len(in))
}

// shpCheckIndex fails when an element of idx is outside [-d, d).
func shpCheckIndex(idx *tensor.Tensor, axis, d int) error {
	if p := shpOutOfRange(idx, -int64(d), int64(d)); p >= 0 {
		return fmt.Errorf("%v is out of range for axis %d of size %d", shpIndexError(idx, p), axis, d)
	}
	return nil
}

// ---- gather_grad ----

func shpInferGatherGrad(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if len(in) != 2 && len(in) != 3 {
		return nil, fmt.Errorf("takes 2 or 3 operands, got %d", len(in))
	}
	dy, idx := in[0], in[1]
	if !dy.DType.IsFloat() {
		return nil, fmt.Errorf("dy %s must be f32 or f64", dy)
	}
	if err := shpWantIndex("index", idx); err != nil {
		return nil, err
	}
	r := dy.Rank() - idx.Rank() + 1
	if r < 1 {
		return nil, fmt.Errorf("dy %s has fewer dims than index %s", dy, idx)
	}
	axis, err := shpAxisOfRank(attrs, r)
	if err != nil {
		return nil, err
	}
	for i, d := range idx.Dims {
		if !nnDimEq(d, dy.Dims[axis+i]) {
			return nil, fmt.Errorf("dy %s does not hold index %s at axis %d", dy, idx, axis)
		}
	}
	size, err := shpLikeSize(in, attrs, axis, r)
	if err != nil {
		return nil, err
	}
	out := slices.Concat(dy.Dims[:axis], []int{size}, dy.Dims[axis+idx.Rank():])
	return []ir.Type{ir.TensorOf(dy.DType, out...)}, nil
}

func shpComputeGatherGrad(op *ir.Op) (Compute, error) {
	axis, err := shpAxisOfRank(op.Attrs, op.Result(0).Type().Rank())
	if err != nil {
		return Compute{}, err
	}
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		dy, idx, y := in[0], in[1], out[0]
		dims, nr, d := dy.Shape(), idx.Rank(), y.Shape()[axis]
		if err := shpCheckIndex(idx, axis, d); err != nil {
			return err
		}
		clear(y.Raw())
		outer, inner := shpSize(dims[:axis]), shpSize(dims[axis+nr:])
		switch y.DType() {
		case tensor.F32:
			shpGatherAdd(y.F32(), dy.F32(), idx, outer, d, inner, c.Threads)
		case tensor.F64:
			shpGatherAdd(y.F64(), dy.F64(), idx, outer, d, inner, c.Threads)
		}
		return nil
	}}, nil
}

func shpGatherAdd[T float32 | float64](dst, src []T, idx *tensor.Tensor, outer, d, inner, threads int) {
	if idx.DType() == tensor.I32 {
		kernels.GatherAdd(dst, src, idx.I32(), outer, d, inner, threads)
	} else {
		kernels.GatherAdd(dst, src, idx.I64(), outer, d, inner, threads)
	}
}

// shpGradGatherGrad: gather_grad is linear in dy, with gather as adjoint.
func shpGradGatherGrad(g *GradContext) ([]*ir.Value, error) {
	dx := make([]*ir.Value, g.Op.NumOperands())
	if !g.Need(0) {
		return dx, nil
	}
	axis, err := shpAxisOfRank(g.Op.Attrs, g.Op.Result(0).Type().Rank())
	if err != nil {
		return nil, err
	}
	dx[0] = Gather(g.B, g.DY[0], g.X(1), axis)
	return dx, nil
}

// GatherGrad returns the adjoint of Gather(x, index, axis) applied to dy:
// zeros of x's shape with dy's rows added at the indexed positions. x's
// size along axis is the run-time size of like when like is not nil (its
// elements are not read), else size.
func GatherGrad(b *ir.Builder, dy, index, like *ir.Value, axis, size int) *ir.Value {
	if like != nil {
		return b.Op1("gather_grad", ir.A("axis", axis), dy, index, like)
	}
	return b.Op1("gather_grad", ir.A("axis", axis, "size", size), dy, index)
}

// ---- take_along_axis ----

func shpInferTakeAlong(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 2); err != nil {
		return nil, err
	}
	x, idx := in[0], in[1]
	if err := shpWantIndex("index", idx); err != nil {
		return nil, err
	}
	if x.Rank() != idx.Rank() {
		return nil, fmt.Errorf("index %s differs in rank from %s", idx, x)
	}
	axis, err := shpAxis(attrs, "axis", 0, x.Dims)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(idx.Dims)
	for i, d := range x.Dims {
		if i == axis {
			continue
		}
		if !nnDimEq(d, out[i]) {
			return nil, fmt.Errorf("index %s differs from %s outside axis %d", idx, x, axis)
		}
		if out[i] == ir.Dynamic {
			out[i] = d
		}
	}
	return []ir.Type{ir.TensorOf(x.DType, out...)}, nil
}

func shpComputeTakeAlong(op *ir.Op) (Compute, error) {
	axis, err := shpAxis(op.Attrs, "axis", 0, op.Operand(0).Type().Dims)
	if err != nil {
		return Compute{}, err
	}
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		x, idx, y := in[0], in[1], out[0]
		dims := x.Shape()
		d := dims[axis]
		if err := shpCheckIndex(idx, axis, d); err != nil {
			return err
		}
		outer, inner, k := shpSize(dims[:axis]), shpSize(dims[axis+1:]), idx.Shape()[axis]
		switch y.DType().Size() {
		case 1:
			shpTakeAlong(shpWords[uint8](y), shpWords[uint8](x), idx, outer, d, k, inner, c.Threads)
		case 4:
			shpTakeAlong(shpWords[uint32](y), shpWords[uint32](x), idx, outer, d, k, inner, c.Threads)
		case 8:
			shpTakeAlong(shpWords[uint64](y), shpWords[uint64](x), idx, outer, d, k, inner, c.Threads)
		}
		return nil
	}}, nil
}

func shpTakeAlong[W shpWord](dst, src []W, idx *tensor.Tensor, outer, d, k, inner, threads int) {
	if idx.DType() == tensor.I32 {
		kernels.TakeAlongAxis(dst, src, idx.I32(), outer, d, k, inner, threads)
	} else {
		kernels.TakeAlongAxis(dst, src, idx.I64(), outer, d, k, inner, threads)
	}
}

// shpGradTakeAlong scatter-adds dy back along the axis; it keeps the index,
// and x only when its size along the axis is dynamic.
func shpGradTakeAlong(g *GradContext) ([]*ir.Value, error) {
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
	return []*ir.Value{ScatterAddAlongAxis(g.B, g.DY[0], g.X(1), like, axis, x.Dims[axis]), nil}, nil
}

// TakeAlongAxis returns x's elements at index along axis, elementwise:
// index has x's rank and dims except along axis, and the result has
// index's shape.
func TakeAlongAxis(b *ir.Builder, x, index *ir.Value, axis int) *ir.Value {
	return b.Op1("take_along_axis", ir.A("axis", axis), x, index)
}

// ---- scatter_add_along_axis ----

func shpInferScatterAdd(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if len(in) != 2 && len(in) != 3 {
		return nil, fmt.Errorf("takes 2 or 3 operands, got %d", len(in))
	}
	src, idx := in[0], in[1]
	if !src.DType.IsFloat() {
		return nil, fmt.Errorf("operand %s must be f32 or f64", src)
	}
	if err := shpWantIndex("index", idx); err != nil {
		return nil, err
	}
	if src.Rank() != idx.Rank() {
		return nil, fmt.Errorf("index %s differs in rank from %s", idx, src)
	}
	axis, err := shpAxis(attrs, "axis", 0, src.Dims)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(src.Dims)
	for i, d := range idx.Dims {
		if !nnDimEq(d, out[i]) {
			return nil, fmt.Errorf("index %s differs in shape from %s", idx, src)
		}
		if out[i] == ir.Dynamic {
			out[i] = d
		}
	}
	if out[axis], err = shpLikeSize(in, attrs, axis, src.Rank()); err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(src.DType, out...)}, nil
}

func shpComputeScatterAdd(op *ir.Op) (Compute, error) {
	axis, err := shpAxis(op.Attrs, "axis", 0, op.Operand(0).Type().Dims)
	if err != nil {
		return Compute{}, err
	}
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		src, idx, y := in[0], in[1], out[0]
		dims, d := src.Shape(), y.Shape()[axis]
		if err := shpCheckIndex(idx, axis, d); err != nil {
			return err
		}
		clear(y.Raw())
		outer, inner, k := shpSize(dims[:axis]), shpSize(dims[axis+1:]), dims[axis]
		switch y.DType() {
		case tensor.F32:
			shpScatterAdd(y.F32(), src.F32(), idx, outer, d, k, inner, c.Threads)
		case tensor.F64:
			shpScatterAdd(y.F64(), src.F64(), idx, outer, d, k, inner, c.Threads)
		}
		return nil
	}}, nil
}

func shpScatterAdd[T float32 | float64](dst, src []T, idx *tensor.Tensor, outer, d, k, inner, threads int) {
	if idx.DType() == tensor.I32 {
		kernels.ScatterAddAlongAxis(dst, src, idx.I32(), outer, d, k, inner, threads)
	} else {
		kernels.ScatterAddAlongAxis(dst, src, idx.I64(), outer, d, k, inner, threads)
	}
}

// shpGradScatterAdd: the adjoint of the scatter-add is take_along_axis.
func shpGradScatterAdd(g *GradContext) ([]*ir.Value, error) {
	dx := make([]*ir.Value, g.Op.NumOperands())
	if !g.Need(0) {
		return dx, nil
	}
	axis, err := shpAxis(g.Op.Attrs, "axis", 0, g.Op.Operand(0).Type().Dims)
	if err != nil {
		return nil, err
	}
	dx[0] = TakeAlongAxis(g.B, g.DY[0], g.X(1), axis)
	return dx, nil
}

// ScatterAddAlongAxis returns zeros with src[..., k, ...] added at
// [..., index[..., k, ...], ...] along axis (the adjoint of TakeAlongAxis):
// src's shape with size along axis, or like's run-time size when like is
// not nil (its elements are not read).
func ScatterAddAlongAxis(b *ir.Builder, src, index, like *ir.Value, axis, size int) *ir.Value {
	if like != nil {
		return b.Op1("scatter_add_along_axis", ir.A("axis", axis), src, index, like)
	}
	return b.Op1("scatter_add_along_axis", ir.A("axis", axis, "size", size), src, index)
}
