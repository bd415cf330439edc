package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Comparisons, logical ops and where, with numpy broadcasting.
//
//	equal, not_equal (x, y) -> i1                     f32 f64 i32 i64 i1
//	less_than, less_equal, greater_than, greater_equal (x, y) -> i1
//	                                                  f32 f64 i32 i64
//	logical_and, logical_or (x, y), logical_not (x)   i1
//	where (cond, x, y)                                cond i1; x, y any dtype
//
// Comparisons with NaN are false, except not_equal, which is true.
//
// No gradient flows through comparisons and logical ops. where sends dy
// to x where cond holds and to y elsewhere (each reduced to its shape);
// cond gets none.

var ewCompareOps = []struct {
	name  string
	op    kernels.CompareOp
	types ewDTypeSet
}{
	{"equal", kernels.CmpEQ, ewEquality},
	{"not_equal", kernels.CmpNE, ewEquality},
	{"less_than", kernels.CmpLT, ewNumbers},
	{"less_equal", kernels.CmpLE, ewNumbers},
	{"greater_than", kernels.CmpGT, ewNumbers},
	{"greater_equal", kernels.CmpGE, ewNumbers},
}

func init() {
	for _, c := range ewCompareOps {
		register(&Def{Name: c.name, Infer: ewInferBroadcast(c.types, true), Compute: ewBindCompare(c.op), NoGrad: true})
	}
	register(&Def{Name: "logical_and", Infer: ewInferBroadcast(ewBools, true), Compute: ewBindLogical(kernels.LogicalAnd), NoGrad: true})
	register(&Def{Name: "logical_or", Infer: ewInferBroadcast(ewBools, true), Compute: ewBindLogical(kernels.LogicalOr), NoGrad: true})
	register(&Def{Name: "logical_not", Infer: ewInferUnary(ewBools), Compute: ewBindNot, NoGrad: true})
	register(&Def{Name: "where", Infer: ewInferWhere, Compute: ewBindWhere, Grad: ewGradWhere})
}

func ewBindCompare(cop kernels.CompareOp) func(*ir.Op) (Compute, error) {
	return func(op *ir.Op) (Compute, error) {
		var run func(c *Ctx, out *tensor.Tensor, in []*tensor.Tensor) error
		switch dt := op.Operand(0).Type().DType; dt {
		case ir.F32:
			run = ewCompareRun[float32](cop)
		case ir.F64:
			run = ewCompareRun[float64](cop)
		case ir.I32:
			run = ewCompareRun[int32](cop)
		case ir.I64:
			run = ewCompareRun[int64](cop)
		case ir.I1:
			run = ewCompareRun[bool](cop)
		default:
			return Compute{}, fmt.Errorf("%s: no kernel for %s", op.Name(), dt)
		}
		return ewBroadcastKernel(op, ir.I1, run), nil
	}
}

func ewCompareRun[T kernels.Element](cop kernels.CompareOp) func(c *Ctx, out *tensor.Tensor, in []*tensor.Tensor) error {
	return func(c *Ctx, out *tensor.Tensor, in []*tensor.Tensor) error {
		a, b := in[0], in[1]
		return kernels.Compare(cop, c.Threads, ewView[bool](out), out.Shape(), ewView[T](a), a.Shape(), ewView[T](b), b.Shape())
	}
}

func ewBindLogical(lop kernels.LogicalOp) func(*ir.Op) (Compute, error) {
	return func(op *ir.Op) (Compute, error) {
		return ewBroadcastKernel(op, ir.I1, func(c *Ctx, out *tensor.Tensor, in []*tensor.Tensor) error {
			a, b := in[0], in[1]
			return kernels.Logical(lop, c.Threads, ewView[bool](out), out.Shape(), ewView[bool](a), a.Shape(), ewView[bool](b), b.Shape())
		}), nil
	}
}

func ewBindNot(op *ir.Op) (Compute, error) {
	return ewMapKernel(op, func(c *Ctx, out, x *tensor.Tensor) error {
		return kernels.Not(c.Threads, ewView[bool](out), ewView[bool](x))
	}), nil
}

func ewInferWhere(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 3); err != nil {
		return nil, err
	}
	if in[0].DType != ir.I1 {
		return nil, fmt.Errorf("condition type %s is not i1", in[0])
	}
	if err := ewSameDType(in[1:]); err != nil {
		return nil, err
	}
	dims, err := broadcastDims(in[0].Dims, in[1].Dims)
	if err == nil {
		dims, err = broadcastDims(dims, in[2].Dims)
	}
	if err != nil {
		return nil, fmt.Errorf("operand shapes %s, %s and %s are not broadcastable",
			dimsString(in[0].Dims), dimsString(in[1].Dims), dimsString(in[2].Dims))
	}
	return []ir.Type{ir.TensorOf(in[1].DType, dims...)}, nil
}

func ewBindWhere(op *ir.Op) (Compute, error) {
	var run func(c *Ctx, out *tensor.Tensor, in []*tensor.Tensor) error
	dt := op.Operand(1).Type().DType
	switch dt {
	case ir.F32:
		run = ewWhereRun[float32]
	case ir.F64:
		run = ewWhereRun[float64]
	case ir.I32:
		run = ewWhereRun[int32]
	case ir.I64:
		run = ewWhereRun[int64]
	case ir.I1:
		run = ewWhereRun[bool]
	default:
		return Compute{}, fmt.Errorf("where: no kernel for %s", dt)
	}
	return ewBroadcastKernel(op, dt, run), nil
}

func ewWhereRun[T kernels.Element](c *Ctx, out *tensor.Tensor, in []*tensor.Tensor) error {
	cond, x, y := in[0], in[1], in[2]
	return kernels.Where(c.Threads, ewView[T](out), out.Shape(), ewView[bool](cond), cond.Shape(), ewView[T](x), x.Shape(), ewView[T](y), y.Shape())
}

// Equal appends x == y (i1, numpy broadcasting).
func Equal(b *ir.Builder, x, y *ir.Value) *ir.Value { return b.Op1("equal", nil, x, y) }

// NotEqual appends x != y (i1, numpy broadcasting).
func NotEqual(b *ir.Builder, x, y *ir.Value) *ir.Value { return b.Op1("not_equal", nil, x, y) }

// LessThan appends x < y (i1, numpy broadcasting).
func LessThan(b *ir.Builder, x, y *ir.Value) *ir.Value { return b.Op1("less_than", nil, x, y) }

// LessEqual appends x <= y (i1, numpy broadcasting).
func LessEqual(b *ir.Builder, x, y *ir.Value) *ir.Value { return b.Op1("less_equal", nil, x, y) }

// GreaterThan appends x > y (i1, numpy broadcasting).
func GreaterThan(b *ir.Builder, x, y *ir.Value) *ir.Value { return b.Op1("greater_than", nil, x, y) }

// GreaterEqual appends x >= y (i1, numpy broadcasting).
func GreaterEqual(b *ir.Builder, x, y *ir.Value) *ir.Value {
	return b.Op1("greater_equal", nil, x, y)
}

// LogicalAnd appends x && y on i1 tensors (numpy broadcasting).
func LogicalAnd(b *ir.Builder, x, y *ir.Value) *ir.Value { return b.Op1("logical_and", nil, x, y) }

// LogicalOr appends x || y on i1 tensors (numpy broadcasting).
func LogicalOr(b *ir.Builder, x, y *ir.Value) *ir.Value { return b.Op1("logical_or", nil, x, y) }

// LogicalNot appends !x on an i1 tensor.
func LogicalNot(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("logical_not", nil, x) }

// Where appends cond ? x : y elementwise, broadcasting all three.
func Where(b *ir.Builder, cond, x, y *ir.Value) *ir.Value { return b.Op1("where", nil, cond, x, y) }

// ewGradWhere splits dy between x (where cond) and y (elsewhere).
func ewGradWhere(g *GradContext) ([]*ir.Value, error) {
	dy := g.DY[0]
	cond := g.X(0)
	zero := Full(g.B, dy.Type().DType, 0)
	dx := make([]*ir.Value, 3)
	if g.Need(1) {
		dx[1] = g.Unbroadcast(Where(g.B, cond, dy, zero), 1)
	}
	if g.Need(2) {
		dx[2] = g.Unbroadcast(Where(g.B, cond, zero, dy), 2)
	}
	return dx, nil
}
