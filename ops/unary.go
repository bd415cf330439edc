package ops

import (
	"fmt"
	"math"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Unary elementwise ops; the result has the operand's type.
//
//	relu, abs, neg, square, clip {min, max}               f32 f64 i32 i64
//	sigmoid, tanh, exp, log, sqrt, rsqrt, silu, softplus  f32 f64
//	gelu {approximate = false}                            f32 f64
//
// gelu is exact (x·Φ(x), via erfc) unless approximate selects the tanh
// form; softplus is log(1+exp(x)) computed without overflow. clip keeps
// NaN as NaN; on integers it keeps the integers within [min, max].

var ewUnaryOps = []struct {
	name  string
	op    kernels.UnaryOp
	types ewDTypeSet
	grad  VJP
}{
	{"relu", kernels.UnaryRelu, ewNumbers, ewGradRelu},
	{"sigmoid", kernels.UnarySigmoid, ewFloats, nil},
	{"tanh", kernels.UnaryTanh, ewFloats, ewGradTanh},
	{"exp", kernels.UnaryExp, ewFloats, nil},
	{"log", kernels.UnaryLog, ewFloats, nil},
	{"sqrt", kernels.UnarySqrt, ewFloats, nil},
	{"rsqrt", kernels.UnaryRsqrt, ewFloats, nil},
	{"abs", kernels.UnaryAbs, ewNumbers, nil},
	{"neg", kernels.UnaryNeg, ewNumbers, ewGradNeg},
	{"square", kernels.UnarySquare, ewNumbers, nil},
	{"silu", kernels.UnarySilu, ewFloats, nil},
	{"softplus", kernels.UnarySoftplus, ewFloats, nil},
}

func init() {
	for _, u := range ewUnaryOps {
		op := u.op
		register(&Def{Name: u.name, Infer: ewInferUnary(u.types), Grad: u.grad, Bind: func(o *ir.Op) (Kernel, error) {
			return ewBindUnary(o, op)
		}})
	}
	register(&Def{Name: "gelu", Infer: ewInferGelu, Bind: ewBindGelu})
	register(&Def{Name: "clip", Infer: ewInferClip, Bind: ewBindClip})
}

// ewInferUnary is the Infer hook of a one-operand op that keeps its type.
func ewInferUnary(types ewDTypeSet) func([]ir.Type, ir.Attrs) ([]ir.Type, error) {
	return func(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
		if err := wantOperands(in, 1); err != nil {
			return nil, err
		}
		if err := types.check(in[0]); err != nil {
			return nil, err
		}
		return []ir.Type{in[0]}, nil
	}
}

// ewUnaryKernel returns a kernel that allocates a result shaped like its
// operand, with op's result dtype, and fills it with run.
func ewUnaryKernel(op *ir.Op, run func(c *Ctx, out, x *tensor.Tensor) error) Kernel {
	name, dts, outDT := op.Name(), ewOperandDTypes(op), op.Result(0).Type().DType
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		if err := ewCheckInputs(name, in, dts); err != nil {
			return nil, err
		}
		out, err := c.New(outDT, in[0].Shape())
		if err != nil {
			return nil, err
		}
		if err := run(c, out, in[0]); err != nil {
			out.Release()
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return []*tensor.Tensor{out}, nil
	}
}

func ewBindUnary(op *ir.Op, uop kernels.UnaryOp) (Kernel, error) {
	switch dt := op.Operand(0).Type().DType; dt {
	case ir.F32:
		return ewUnaryKernel(op, ewUnaryRun[float32](uop)), nil
	case ir.F64:
		return ewUnaryKernel(op, ewUnaryRun[float64](uop)), nil
	case ir.I32:
		return ewUnaryKernel(op, ewUnaryRun[int32](uop)), nil
	case ir.I64:
		return ewUnaryKernel(op, ewUnaryRun[int64](uop)), nil
	default:
		return nil, fmt.Errorf("%s: no kernel for %s", op.Name(), dt)
	}
}

func ewUnaryRun[T kernels.Numeric](uop kernels.UnaryOp) func(c *Ctx, out, x *tensor.Tensor) error {
	return func(c *Ctx, out, x *tensor.Tensor) error {
		return kernels.Unary(uop, c.Threads, ewData[T](out), ewData[T](x))
	}
}

func ewInferGelu(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if _, err := ewOptBool(attrs, "approximate", false); err != nil {
		return nil, err
	}
	return ewInferUnary(ewFloats)(in, attrs)
}

func ewBindGelu(op *ir.Op) (Kernel, error) {
	approx, err := ewOptBool(op.Attrs, "approximate", false)
	if err != nil {
		return nil, err
	}
	if approx {
		return ewBindUnary(op, kernels.UnaryGeluTanh)
	}
	return ewBindUnary(op, kernels.UnaryGelu)
}

func ewInferClip(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if _, _, err := ewClipAttrs(attrs); err != nil {
		return nil, err
	}
	return ewInferUnary(ewNumbers)(in, attrs)
}

func ewClipAttrs(attrs ir.Attrs) (lo, hi float64, err error) {
	if lo, err = attrs.Float("min"); err != nil {
		return 0, 0, err
	}
	if hi, err = attrs.Float("max"); err != nil {
		return 0, 0, err
	}
	return lo, hi, nil
}

func ewBindClip(op *ir.Op) (Kernel, error) {
	lo, hi, err := ewClipAttrs(op.Attrs)
	if err != nil {
		return nil, err
	}
	switch dt := op.Operand(0).Type().DType; dt {
	case ir.F32:
		return ewUnaryKernel(op, ewClipRun(float32(lo), float32(hi))), nil
	case ir.F64:
		return ewUnaryKernel(op, ewClipRun(lo, hi)), nil
	case ir.I32:
		return ewUnaryKernel(op, ewClipRun(ewConvert[int32](math.Ceil(lo)), ewConvert[int32](math.Floor(hi)))), nil
	case ir.I64:
		return ewUnaryKernel(op, ewClipRun(ewConvert[int64](math.Ceil(lo)), ewConvert[int64](math.Floor(hi)))), nil
	default:
		return nil, fmt.Errorf("clip: no kernel for %s", dt)
	}
}

func ewClipRun[T kernels.Numeric](lo, hi T) func(c *Ctx, out, x *tensor.Tensor) error {
	return func(c *Ctx, out, x *tensor.Tensor) error {
		return kernels.Clip(c.Threads, ewData[T](out), ewData[T](x), lo, hi)
	}
}

// Relu appends max(x, 0).
func Relu(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("relu", nil, x) }

// Sigmoid appends 1/(1+exp(-x)).
func Sigmoid(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("sigmoid", nil, x) }

// Tanh appends tanh(x).
func Tanh(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("tanh", nil, x) }

// Exp appends exp(x).
func Exp(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("exp", nil, x) }

// Log appends the natural logarithm of x.
func Log(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("log", nil, x) }

// Sqrt appends the square root of x.
func Sqrt(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("sqrt", nil, x) }

// Rsqrt appends 1/sqrt(x).
func Rsqrt(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("rsqrt", nil, x) }

// Abs appends |x|.
func Abs(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("abs", nil, x) }

// Neg appends -x.
func Neg(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("neg", nil, x) }

// Square appends x·x.
func Square(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("square", nil, x) }

// Gelu appends the GELU of x: exact (erf) form, or the tanh form if
// approximate.
func Gelu(b *ir.Builder, x *ir.Value, approximate bool) *ir.Value {
	return b.Op1("gelu", ir.A("approximate", approximate), x)
}

// Silu appends x·sigmoid(x).
func Silu(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("silu", nil, x) }

// Softplus appends log(1+exp(x)), computed without overflow.
func Softplus(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("softplus", nil, x) }

// Clip appends min(max(x, lo), hi).
func Clip(b *ir.Builder, x *ir.Value, lo, hi float64) *ir.Value {
	return b.Op1("clip", ir.A("min", lo, "max", hi), x)
}

// Gradient rules of the unary ops.

// ewGradRelu passes dy where the output is positive.
func ewGradRelu(g *GradContext) ([]*ir.Value, error) {
	y := g.Y(0)
	pos := GreaterThan(g.B, y, FullLike(g.B, y, 0, ir.InvalidDType))
	return []*ir.Value{Where(g.B, pos, g.DY[0], FullLike(g.B, g.DY[0], 0, ir.InvalidDType))}, nil
}

// ewGradTanh is dy·(1 − y²).
func ewGradTanh(g *GradContext) ([]*ir.Value, error) {
	y := g.Y(0)
	return []*ir.Value{Multiply(g.B, g.DY[0], Scale(g.B, Square(g.B, y), -1, 1))}, nil
}

func ewGradNeg(g *GradContext) ([]*ir.Value, error) {
	return []*ir.Value{Neg(g.B, g.DY[0])}, nil
}
