package ops

import (
	"fmt"
	"math"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Distinct elements or slices.
//
//	unique {axis?, sorted = true} (x) -> (y, indices, inverse, counts)
//
// Without axis, x is read flattened and y lists its distinct elements
// (1-D); with axis (negative counts from the end), y lists the distinct
// slices of x along axis: y has x's dims but along axis, where it has one
// entry per distinct slice. Slices compare element by element in
// row-major order, so that with sorted they are in ascending
// lexicographic order (numpy's unique), else in the order they first
// occur. indices (i64, one per distinct one) is the position of its first
// occurrence in x, inverse (i64, one per element or slice of x) the
// position in y of each, counts (i64) how often each occurs. A distinct
// one is represented by its first occurrence (−0 or +0, whichever comes
// first). x is f32, f64, i32, i64 or i1; floats must not hold NaN, on
// which readings of unique differ (each NaN apart, or all as one): the
// run is refused (*RefusedError). The number of distinct ones is known only at run time.
//
// No gradient rule: differentiating unique is refused with an error.

func init() {
	register(&Def{Name: "unique", Infer: uniqueInfer, Bind: uniqueBind, Grad: uniqueGrad})
}

// uniqueAxis decodes the axis attribute for an operand of dims: ok is
// false without one.
func uniqueAxis(attrs ir.Attrs, dims []int) (axis int, ok bool, err error) {
	if !attrs.Has("axis") {
		return 0, false, nil
	}
	axis, err = shpAxis(attrs, "axis", 0, dims)
	return axis, true, err
}

// uniqueLayout views dims as [outer, n, inner] around axis (all of x as n
// without one).
func uniqueLayout(dims []int, axis int, hasAxis bool) (outer, n, inner int) {
	if !hasAxis {
		return 1, shpSize(dims), 1
	}
	return shpSize(dims[:axis]), dims[axis], shpSize(dims[axis+1:])
}

func uniqueInfer(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	x := in[0]
	switch x.DType {
	case ir.F32, ir.F64, ir.I32, ir.I64, ir.I1:
	default:
		return nil, fmt.Errorf("operand %s is not f32, f64, i32, i64 or i1", x)
	}
	if _, err := nnBool(attrs, "sorted", true); err != nil {
		return nil, err
	}
	axis, hasAxis, err := uniqueAxis(attrs, x.Dims)
	if err != nil {
		return nil, err
	}
	y := ir.TensorOf(x.DType, ir.Dynamic)
	n := x.NumElements()
	if !x.IsStatic() {
		n = ir.Dynamic
	}
	if hasAxis {
		dims := append([]int(nil), x.Dims...)
		dims[axis] = ir.Dynamic
		y, n = ir.TensorOf(x.DType, dims...), x.Dims[axis]
	}
	idx := ir.TensorOf(ir.I64, ir.Dynamic)
	return []ir.Type{y, idx, ir.TensorOf(ir.I64, n), idx}, nil
}

func uniqueBind(op *ir.Op) (Kernel, error) {
	sorted, err := nnBool(op.Attrs, "sorted", true)
	if err != nil {
		return nil, err
	}
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		axis, hasAxis, err := uniqueAxis(op.Attrs, x.Shape())
		if err != nil {
			return nil, err
		}
		outer, n, inner := uniqueLayout(x.Shape(), axis, hasAxis)
		var first, counts, inverse []int64
		switch x.DType() {
		case tensor.F32:
			for _, v := range x.F32() {
				if v != v {
					return nil, uniqueNaN(x)
				}
			}
			first, counts, inverse = kernels.Unique(x.F32(), outer, n, inner, sorted)
		case tensor.F64:
			for _, v := range x.F64() {
				if math.IsNaN(v) {
					return nil, uniqueNaN(x)
				}
			}
			first, counts, inverse = kernels.Unique(x.F64(), outer, n, inner, sorted)
		case tensor.I32:
			first, counts, inverse = kernels.Unique(x.I32(), outer, n, inner, sorted)
		case tensor.I64:
			first, counts, inverse = kernels.Unique(x.I64(), outer, n, inner, sorted)
		case tensor.Bool:
			first, counts, inverse = kernels.Unique(x.Bool(), outer, n, inner, sorted)
		}
		dims := []int{len(first)}
		if hasAxis {
			dims = append([]int(nil), x.Shape()...)
			dims[axis] = len(first)
		}
		outs := make([]*tensor.Tensor, 4)
		shapes := [][]int{dims, {len(first)}, {n}, {len(first)}}
		for i, s := range shapes {
			dt := ir.I64
			if i == 0 {
				dt = ir.DType(x.DType())
			}
			if outs[i], err = c.New(dt, s); err != nil {
				for _, o := range outs[:i] {
					o.Release()
				}
				return nil, err
			}
		}
		y := outs[0]
		switch x.DType() {
		case tensor.F32:
			kernels.UniqueGather(y.F32(), x.F32(), first, outer, n, inner)
		case tensor.F64:
			kernels.UniqueGather(y.F64(), x.F64(), first, outer, n, inner)
		case tensor.I32:
			kernels.UniqueGather(y.I32(), x.I32(), first, outer, n, inner)
		case tensor.I64:
			kernels.UniqueGather(y.I64(), x.I64(), first, outer, n, inner)
		case tensor.Bool:
			kernels.UniqueGather(y.Bool(), x.Bool(), first, outer, n, inner)
		}
		copy(outs[1].I64(), first)
		copy(outs[2].I64(), inverse)
		copy(outs[3].I64(), counts)
		return outs, nil
	}, nil
}

func uniqueNaN(x *tensor.Tensor) error {
	return refused("unique of %s holding NaN: readings differ (each NaN apart, or all as one)", x.Type())
}

// Unique appends the distinct elements of x (flattened), or with hasAxis
// its distinct slices along axis, and returns y, indices, inverse and
// counts.
func Unique(b *ir.Builder, x *ir.Value, axis int, hasAxis, sorted bool) (y, indices, inverse, counts *ir.Value) {
	attrs := ir.A("sorted", sorted)
	if hasAxis {
		attrs = attrs.With("axis", ir.Int(axis))
	}
	r := b.Op("unique", attrs, x).Results()
	return r[0], r[1], r[2], r[3]
}

func uniqueGrad(*GradContext) ([]*ir.Value, error) {
	return nil, fmt.Errorf("gradients of unique are not implemented")
}
