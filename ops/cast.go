package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Casts and copies of identity.
//
//	cast {dtype} (x)               any dtype to any dtype
//	assign (x)                     x itself, shared (no copy)
//	full_like {value, dtype} (x)   x's shape filled with value; dtype
//	                               defaults to x's
//
// Float to integer truncates toward zero (out-of-range values are
// unspecified); i64 to i32 wraps; anything to i1 is x != 0; i1 to a number
// is 0 or 1. A cast to x's own dtype shares x's storage.
//
// Gradients: a cast between float dtypes casts dy back to x's dtype; a
// cast to or from an integer or i1 passes none. assign passes dy;
// full_like none.

func init() {
	register(&Def{Name: "cast", Infer: ewInferCast, Compute: ewBindCast, Grad: ewGradCast, PerSample: perSampleUnary})
	register(&Def{Name: "assign", Infer: ewInferUnary(ewAnyDType), Compute: ewBindAssign, Grad: ewGradAssign})
	register(&Def{Name: "full_like", Infer: ewInferFullLike, Compute: ewBindFullLike, NoGrad: true})
}

func ewInferCast(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	dt, err := attrs.DType("dtype")
	if err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(dt, in[0].Dims...)}, nil
}

func ewBindCast(op *ir.Op) (Compute, error) {
	from, to := op.Operand(0).Type().DType, op.Result(0).Type().DType
	if from == to {
		return ewBindAssign(op)
	}
	var run func(c *Ctx, out, x *tensor.Tensor) error
	switch from {
	case ir.F32:
		run = ewCastFrom[float32](to)
	case ir.F64:
		run = ewCastFrom[float64](to)
	case ir.I32:
		run = ewCastFrom[int32](to)
	case ir.I64:
		run = ewCastFrom[int64](to)
	case ir.I1:
		run = ewCastFrom[bool](to)
	}
	if run == nil {
		return Compute{}, fmt.Errorf("cast: no kernel from %s to %s", from, to)
	}
	return ewMapKernel(op, run), nil
}

func ewCastFrom[T kernels.Element](to ir.DType) func(c *Ctx, out, x *tensor.Tensor) error {
	switch to {
	case ir.F32:
		return ewCastRun[T, float32]
	case ir.F64:
		return ewCastRun[T, float64]
	case ir.I32:
		return ewCastRun[T, int32]
	case ir.I64:
		return ewCastRun[T, int64]
	case ir.I1:
		return ewCastRun[T, bool]
	}
	return nil
}

func ewCastRun[T, U kernels.Element](c *Ctx, out, x *tensor.Tensor) error {
	return kernels.Cast(c.Threads, ewView[U](out), ewView[T](x))
}

// ewBindAssign returns the kernel of an op whose result is its operand,
// shared: a view (Compute.View).
func ewBindAssign(op *ir.Op) (Compute, error) {
	name, dts := op.Name(), ewOperandDTypes(op)
	return Compute{
		Fn:   func(c *Ctx, in, _ []*tensor.Tensor) error { return ewCheckInputs(name, in, dts) },
		View: []int{0},
	}, nil
}

func ewInferFullLike(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	dt := in[0].DType
	if attrs.Has("dtype") {
		var err error
		if dt, err = attrs.DType("dtype"); err != nil {
			return nil, err
		}
	}
	if _, err := fillValueAttr(attrs, dt); err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(dt, in[0].Dims...)}, nil
}

func ewBindFullLike(op *ir.Op) (Compute, error) {
	value, err := fillValueAttr(op.Attrs, op.Result(0).Type().DType)
	if err != nil {
		return Compute{}, err
	}
	return ewMapKernel(op, func(_ *Ctx, out, _ *tensor.Tensor) error {
		value.fill(out)
		return nil
	}), nil
}

// Cast appends x converted to dtype dt (x itself, shared, if it already
// has dt).
func Cast(b *ir.Builder, x *ir.Value, dt ir.DType) *ir.Value {
	return b.Op1("cast", ir.A("dtype", dt), x)
}

// Assign appends a value that shares x's storage.
func Assign(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("assign", nil, x) }

// FullLike appends a tensor shaped like x filled with value, of dtype dt,
// or of x's dtype if dt is ir.InvalidDType.
func FullLike(b *ir.Builder, x *ir.Value, value float64, dt ir.DType) *ir.Value {
	attrs := ir.A("value", value)
	if dt != ir.InvalidDType {
		attrs = attrs.With("dtype", dt)
	}
	return b.Op1("full_like", attrs, x)
}

// ewGradCast casts dy back to the operand's dtype, between floats only.
func ewGradCast(g *GradContext) ([]*ir.Value, error) {
	from, to := g.Op.Operand(0).Type().DType, g.Op.Result(0).Type().DType
	if !from.IsFloat() || !to.IsFloat() || g.DY[0] == nil || !g.Need(0) {
		return []*ir.Value{nil}, nil
	}
	return []*ir.Value{Cast(g.B, g.DY[0], from)}, nil
}

func ewGradAssign(g *GradContext) ([]*ir.Value, error) {
	return []*ir.Value{g.DY[0]}, nil
}
