package ops

import (
	"fmt"
	"slices"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Scatters and N-D gathers.
//
//	scatter_elements {axis = 0, reduction = "none"} (data, indices, updates) -> data's type
//	gather_nd {batch_dims = 0} (data, indices)  -> indices.shape[:-1] + data.shape[b+m:]
//	scatter_nd {batch_dims = 0, reduction = "none"} (data, indices, updates) -> data's type
//
// Indices are i32 or i64; negative ones count from the end of their dim,
// and one out of range fails the kernel with an error naming it.
//
// scatter_elements is the inverse of take_along_axis: indices and updates
// have data's rank and one shape, equal to data's outside axis, and the
// result is data with update p written at position p of indices with its
// axis coordinate replaced by indices[p].
//
// gather_nd: with b = batch_dims and m the last dim of indices (static,
// 1 <= m <= rank(data) − b), the first b dims of data and indices are
// batch dims and must agree; every row of m indices selects the slice
// data[batch..., i0, ..., im−1, ...] of shape data.shape[b+m:].
// scatter_nd writes updates, of gather_nd's result shape, into those
// slices of data.
//
// reduction says how an update combines with the element it lands on:
// "none" replaces it, "add", "mul", "max" and "min" combine (max and min
// propagate NaN). Updates that land on one element are applied in order
// (along the axis; by index row), so with repeated indices "none" keeps
// the last. "none" works on every dtype, the others on f32, f64, i32 and
// i64. updates have data's dtype. The scatters may update data in place
// when it dies at the op (Donate).
//
// Gradients (f32, f64): gather_nd scatter-adds dy into zeros of data's
// shape (keeping data only when its shape is dynamic). A scatter with
// reduction "add" passes dy to data and gathers dy for the updates; with
// "none" data gets dy where nothing was written, and each update the dy
// of its element if it was the last written there, else 0, through the
// helper ops
//
//	scatter_elements_grad {axis} (dy, indices)      -> take_along_axis's result shape
//	scatter_nd_grad {batch_dims} (dy, indices)      -> gather_nd's result shape
//
// "mul", "max" and "min" have no gradient rule (an error says so), nor do
// the helper ops.

func init() {
	register(&Def{Name: "scatter_elements", Infer: sctInferElements, Bind: sctBindElements, Grad: sctGradElements, Donate: []int{0}})
	register(&Def{Name: "gather_nd", Infer: sctInferGatherND, Bind: sctBindGatherND, Grad: sctGradGatherND})
	register(&Def{Name: "scatter_nd", Infer: sctInferScatterND, Bind: sctBindScatterND, Grad: sctGradScatterND, Donate: []int{0}})
	register(&Def{Name: "scatter_elements_grad", Infer: sctInferElementsGrad, Bind: sctBindElementsGrad, Grad: noSecondOrder})
	register(&Def{Name: "scatter_nd_grad", Infer: sctInferNDGrad, Bind: sctBindNDGrad, Grad: noSecondOrder})
}

var sctReductions = map[string]kernels.ScatterOp{
	"none": kernels.ScatterNone,
	"add":  kernels.ScatterAdd,
	"mul":  kernels.ScatterMul,
	"max":  kernels.ScatterMax,
	"min":  kernels.ScatterMin,
}

// sctReduction decodes the reduction attribute and checks it against the
// data's dtype.
func sctReduction(attrs ir.Attrs, dt ir.DType) (string, kernels.ScatterOp, error) {
	name := "none"
	if attrs.Has("reduction") {
		var err error
		if name, err = attrs.Str("reduction"); err != nil {
			return "", 0, err
		}
	}
	op, ok := sctReductions[name]
	if !ok {
		return "", 0, fmt.Errorf("reduction %q is not none, add, mul, max or min", name)
	}
	if op != kernels.ScatterNone && !dt.IsFloat() && !dt.IsInt() {
		return "", 0, fmt.Errorf("reduction %q needs data of f32, f64, i32 or i64, not %s", name, dt)
	}
	return name, op, nil
}

// sctWantUpdates checks that updates has data's dtype and the shape want.
func sctWantUpdates(data, updates ir.Type, want []int) error {
	if updates.DType != data.DType {
		return fmt.Errorf("updates %s must have data's dtype %s", updates, data.DType)
	}
	if len(updates.Dims) != len(want) || !slices.EqualFunc(updates.Dims, want, nnDimEq) {
		return fmt.Errorf("updates %s must have the shape %s", updates, dimsString(want))
	}
	return nil
}

// sctOutput returns the tensor a scatter writes into: data itself when
// the kernel owns it and nobody else holds it, else a copy (and an owned
// data is released).
func sctOutput(c *Ctx, data *tensor.Tensor) (*tensor.Tensor, error) {
	if c.Owns(0) && data.Refs() == 1 {
		return data, nil
	}
	y, err := c.New(ir.DType(data.DType()), data.Shape())
	if c.Owns(0) {
		defer data.Release()
	}
	if err != nil {
		return nil, err
	}
	copy(y.Raw(), data.Raw())
	return y, nil
}

// sctFail releases an owned data operand when a scatter fails before
// sctOutput.
func sctFail(c *Ctx, in []*tensor.Tensor, err error) ([]*tensor.Tensor, error) {
	if c.Owns(0) {
		in[0].Release()
	}
	return nil, err
}

// ---- scatter_elements ----

func sctElementsAxis(attrs ir.Attrs, dims []int) (int, error) {
	if len(dims) == 0 {
		return 0, fmt.Errorf("data is a scalar")
	}
	return shpAxis(attrs, "axis", 0, dims)
}

func sctInferElements(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 3); err != nil {
		return nil, err
	}
	data, idx, upd := in[0], in[1], in[2]
	if data.DType.Size() == 0 {
		return nil, fmt.Errorf("data %s is not a tensor", data)
	}
	if err := shpWantIndex("indices", idx); err != nil {
		return nil, err
	}
	axis, err := sctElementsAxis(attrs, data.Dims)
	if err != nil {
		return nil, err
	}
	if _, _, err := sctReduction(attrs, data.DType); err != nil {
		return nil, err
	}
	if idx.Rank() != data.Rank() {
		return nil, fmt.Errorf("indices %s differ in rank from data %s", idx, data)
	}
	for i, d := range data.Dims {
		if i != axis && !nnDimEq(d, idx.Dims[i]) {
			return nil, fmt.Errorf("indices %s differ from data %s outside axis %d", idx, data, axis)
		}
	}
	if err := sctWantUpdates(data, upd, idx.Dims); err != nil {
		return nil, err
	}
	return []ir.Type{data}, nil
}

func sctBindElements(op *ir.Op) (Kernel, error) {
	axis, err := sctElementsAxis(op.Attrs, op.Operand(0).Type().Dims)
	if err != nil {
		return nil, err
	}
	_, red, err := sctReduction(op.Attrs, op.Operand(0).Type().DType)
	if err != nil {
		return nil, err
	}
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		data, idx, upd := in[0], in[1], in[2]
		if err := shpSameOutside(data, idx, axis, "indices"); err != nil {
			return sctFail(c, in, err)
		}
		if !slices.Equal(idx.Shape(), upd.Shape()) {
			return sctFail(c, in, fmt.Errorf("updates %s differ in shape from indices %s", upd.Type(), idx.Type()))
		}
		dims := data.Shape()
		d := dims[axis]
		if err := shpCheckIndex(idx, axis, d); err != nil {
			return sctFail(c, in, err)
		}
		y, err := sctOutput(c, data)
		if err != nil {
			return nil, err
		}
		outer, inner, k := shpSize(dims[:axis]), shpSize(dims[axis+1:]), idx.Shape()[axis]
		th := nnThreads(c)
		if red == kernels.ScatterNone {
			switch y.DType().Size() {
			case 1:
				sctAlong(shpWords[uint8](y), shpWords[uint8](upd), idx, outer, d, k, inner, nil, th)
			case 4:
				sctAlong(shpWords[uint32](y), shpWords[uint32](upd), idx, outer, d, k, inner, nil, th)
			case 8:
				sctAlong(shpWords[uint64](y), shpWords[uint64](upd), idx, outer, d, k, inner, nil, th)
			}
			return c.Result(y), nil
		}
		switch y.DType() {
		case tensor.F32:
			sctAlong(y.F32(), upd.F32(), idx, outer, d, k, inner, kernels.Combine[float32](red), th)
		case tensor.F64:
			sctAlong(y.F64(), upd.F64(), idx, outer, d, k, inner, kernels.Combine[float64](red), th)
		case tensor.I32:
			sctAlong(y.I32(), upd.I32(), idx, outer, d, k, inner, kernels.Combine[int32](red), th)
		case tensor.I64:
			sctAlong(y.I64(), upd.I64(), idx, outer, d, k, inner, kernels.Combine[int64](red), th)
		}
		return c.Result(y), nil
	}, nil
}

func sctAlong[T any](dst, src []T, idx *tensor.Tensor, outer, d, k, inner int, f func(x, u T) T, threads int) {
	if idx.DType() == tensor.I32 {
		kernels.ScatterAlongAxis(dst, src, idx.I32(), outer, d, k, inner, f, threads)
	} else {
		kernels.ScatterAlongAxis(dst, src, idx.I64(), outer, d, k, inner, f, threads)
	}
}

// sctGradElements: see the file comment.
func sctGradElements(g *GradContext) ([]*ir.Value, error) {
	dx := make([]*ir.Value, 3)
	if !g.Need(0) && !g.Need(2) {
		return dx, nil
	}
	data := g.Op.Operand(0).Type()
	axis, err := sctElementsAxis(g.Op.Attrs, data.Dims)
	if err != nil {
		return nil, err
	}
	name, red, err := sctReduction(g.Op.Attrs, data.DType)
	if err != nil {
		return nil, err
	}
	dy, idx := g.DY[0], g.X(1)
	switch red {
	case kernels.ScatterAdd:
		if g.Need(0) {
			dx[0] = dy
		}
		if g.Need(2) {
			dx[2] = TakeAlongAxis(g.B, dy, idx, axis)
		}
	case kernels.ScatterNone:
		var zeros *ir.Value
		if g.Need(2) {
			dx[2] = g.B.Op1("scatter_elements_grad", ir.A("axis", axis), dy, idx)
			zeros = FullLike(g.B, dx[2], 0, ir.InvalidDType)
		} else {
			zeros = FullLike(g.B, g.X(2), 0, ir.InvalidDType)
		}
		if g.Need(0) {
			dx[0] = ScatterElements(g.B, dy, idx, zeros, axis, "none")
		}
	default:
		return nil, fmt.Errorf("gradients of scatter_elements with reduction %q are not implemented", name)
	}
	return dx, nil
}

// ScatterElements appends data with updates written (or combined by
// reduction: "none", "add", "mul", "max", "min") at indices along axis.
func ScatterElements(b *ir.Builder, data, indices, updates *ir.Value, axis int, reduction string) *ir.Value {
	return b.Op1("scatter_elements", ir.A("axis", axis, "reduction", reduction), data, indices, updates)
}

// ---- scatter_elements_grad ----

func sctInferElementsGrad(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 2); err != nil {
		return nil, err
	}
	dy, idx := in[0], in[1]
	if err := nnWantFloat("dy", dy); err != nil {
		return nil, err
	}
	if err := shpWantIndex("indices", idx); err != nil {
		return nil, err
	}
	axis, err := sctElementsAxis(attrs, dy.Dims)
	if err != nil {
		return nil, err
	}
	if idx.Rank() != dy.Rank() {
		return nil, fmt.Errorf("indices %s differ in rank from dy %s", idx, dy)
	}
	out := slices.Clone(idx.Dims)
	for i, d := range dy.Dims {
		if i == axis {
			continue
		}
		if !nnDimEq(d, out[i]) {
			return nil, fmt.Errorf("indices %s differ from dy %s outside axis %d", idx, dy, axis)
		}
		if out[i] == ir.Dynamic {
			out[i] = d
		}
	}
	return []ir.Type{ir.TensorOf(dy.DType, out...)}, nil
}

func sctBindElementsGrad(op *ir.Op) (Kernel, error) {
	axis, err := sctElementsAxis(op.Attrs, op.Operand(0).Type().Dims)
	if err != nil {
		return nil, err
	}
	dt := op.Result(0).Type().DType
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		dy, idx := in[0], in[1]
		if err := shpSameOutside(dy, idx, axis, "indices"); err != nil {
			return nil, err
		}
		dims := dy.Shape()
		d := dims[axis]
		if err := shpCheckIndex(idx, axis, d); err != nil {
			return nil, err
		}
		out, err := c.New(dt, idx.Shape())
		if err != nil {
			return nil, err
		}
		owner, err := c.New(ir.I64, dims)
		if err != nil {
			out.Release()
			return nil, err
		}
		defer owner.Release()
		outer, inner, k := shpSize(dims[:axis]), shpSize(dims[axis+1:]), idx.Shape()[axis]
		th := nnThreads(c)
		switch dt {
		case ir.F32:
			sctLastAlong(out.F32(), dy.F32(), idx, owner.I64(), outer, d, k, inner, th)
		case ir.F64:
			sctLastAlong(out.F64(), dy.F64(), idx, owner.I64(), outer, d, k, inner, th)
		}
		return c.Result(out), nil
	}, nil
}

func sctLastAlong[T float32 | float64](dst, dy []T, idx *tensor.Tensor, owner []int64, outer, d, k, inner, threads int) {
	if idx.DType() == tensor.I32 {
		kernels.LastAlongAxis(dst, dy, idx.I32(), owner, outer, d, k, inner, threads)
	} else {
		kernels.LastAlongAxis(dst, dy, idx.I64(), owner, outer, d, k, inner, threads)
	}
}

// ---- gather_nd and scatter_nd ----

// sctND is the layout of an N-D gather or scatter: data is [batch, cells
// of dims, slice] and indices [batch, rows, len(dims)].
type sctND struct {
	batch, rows, slice int
	dims               []int
}

// sctNDShape checks data and indices against batch_dims b and returns
// gather_nd's result dims (with batch dims refined).
func sctNDShape(data, idx ir.Type, attrs ir.Attrs) (int, []int, error) {
	if err := shpWantIndex("indices", idx); err != nil {
		return 0, nil, err
	}
	b, err := shpOptInt(attrs, "batch_dims", 0)
	if err != nil {
		return 0, nil, err
	}
	r, q := data.Rank(), idx.Rank()
	if q == 0 {
		return 0, nil, fmt.Errorf("indices %s are a scalar; want rows of indices", idx)
	}
	if b < 0 || b >= min(r, q) {
		return 0, nil, fmt.Errorf("batch_dims %d is out of range for data %s and indices %s", b, data, idx)
	}
	m := idx.Dims[q-1]
	if m == ir.Dynamic {
		return 0, nil, fmt.Errorf("the last dim of indices %s must be static", idx)
	}
	if m < 1 || m > r-b {
		return 0, nil, fmt.Errorf("indices %s have rows of %d, want 1 to %d for data %s with batch_dims %d", idx, m, r-b, data, b)
	}
	out := slices.Concat(idx.Dims[:q-1], data.Dims[b+m:])
	for i := range b {
		if !nnDimEq(data.Dims[i], idx.Dims[i]) {
			return 0, nil, fmt.Errorf("data %s and indices %s differ in batch dim %d", data, idx, i)
		}
		if out[i] == ir.Dynamic {
			out[i] = data.Dims[i]
		}
	}
	return b, out, nil
}

// sctNDLayout checks run-time operands and returns their layout.
func sctNDLayout(data, idx *tensor.Tensor, b int) (*sctND, error) {
	ds, is := data.Shape(), idx.Shape()
	q, m := len(is), is[len(is)-1]
	if !slices.Equal(ds[:b], is[:b]) {
		return nil, fmt.Errorf("data %s and indices %s differ in their %d batch dims", data.Type(), idx.Type(), b)
	}
	l := &sctND{batch: shpSize(ds[:b]), rows: shpSize(is[b : q-1]), slice: shpSize(ds[b+m:]), dims: ds[b : b+m]}
	var p int
	if idx.DType() == tensor.I32 {
		p = kernels.OutOfRangeND(idx.I32(), l.dims)
	} else {
		p = kernels.OutOfRangeND(idx.I64(), l.dims)
	}
	if p >= 0 {
		return nil, fmt.Errorf("%v is out of range for dim %d of data %s", shpIndexError(idx, p), b+p%m, data.Type())
	}
	return l, nil
}

func sctInferGatherND(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 2); err != nil {
		return nil, err
	}
	if in[0].DType.Size() == 0 {
		return nil, fmt.Errorf("data %s is not a tensor", in[0])
	}
	_, out, err := sctNDShape(in[0], in[1], attrs)
	if err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(in[0].DType, out...)}, nil
}

func sctBindGatherND(op *ir.Op) (Kernel, error) {
	b, _, err := sctNDShape(op.Operand(0).Type(), op.Operand(1).Type(), op.Attrs)
	if err != nil {
		return nil, err
	}
	dt := op.Result(0).Type().DType
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		data, idx := in[0], in[1]
		l, err := sctNDLayout(data, idx, b)
		if err != nil {
			return nil, err
		}
		is := idx.Shape()
		y, err := c.New(dt, slices.Concat(is[:len(is)-1], data.Shape()[b+len(l.dims):]))
		if err != nil {
			return nil, err
		}
		th := nnThreads(c)
		switch y.DType().Size() {
		case 1:
			sctGatherND(shpWords[uint8](y), shpWords[uint8](data), idx, l, th)
		case 4:
			sctGatherND(shpWords[uint32](y), shpWords[uint32](data), idx, l, th)
		case 8:
			sctGatherND(shpWords[uint64](y), shpWords[uint64](data), idx, l, th)
		}
		return c.Result(y), nil
	}, nil
}

func sctGatherND[W shpWord](dst, src []W, idx *tensor.Tensor, l *sctND, threads int) {
	if idx.DType() == tensor.I32 {
		kernels.GatherND(dst, src, idx.I32(), l.batch, l.rows, l.dims, l.slice, threads)
	} else {
		kernels.GatherND(dst, src, idx.I64(), l.batch, l.rows, l.dims, l.slice, threads)
	}
}

// sctGradGatherND scatter-adds dy into zeros of data's shape: static
// zeros when the shape is known, else zeros like data.
func sctGradGatherND(g *GradContext) ([]*ir.Value, error) {
	if !g.Need(0) {
		return make([]*ir.Value, 2), nil
	}
	data := g.Op.Operand(0).Type()
	b, _, err := sctNDShape(data, g.Op.Operand(1).Type(), g.Op.Attrs)
	if err != nil {
		return nil, err
	}
	var zeros *ir.Value
	if data.IsStatic() {
		zeros = Full(g.B, data.DType, 0, data.Dims...)
	} else {
		zeros = FullLike(g.B, g.X(0), 0, ir.InvalidDType)
	}
	return []*ir.Value{ScatterND(g.B, zeros, g.X(1), g.DY[0], b, "add"), nil}, nil
}

// GatherND appends the slices of data that the rows of indices (its last
// dim) select, after batchDims leading batch dims.
func GatherND(b *ir.Builder, data, indices *ir.Value, batchDims int) *ir.Value {
	return b.Op1("gather_nd", ir.A("batch_dims", batchDims), data, indices)
}

func sctInferScatterND(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 3); err != nil {
		return nil, err
	}
	data := in[0]
	if data.DType.Size() == 0 {
		return nil, fmt.Errorf("data %s is not a tensor", data)
	}
	if _, _, err := sctReduction(attrs, data.DType); err != nil {
		return nil, err
	}
	_, want, err := sctNDShape(data, in[1], attrs)
	if err != nil {
		return nil, err
	}
	if err := sctWantUpdates(data, in[2], want); err != nil {
		return nil, err
	}
	return []ir.Type{data}, nil
}

func sctBindScatterND(op *ir.Op) (Kernel, error) {
	data := op.Operand(0).Type()
	b, _, err := sctNDShape(data, op.Operand(1).Type(), op.Attrs)
	if err != nil {
		return nil, err
	}
	_, red, err := sctReduction(op.Attrs, data.DType)
	if err != nil {
		return nil, err
	}
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		data, idx, upd := in[0], in[1], in[2]
		l, err := sctNDLayout(data, idx, b)
		if err != nil {
			return sctFail(c, in, err)
		}
		is := idx.Shape()
		if want := slices.Concat(is[:len(is)-1], data.Shape()[b+len(l.dims):]); !slices.Equal(upd.Shape(), want) {
			return sctFail(c, in, fmt.Errorf("updates %s must have the shape %v", upd.Type(), want))
		}
		y, err := sctOutput(c, data)
		if err != nil {
			return nil, err
		}
		th := nnThreads(c)
		if red == kernels.ScatterNone {
			switch y.DType().Size() {
			case 1:
				sctScatterND(shpWords[uint8](y), shpWords[uint8](upd), idx, l, nil, th)
			case 4:
				sctScatterND(shpWords[uint32](y), shpWords[uint32](upd), idx, l, nil, th)
			case 8:
				sctScatterND(shpWords[uint64](y), shpWords[uint64](upd), idx, l, nil, th)
			}
			return c.Result(y), nil
		}
		switch y.DType() {
		case tensor.F32:
			sctScatterND(y.F32(), upd.F32(), idx, l, kernels.Combine[float32](red), th)
		case tensor.F64:
			sctScatterND(y.F64(), upd.F64(), idx, l, kernels.Combine[float64](red), th)
		case tensor.I32:
			sctScatterND(y.I32(), upd.I32(), idx, l, kernels.Combine[int32](red), th)
		case tensor.I64:
			sctScatterND(y.I64(), upd.I64(), idx, l, kernels.Combine[int64](red), th)
		}
		return c.Result(y), nil
	}, nil
}

func sctScatterND[T any](dst, src []T, idx *tensor.Tensor, l *sctND, f func(x, u T) T, threads int) {
	if idx.DType() == tensor.I32 {
		kernels.ScatterND(dst, src, idx.I32(), l.batch, l.rows, l.dims, l.slice, f, threads)
	} else {
		kernels.ScatterND(dst, src, idx.I64(), l.batch, l.rows, l.dims, l.slice, f, threads)
	}
}

// sctGradScatterND: see the file comment.
func sctGradScatterND(g *GradContext) ([]*ir.Value, error) {
	dx := make([]*ir.Value, 3)
	if !g.Need(0) && !g.Need(2) {
		return dx, nil
	}
	data := g.Op.Operand(0).Type()
	b, _, err := sctNDShape(data, g.Op.Operand(1).Type(), g.Op.Attrs)
	if err != nil {
		return nil, err
	}
	name, red, err := sctReduction(g.Op.Attrs, data.DType)
	if err != nil {
		return nil, err
	}
	dy, idx := g.DY[0], g.X(1)
	switch red {
	case kernels.ScatterAdd:
		if g.Need(0) {
			dx[0] = dy
		}
		if g.Need(2) {
			dx[2] = GatherND(g.B, dy, idx, b)
		}
	case kernels.ScatterNone:
		var zeros *ir.Value
		if g.Need(2) {
			dx[2] = g.B.Op1("scatter_nd_grad", ir.A("batch_dims", b), dy, idx)
			zeros = FullLike(g.B, dx[2], 0, ir.InvalidDType)
		} else {
			zeros = FullLike(g.B, g.X(2), 0, ir.InvalidDType)
		}
		if g.Need(0) {
			dx[0] = ScatterND(g.B, dy, idx, zeros, b, "none")
		}
	default:
		return nil, fmt.Errorf("gradients of scatter_nd with reduction %q are not implemented", name)
	}
	return dx, nil
}

// ScatterND appends data with updates written (or combined by reduction)
// into the slices that the rows of indices select, after batchDims
// leading batch dims.
func ScatterND(b *ir.Builder, data, indices, updates *ir.Value, batchDims int, reduction string) *ir.Value {
	return b.Op1("scatter_nd", ir.A("batch_dims", batchDims, "reduction", reduction), data, indices, updates)
}

// ---- scatter_nd_grad ----

func sctInferNDGrad(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 2); err != nil {
		return nil, err
	}
	if err := nnWantFloat("dy", in[0]); err != nil {
		return nil, err
	}
	_, out, err := sctNDShape(in[0], in[1], attrs)
	if err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(in[0].DType, out...)}, nil
}

func sctBindNDGrad(op *ir.Op) (Kernel, error) {
	b, _, err := sctNDShape(op.Operand(0).Type(), op.Operand(1).Type(), op.Attrs)
	if err != nil {
		return nil, err
	}
	dt := op.Result(0).Type().DType
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		dy, idx := in[0], in[1]
		l, err := sctNDLayout(dy, idx, b)
		if err != nil {
			return nil, err
		}
		is := idx.Shape()
		out, err := c.New(dt, slices.Concat(is[:len(is)-1], dy.Shape()[b+len(l.dims):]))
		if err != nil {
			return nil, err
		}
		owner, err := c.New(ir.I64, []int{l.batch * shpSize(l.dims)})
		if err != nil {
			out.Release()
			return nil, err
		}
		defer owner.Release()
		th := nnThreads(c)
		switch dt {
		case ir.F32:
			sctLastND(out.F32(), dy.F32(), idx, owner.I64(), l, th)
		case ir.F64:
			sctLastND(out.F64(), dy.F64(), idx, owner.I64(), l, th)
		}
		return c.Result(out), nil
	}, nil
}

func sctLastND[T float32 | float64](dst, dy []T, idx *tensor.Tensor, owner []int64, l *sctND, threads int) {
	if idx.DType() == tensor.I32 {
		kernels.LastND(dst, dy, idx.I32(), owner, l.batch, l.rows, l.dims, l.slice, threads)
	} else {
		kernels.LastND(dst, dy, idx.I64(), owner, l.batch, l.rows, l.dims, l.slice, threads)
	}
}
