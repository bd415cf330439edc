package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Running sums.
//
//	cumsum {axis, exclusive = false, reverse = false} (x)
//	cumsum {exclusive = false, reverse = false} (x, axis)
//
// x is f32, f64, i32 or i64 of rank >= 1, and the result has its type:
// y[..., k, ...] is the sum of x[..., i, ...] over i <= k along the axis,
// or i < k when exclusive (the first element is then 0); reverse sums from
// the other end (i >= k, or i > k). The axis is an attribute, or a scalar
// (or one-element) i32/i64 operand read at run time; negative axes count
// from the end. f32 sums accumulate in f64; integer sums wrap. The result
// has x's shape whatever the axis, so the executor allocates it (Compute).
//
// Gradient: dx is the cumsum of dy along the same axis with the same
// exclusive and the opposite direction; the axis operand gets none.

func init() {
	register(&Def{Name: "cumsum", Infer: cumInfer, Compute: cumCompute, Grad: cumGrad})
}

// cumAttrs decodes exclusive and reverse, and the axis attribute when the
// op has no axis operand (ops is its operand count).
func cumAttrs(attrs ir.Attrs, ops int) (axis int, exclusive, reverse bool, err error) {
	if exclusive, err = nnBool(attrs, "exclusive", false); err != nil {
		return
	}
	if reverse, err = nnBool(attrs, "reverse", false); err != nil {
		return
	}
	switch {
	case ops == 2 && attrs.Has("axis"):
		err = fmt.Errorf("takes an axis attribute or an axis operand, not both")
	case ops == 1:
		var a int64
		a, err = attrs.Int("axis")
		axis = int(a)
	}
	return
}

func cumInfer(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if len(in) != 1 && len(in) != 2 {
		return nil, fmt.Errorf("takes 1 or 2 operands, got %d", len(in))
	}
	x := in[0]
	if err := ewNumbers.check(x); err != nil {
		return nil, err
	}
	if x.Rank() == 0 {
		return nil, fmt.Errorf("operand %s is a scalar; cumsum needs an axis", x)
	}
	axis, _, _, err := cumAttrs(attrs, len(in))
	if err != nil {
		return nil, err
	}
	if len(in) == 2 {
		if err := wantScalarInt("axis", in[1]); err != nil {
			return nil, err
		}
	} else if _, err := normAxis(axis, x.Rank()); err != nil {
		return nil, err
	}
	return []ir.Type{x}, nil
}

// wantScalarInt checks that an operand read as one integer at run time is
// an i32 or i64 scalar or one-element vector.
func wantScalarInt(what string, t ir.Type) error {
	if !t.DType.IsInt() || t.Rank() > 1 || t.Rank() == 1 && t.Dims[0] != 1 && t.Dims[0] != ir.Dynamic {
		return fmt.Errorf("%s %s must be an i32 or i64 scalar, or a vector of one integer", what, t)
	}
	return nil
}

// scalarInt reads the one integer of an operand that wantScalarInt
// accepted.
func scalarInt(what string, t *tensor.Tensor) (int64, error) {
	if t.Len() != 1 {
		return 0, fmt.Errorf("%s %s must hold one integer", what, t.Type())
	}
	if t.DType() == tensor.I32 {
		return int64(t.I32()[0]), nil
	}
	return t.I64()[0], nil
}

func cumCompute(op *ir.Op) (Compute, error) {
	attrAxis, exclusive, reverse, err := cumAttrs(op.Attrs, op.NumOperands())
	if err != nil {
		return Compute{}, err
	}
	dt := op.Result(0).Type().DType
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		x, y := in[0], out[0]
		axis := attrAxis
		if len(in) == 2 {
			a, err := scalarInt("axis", in[1])
			if err != nil {
				return err
			}
			if a < -int64(x.Rank()) || a >= int64(x.Rank()) {
				return fmt.Errorf("axis %d is out of range for %s", a, x.Type())
			}
			axis = int(a)
		}
		if axis < 0 {
			axis += x.Rank()
		}
		dims := x.Shape()
		outer, n, inner := shpSize(dims[:axis]), dims[axis], shpSize(dims[axis+1:])
		th := nnThreads(c)
		switch dt {
		case ir.F32:
			kernels.CumSum[float32, float64](y.F32(), x.F32(), outer, n, inner, exclusive, reverse, th)
		case ir.F64:
			kernels.CumSum[float64, float64](y.F64(), x.F64(), outer, n, inner, exclusive, reverse, th)
		case ir.I32:
			kernels.CumSum[int32, int64](y.I32(), x.I32(), outer, n, inner, exclusive, reverse, th)
		case ir.I64:
			kernels.CumSum[int64, int64](y.I64(), x.I64(), outer, n, inner, exclusive, reverse, th)
		}
		return nil
	}}, nil
}

// cumGrad: the adjoint of a running sum is the running sum the other way.
func cumGrad(g *GradContext) ([]*ir.Value, error) {
	dx := make([]*ir.Value, g.Op.NumOperands())
	if !g.Need(0) {
		return dx, nil
	}
	axis, exclusive, reverse, err := cumAttrs(g.Op.Attrs, g.Op.NumOperands())
	if err != nil {
		return nil, err
	}
	if g.Op.NumOperands() == 2 {
		dx[0] = CumSumAt(g.B, g.DY[0], g.X(1), exclusive, !reverse)
	} else {
		dx[0] = CumSum(g.B, g.DY[0], axis, exclusive, !reverse)
	}
	return dx, nil
}

// CumSum appends the running sums of x along axis (see the op's doc).
func CumSum(b *ir.Builder, x *ir.Value, axis int, exclusive, reverse bool) *ir.Value {
	return b.Op1("cumsum", ir.A("axis", axis, "exclusive", exclusive, "reverse", reverse), x)
}

// CumSumAt is CumSum along the axis held by the scalar i32/i64 value axis,
// read at run time.
func CumSumAt(b *ir.Builder, x, axis *ir.Value, exclusive, reverse bool) *ir.Value {
	return b.Op1("cumsum", ir.A("exclusive", exclusive, "reverse", reverse), x, axis)
}
