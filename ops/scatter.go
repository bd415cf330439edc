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
// i64. updates have data's dtype. The executor allocates the results
// (Compute); a scatter's result may take over data's buffer when data dies
// at the op (Compute.InPlace), and the scatter then updates it in place
// instead of copying it first.
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
	register(&Def{Name: "scatter_elements", Infer: sctInferElements, Compute: sctComputeElements, Grad: sctGradElements})
	register(&Def{Name: "gather_nd", Infer: sctInferGatherND, Compute: sctComputeGatherND, Grad: sctGradGatherND})
	register(&Def{Name: "scatter_nd", Infer: sctInferScatterND, Compute: sctComputeScatterND, Grad: sctGradScatterND})
	register(&Def{Name: "scatter_elements_grad", Infer: sctInferElementsGrad, Compute: sctComputeElementsGrad, Grad: noSecondOrder})
	register(&Def{Name: "scatter_nd_grad", Infer: sctInferNDGrad, Compute: sctComputeNDGrad, Grad: noSecondOrder})
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

// sctWantUpdates checks that updates has data's dtype and the shape want,
// that of the operand like when like is not empty.
func sctWantUpdates(data, updates ir.Type, want []int, like string) error {
	if updates.DType != data.DType {
		return fmt.Errorf("updates %s must have data's dtype %s", updates, data.DType)
	}
	if len(updates.Dims) != len(want) || !slices.EqualFunc(updates.Dims, want, nnDimEq) {
		if like != "" {
			return fmt.Errorf("updates %s differ in shape from %s: they must have the shape %s", updates, like, dimsString(want))
		}
		return fmt.Errorf("updates %s must have the shape %s", updates, dimsString(want))
	}
	return nil
}

// sctInit readies y, a scatter's result, to be scattered into: y holds
// data's elements already when it took over data's buffer, else they are
// copied in.
func sctInit(y, data *tensor.Tensor) {
	if y != data {
		copy(y.Raw(), data.Raw())
	}
}

// sctInPlace lets a scatter's result take over data's buffer.
func sctInPlace() [][]int { return [][]int{{0}} }

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
	if err := sctWantUpdates(data, upd, idx.Dims, "indices "+idx.String()); err != nil {
		return nil, err
	}
	return []ir.Type{data}, nil
}

func sctComputeElements(op *ir.Op) (Compute, error) {
	axis, err := sctElementsAxis(op.Attrs, op.Operand(0).Type().Dims)
	if err != nil {
		return Compute{}, err
	}
	_, red, err := sctReduction(op.Attrs, op.Operand(0).Type().DType)
	if err != nil {
		return Compute{}, err
	}
	return Compute{InPlace: sctInPlace(), Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		data, idx, upd, y := in[0], in[1], in[2], out[0]
		dims := data.Shape()
		d := dims[axis]
		if err := shpCheckIndex(idx, axis, d); err != nil {
			return err
		}
		sctInit(y, data)
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
			return nil
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
		return nil
	}}, nil
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
	if !g.Need(0) && !g.Need(2) {
		return make([]*ir.Value, 3), nil
	}
	axis, err := sctElementsAxis(g.Op.Attrs, g.Op.Operand(0).Type().Dims)
	if err != nil {
		return nil, err
	}
	return sctGrad(g, sctGradForms{
		gather: func(dy, idx *ir.Value) *ir.Value { return TakeAlongAxis(g.B, dy, idx, axis) },
		picked: func(dy, idx *ir.Value) *ir.Value {
			return g.B.Op1("scatter_elements_grad", ir.A("axis", axis), dy, idx)
		},
		scatter: func(data, idx, updates *ir.Value) *ir.Value {
			return ScatterElements(g.B, data, idx, updates, axis, "none")
		},
	})
}

// sctGradForms are the ops one scatter's gradient is built from, with the
// scatter's own attributes bound: gather reads dy where the indices point
// (the updates' gradient with reduction "add"), picked is the same for the
// updates that survive with reduction "none" (zero where a later update
// overwrote), and scatter writes updates into data with "none".
type sctGradForms struct {
	gather, picked func(dy, idx *ir.Value) *ir.Value
	scatter        func(data, idx, updates *ir.Value) *ir.Value
}

// sctGrad is the gradient of a scatter (scatter_elements, scatter_nd) with
// respect to data (operand 0) and updates (operand 2): with "add", dy
// passes to data and is gathered for updates; with "none", data's
// gradient is dy with the written places zeroed, and updates get what
// picked selects.
func sctGrad(g *GradContext, f sctGradForms) ([]*ir.Value, error) {
	dx := make([]*ir.Value, 3)
	name, red, err := sctReduction(g.Op.Attrs, g.Op.Operand(0).Type().DType)
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
			dx[2] = f.gather(dy, idx)
		}
	case kernels.ScatterNone:
		var zeros *ir.Value
		if g.Need(2) {
			dx[2] = f.picked(dy, idx)
			zeros = FullLike(g.B, dx[2], 0, ir.InvalidDType)
		} else {
			zeros = FullLike(g.B, g.X(2), 0, ir.InvalidDType)
		}
		if g.Need(0) {
			dx[0] = f.scatter(dy, idx, zeros)
		}
	default:
		return nil, fmt.Errorf("gradients of %s with reduction %q are not implemented", g.Op.Name(), name)
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

func sctComputeElementsGrad(op *ir.Op) (Compute, error) {
	axis, err := sctElementsAxis(op.Attrs, op.Operand(0).Type().Dims)
	if err != nil {
		return Compute{}, err
	}
	dt := op.Result(0).Type().DType
	return Compute{
		// The owner of each element of dy: an i64 per element.
		Work: func(shapes [][]int, _ int) int64 { return WorkBytes(shpSize(shapes[0]), 8) },
		Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
			dy, idx, y := in[0], in[1], out[0]
			dims := dy.Shape()
			d := dims[axis]
			if err := shpCheckIndex(idx, axis, d); err != nil {
				return err
			}
			owner := Scratch[int64](c, shpSize(dims))
			outer, inner, k := shpSize(dims[:axis]), shpSize(dims[axis+1:]), idx.Shape()[axis]
			th := nnThreads(c)
			switch dt {
			case ir.F32:
				sctLastAlong(y.F32(), dy.F32(), idx, owner, outer, d, k, inner, th)
			case ir.F64:
				sctLastAlong(y.F64(), dy.F64(), idx, owner, outer, d, k, inner, th)
			}
			return nil
		},
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
			return 0, nil, fmt.Errorf("data %s and indices %s differ in batch dim %d of their %d batch dims", data, idx, i, b)
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

func sctComputeGatherND(op *ir.Op) (Compute, error) {
	b, _, err := sctNDShape(op.Operand(0).Type(), op.Operand(1).Type(), op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		data, idx, y := in[0], in[1], out[0]
		l, err := sctNDLayout(data, idx, b)
		if err != nil {
			return err
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
		return nil
	}}, nil
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
	if err := sctWantUpdates(data, in[2], want, ""); err != nil {
		return nil, err
	}
	return []ir.Type{data}, nil
}

func sctComputeScatterND(op *ir.Op) (Compute, error) {
	data := op.Operand(0).Type()
	b, _, err := sctNDShape(data, op.Operand(1).Type(), op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	_, red, err := sctReduction(op.Attrs, data.DType)
	if err != nil {
		return Compute{}, err
	}
	return Compute{InPlace: sctInPlace(), Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		data, idx, upd, y := in[0], in[1], in[2], out[0]
		l, err := sctNDLayout(data, idx, b)
		if err != nil {
			return err
		}
		sctInit(y, data)
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
			return nil
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
		return nil
	}}, nil
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
	if !g.Need(0) && !g.Need(2) {
		return make([]*ir.Value, 3), nil
	}
	b, _, err := sctNDShape(g.Op.Operand(0).Type(), g.Op.Operand(1).Type(), g.Op.Attrs)
	if err != nil {
		return nil, err
	}
	return sctGrad(g, sctGradForms{
		gather: func(dy, idx *ir.Value) *ir.Value { return GatherND(g.B, dy, idx, b) },
		picked: func(dy, idx *ir.Value) *ir.Value {
			return g.B.Op1("scatter_nd_grad", ir.A("batch_dims", b), dy, idx)
		},
		scatter: func(data, idx, updates *ir.Value) *ir.Value {
			return ScatterND(g.B, data, idx, updates, b, "none")
		},
	})
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

func sctComputeNDGrad(op *ir.Op) (Compute, error) {
	b, _, err := sctNDShape(op.Operand(0).Type(), op.Operand(1).Type(), op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	dt := op.Result(0).Type().DType
	return Compute{
		// The owner of each indexed cell: an i64 per cell of dy's first
		// b+m dims, m the length of an index row.
		Work: func(shapes [][]int, _ int) int64 {
			ds, is := shapes[0], shapes[1]
			return WorkBytes(shpSize(ds[:b+is[len(is)-1]]), 8)
		},
		Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
			dy, idx, y := in[0], in[1], out[0]
			l, err := sctNDLayout(dy, idx, b)
			if err != nil {
				return err
			}
			owner := Scratch[int64](c, l.batch*shpSize(l.dims))
			th := nnThreads(c)
			switch dt {
			case ir.F32:
				sctLastND(y.F32(), dy.F32(), idx, owner, l, th)
			case ir.F64:
				sctLastND(y.F64(), dy.F64(), idx, owner, l, th)
			}
			return nil
		},
	}, nil
}

func sctLastND[T float32 | float64](dst, dy []T, idx *tensor.Tensor, owner []int64, l *sctND, threads int) {
	if idx.DType() == tensor.I32 {
		kernels.LastND(dst, dy, idx.I32(), owner, l.batch, l.rows, l.dims, l.slice, threads)
	} else {
		kernels.LastND(dst, dy, idx.I64(), owner, l.batch, l.rows, l.dims, l.slice, threads)
	}
}
