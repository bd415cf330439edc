package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Binary arithmetic with numpy broadcasting, and scale.
//
//	add, subtract, multiply, divide, maximum, minimum (x, y)  f32 f64 i32 i64
//	mod, fmod (x, y)                                          f32 f64 i32 i64
//	pow (x, y)                                                f32 f64
//	scale {scale, bias} (x)                                   x·scale + bias
//
// Both operands have one dtype. Integer division truncates toward zero; a
// zero divisor is a kernel error. maximum and minimum propagate NaN. mod
// is the remainder of floored division, with the sign of y (Python's %,
// numpy's remainder, ONNX's Mod); fmod that of truncated division, with
// the sign of x (C's fmod, ONNX's Mod with fmod=1). Their integer forms
// fail on a zero divisor like divide; on floats a zero divisor gives NaN.
//
// Gradients (float operands; each reduced to its operand's shape):
// add and subtract pass ±dy; multiply dy·y and dy·x; divide dy/y and
// −dy·(x/y)/y; scale dy·scale. maximum and minimum send dy to the operand
// that was selected and, where x == y, half of it to each; where either is
// NaN both get dy (all as PyTorch). pow sends dy·y·x^(y−1) to x and
// dy·x^y·log(x) to y, with PyTorch's conventions at the edges: the x
// gradient is 0 where y == 0, and the y gradient is 0 where x == 0 and
// y ≥ 0; for x < 0 the y gradient is NaN (log of a negative number), and
// the x gradient is finite only for integral y. mod and fmod send dy to x
// and −dy·floor(x/y), respectively −dy·trunc(x/y), to y (as PyTorch's
// remainder and fmod).

var ewArithOps = []struct {
	name  string
	op    kernels.BinaryOp
	types ewDTypeSet
	grad  VJP
	// perSample: one exact operation per element (PerSample).
	perSample bool
}{
	{"add", kernels.BinAdd, ewNumbers, ewGradAdd, true},
	{"subtract", kernels.BinSub, ewNumbers, ewGradSubtract, true},
	{"multiply", kernels.BinMul, ewNumbers, ewGradMultiply, true},
	{"divide", kernels.BinDiv, ewNumbers, ewGradDivide, true},
	{"maximum", kernels.BinMax, ewNumbers, ewGradMaxMin(true), true},
	{"minimum", kernels.BinMin, ewNumbers, ewGradMaxMin(false), true},
	{"pow", kernels.BinPow, ewFloats, ewGradPow, false},
	{"mod", kernels.BinMod, ewNumbers, ewGradMod(false), false},
	{"fmod", kernels.BinFmod, ewNumbers, ewGradMod(true), false},
}

func init() {
	for _, a := range ewArithOps {
		d := &Def{Name: a.name, Infer: ewInferBroadcast(a.types, false), Compute: ewBindArith(a.op), Grad: a.grad, NCHWc: nchwcBinary}
		if a.perSample {
			d.PerSample = perSampleBroadcast
		}
		register(d)
	}
	register(&Def{Name: "scale", Infer: ewInferScale, Compute: ewBindScale, Grad: ewGradScale})
}

// ewInferBroadcast is the Infer hook of a binary op whose operands share a
// dtype in types; the result has the broadcast shape and the operands'
// dtype, or i1 if boolResult.
func ewInferBroadcast(types ewDTypeSet, boolResult bool) func([]ir.Type, ir.Attrs) ([]ir.Type, error) {
	return func(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
		if err := wantOperands(in, 2); err != nil {
			return nil, err
		}
		if err := ewSameDType(in); err != nil {
			return nil, err
		}
		if err := types.check(in[0]); err != nil {
			return nil, err
		}
		dims, err := broadcastDims(in[0].Dims, in[1].Dims)
		if err != nil {
			return nil, err
		}
		dt := in[0].DType
		if boolResult {
			dt = ir.I1
		}
		return []ir.Type{ir.TensorOf(dt, dims...)}, nil
	}
}

// ewBroadcastKernel returns a kernel that fills the broadcast result of
// its operands, with dtype outDT, using run (see ewKernel: a donated
// operand may be the result).
func ewBroadcastKernel(op *ir.Op, outDT ir.DType, run func(c *Ctx, out *tensor.Tensor, in []*tensor.Tensor) error) Compute {
	return ewKernel(op, outDT, run)
}

func ewBindArith(bop kernels.BinaryOp) func(*ir.Op) (Compute, error) {
	return func(op *ir.Op) (Compute, error) {
		var run func(c *Ctx, out *tensor.Tensor, in []*tensor.Tensor) error
		switch dt := op.Operand(0).Type().DType; dt {
		case ir.F32:
			run = ewArithRun[float32](bop)
		case ir.F64:
			run = ewArithRun[float64](bop)
		case ir.I32:
			run = ewArithRun[int32](bop)
		case ir.I64:
			run = ewArithRun[int64](bop)
		default:
			return Compute{}, fmt.Errorf("%s: no kernel for %s", op.Name(), dt)
		}
		return ewBroadcastKernel(op, op.Operand(0).Type().DType, run), nil
	}
}

func ewArithRun[T kernels.Numeric](bop kernels.BinaryOp) func(c *Ctx, out *tensor.Tensor, in []*tensor.Tensor) error {
	return func(c *Ctx, out *tensor.Tensor, in []*tensor.Tensor) error {
		a, b := in[0], in[1]
		return kernels.Binary(bop, c.Threads, ewView[T](out), out.Shape(), ewView[T](a), a.Shape(), ewView[T](b), b.Shape())
	}
}

func ewInferScale(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	if err := ewNumbers.check(in[0]); err != nil {
		return nil, err
	}
	if _, _, err := ewScaleAttrs(attrs, in[0].DType); err != nil {
		return nil, err
	}
	return []ir.Type{in[0]}, nil
}

// ewScaleAttrs decodes scale (default 1) and bias (default 0); on an
// integer dtype both must be integers.
func ewScaleAttrs(attrs ir.Attrs, dt ir.DType) (scale, bias float64, err error) {
	if scale, err = ewOptFloat(attrs, "scale", 1); err != nil {
		return 0, 0, err
	}
	if bias, err = ewOptFloat(attrs, "bias", 0); err != nil {
		return 0, 0, err
	}
	if dt.IsInt() {
		if err := ewIntegral("scale", scale, dt); err != nil {
			return 0, 0, err
		}
		if err := ewIntegral("bias", bias, dt); err != nil {
			return 0, 0, err
		}
	}
	return scale, bias, nil
}

func ewBindScale(op *ir.Op) (Compute, error) {
	dt := op.Operand(0).Type().DType
	s, b, err := ewScaleAttrs(op.Attrs, dt)
	if err != nil {
		return Compute{}, err
	}
	switch dt {
	case ir.F32:
		return ewMapKernel(op, ewScaleRun[float32](s, b)), nil
	case ir.F64:
		return ewMapKernel(op, ewScaleRun[float64](s, b)), nil
	case ir.I32:
		return ewMapKernel(op, ewScaleRun[int32](s, b)), nil
	case ir.I64:
		return ewMapKernel(op, ewScaleRun[int64](s, b)), nil
	}
	return Compute{}, fmt.Errorf("scale: no kernel for %s", dt)
}

func ewScaleRun[T kernels.Numeric](s, b float64) func(c *Ctx, out, x *tensor.Tensor) error {
	scale, bias := T(s), T(b)
	return func(c *Ctx, out, x *tensor.Tensor) error {
		return kernels.Scale(c.Threads, ewView[T](out), ewView[T](x), scale, bias)
	}
}

// Add appends x + y (numpy broadcasting).
func Add(b *ir.Builder, x, y *ir.Value) *ir.Value { return b.Op1("add", nil, x, y) }

// Subtract appends x - y (numpy broadcasting).
func Subtract(b *ir.Builder, x, y *ir.Value) *ir.Value { return b.Op1("subtract", nil, x, y) }

// Multiply appends x * y (numpy broadcasting).
func Multiply(b *ir.Builder, x, y *ir.Value) *ir.Value { return b.Op1("multiply", nil, x, y) }

// Divide appends x / y (numpy broadcasting); integer division truncates
// toward zero and fails at run time on a zero divisor.
func Divide(b *ir.Builder, x, y *ir.Value) *ir.Value { return b.Op1("divide", nil, x, y) }

// Maximum appends the elementwise max of x and y (NaN propagates).
func Maximum(b *ir.Builder, x, y *ir.Value) *ir.Value { return b.Op1("maximum", nil, x, y) }

// Minimum appends the elementwise min of x and y (NaN propagates).
func Minimum(b *ir.Builder, x, y *ir.Value) *ir.Value { return b.Op1("minimum", nil, x, y) }

// Pow appends x raised to y, elementwise (floats only).
func Pow(b *ir.Builder, x, y *ir.Value) *ir.Value { return b.Op1("pow", nil, x, y) }

// Mod appends the remainder of x/y with the sign of y (floored division;
// numpy broadcasting). Integer operands fail at run time on a zero
// divisor.
func Mod(b *ir.Builder, x, y *ir.Value) *ir.Value { return b.Op1("mod", nil, x, y) }

// Fmod appends the remainder of x/y with the sign of x (truncated
// division; numpy broadcasting). Integer operands fail at run time on a
// zero divisor.
func Fmod(b *ir.Builder, x, y *ir.Value) *ir.Value { return b.Op1("fmod", nil, x, y) }

// Scale appends x·scale + bias; on integer tensors scale and bias must be
// integers.
func Scale(b *ir.Builder, x *ir.Value, scale, bias float64) *ir.Value {
	return b.Op1("scale", ir.A("scale", scale, "bias", bias), x)
}

// Gradient rules: dy flows to each operand, reduced to its shape.

func ewGradAdd(g *GradContext) ([]*ir.Value, error) {
	dx := make([]*ir.Value, 2)
	for i := range dx {
		if g.Need(i) {
			dx[i] = g.Unbroadcast(g.DY[0], i)
		}
	}
	return dx, nil
}

func ewGradSubtract(g *GradContext) ([]*ir.Value, error) {
	dx := make([]*ir.Value, 2)
	if g.Need(0) {
		dx[0] = g.Unbroadcast(g.DY[0], 0)
	}
	if g.Need(1) {
		dx[1] = g.Unbroadcast(Neg(g.B, g.DY[0]), 1)
	}
	return dx, nil
}

func ewGradMultiply(g *GradContext) ([]*ir.Value, error) {
	dx := make([]*ir.Value, 2)
	if g.Need(0) {
		dx[0] = g.Unbroadcast(Multiply(g.B, g.DY[0], g.X(1)), 0)
	}
	if g.Need(1) {
		dx[1] = g.Unbroadcast(Multiply(g.B, g.DY[0], g.X(0)), 1)
	}
	return dx, nil
}

func ewGradDivide(g *GradContext) ([]*ir.Value, error) {
	dx := make([]*ir.Value, 2)
	q := Divide(g.B, g.DY[0], g.X(1)) // dy / y
	if g.Need(0) {
		dx[0] = g.Unbroadcast(q, 0)
	}
	if g.Need(1) {
		// −dy·x/y² = −(dy/y)·(x/y), and x/y is the result.
		dx[1] = g.Unbroadcast(Neg(g.B, Multiply(g.B, q, g.Y(0))), 1)
	}
	return dx, nil
}

// ewGradMaxMin is the rule of maximum (isMax) or minimum, PyTorch's:
// dy, halved where x == y, goes to each operand except where the other
// one was selected.
func ewGradMaxMin(isMax bool) VJP {
	return func(g *GradContext) ([]*ir.Value, error) {
		x, y, dy := g.X(0), g.X(1), g.DY[0]
		zero := Full(g.B, dy.Type().DType, 0)
		share := Where(g.B, Equal(g.B, x, y), Scale(g.B, dy, 0.5, 0), dy)
		// lost(i) says where operand i was not selected.
		lost := func(i int) *ir.Value {
			if isMax == (i == 0) {
				return LessThan(g.B, x, y)
			}
			return GreaterThan(g.B, x, y)
		}
		dx := make([]*ir.Value, 2)
		for i := range dx {
			if g.Need(i) {
				dx[i] = g.Unbroadcast(Where(g.B, lost(i), zero, share), i)
			}
		}
		return dx, nil
	}
}

func ewGradPow(g *GradContext) ([]*ir.Value, error) {
	x, y, dy := g.X(0), g.X(1), g.DY[0]
	dt := dy.Type().DType
	zero := Full(g.B, dt, 0)
	dx := make([]*ir.Value, 2)
	if g.Need(0) {
		// dy·y·x^(y−1), 0 where y == 0 (where x^(y−1) may be Inf).
		d := Multiply(g.B, dy, Multiply(g.B, y, Pow(g.B, x, Scale(g.B, y, 1, -1))))
		d = Where(g.B, Equal(g.B, y, zero), zero, d)
		dx[0] = g.Unbroadcast(d, 0)
	}
	if g.Need(1) {
		// dy·x^y·log(x), 0 where x == 0 and y ≥ 0 (0·−Inf otherwise).
		d := Multiply(g.B, dy, Multiply(g.B, g.Y(0), Log(g.B, x)))
		edge := LogicalAnd(g.B, Equal(g.B, x, zero), GreaterEqual(g.B, y, zero))
		d = Where(g.B, edge, zero, d)
		dx[1] = g.Unbroadcast(d, 1)
	}
	return dx, nil
}

// ewGradMod is the rule of mod (x − y·floor(x/y)) or, if trunc, of fmod
// (x − y·trunc(x/y)): dy to x, −dy times the integral quotient to y.
func ewGradMod(trunc bool) VJP {
	return func(g *GradContext) ([]*ir.Value, error) {
		dy := g.DY[0]
		dx := make([]*ir.Value, 2)
		if g.Need(0) {
			dx[0] = g.Unbroadcast(dy, 0)
		}
		if g.Need(1) {
			q := Divide(g.B, g.X(0), g.X(1))
			n := Floor(g.B, q)
			if trunc {
				n = Where(g.B, LessThan(g.B, q, Full(g.B, dy.Type().DType, 0)), Ceil(g.B, q), n)
			}
			dx[1] = g.Unbroadcast(Neg(g.B, Multiply(g.B, dy, n)), 1)
		}
		return dx, nil
	}
}

// ewGradScale is dy·scale; the bias does not matter.
func ewGradScale(g *GradContext) ([]*ir.Value, error) {
	s, _, err := ewScaleAttrs(g.Op.Attrs, g.Op.Operand(0).Type().DType)
	if err != nil {
		return nil, err
	}
	if s == 1 {
		return []*ir.Value{g.DY[0]}, nil
	}
	return []*ir.Value{Scale(g.B, g.DY[0], s, 0)}, nil
}
