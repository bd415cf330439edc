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
//
// Gradients (float operands): relu passes dy where y > 0; sigmoid
// dy·y·(1−y); tanh dy·(1−y²); exp dy·y; log dy/x; sqrt dy/(2y); rsqrt
// −dy·y³/2; abs dy·sign(x), 0 at 0; neg −dy; square 2x·dy; gelu and silu
// through the helper ops gelu_grad and silu_grad; softplus dy·sigmoid(x);
// clip passes dy where min ≤ x ≤ max, boundaries included (as PyTorch),
// and 0 elsewhere and at NaN.

var ewUnaryOps = []struct {
	name  string
	op    kernels.UnaryOp
	types ewDTypeSet
	grad  VJP
	// perSample: the vector loops and the Go loop give the same bits
	// (PerSample).
	perSample bool
}{
	{"relu", kernels.UnaryRelu, ewNumbers, ewGradRelu, true},
	{"sigmoid", kernels.UnarySigmoid, ewFloats, ewGradSigmoid, false},
	{"tanh", kernels.UnaryTanh, ewFloats, ewGradTanh, false},
	{"exp", kernels.UnaryExp, ewFloats, ewGradExp, false},
	{"log", kernels.UnaryLog, ewFloats, ewGradLog, false},
	{"sqrt", kernels.UnarySqrt, ewFloats, ewGradSqrt, false},
	{"rsqrt", kernels.UnaryRsqrt, ewFloats, ewGradRsqrt, false},
	{"abs", kernels.UnaryAbs, ewNumbers, ewGradAbs, true},
	{"neg", kernels.UnaryNeg, ewNumbers, ewGradNeg, true},
	{"square", kernels.UnarySquare, ewNumbers, ewGradSquare, true},
	{"silu", kernels.UnarySilu, ewFloats, ewGradSilu, true},
	{"softplus", kernels.UnarySoftplus, ewFloats, ewGradSoftplus, false},
}

func init() {
	for _, u := range ewUnaryOps {
		op := u.op
		d := &Def{Name: u.name, Infer: ewInferUnary(u.types), Grad: u.grad, Compute: func(o *ir.Op) (Compute, error) {
			return ewBindUnary(o, op)
		}, NCHWc: nchwcUnary}
		if u.perSample {
			d.PerSample = perSampleUnary
		}
		register(d)
	}
	register(&Def{Name: "gelu", Infer: ewInferGelu, Compute: ewBindGelu, Grad: ewGradGelu, NCHWc: nchwcUnary})
	register(&Def{Name: "clip", Infer: ewInferClip, Compute: ewBindClip, Grad: ewGradClip, NCHWc: nchwcUnary})
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

// ewUnaryKernel returns a kernel whose result, shaped like its operand
// and of the op's result dtype, run fills. The result takes over the
// operand's buffer when the operand dies here and nobody else holds it
// (the ops donate operand 0), so run must allow out to be x.
func ewUnaryKernel(op *ir.Op, run func(c *Ctx, out, x *tensor.Tensor) error) Compute {
	return ewMapKernel(op, run)
}

func ewBindUnary(op *ir.Op, uop kernels.UnaryOp) (Compute, error) {
	switch dt := op.Operand(0).Type().DType; dt {
	case ir.F32:
		if uop == kernels.UnaryRelu { // vectorised, same bits
			return ewUnaryKernel(op, func(c *Ctx, out, x *tensor.Tensor) error {
				kernels.ReluF32(out.F32(), x.F32(), c.Threads)
				return nil
			}), nil
		}
		return ewUnaryKernel(op, ewUnaryRun[float32](uop)), nil
	case ir.F64:
		return ewUnaryKernel(op, ewUnaryRun[float64](uop)), nil
	case ir.I32:
		return ewUnaryKernel(op, ewUnaryRun[int32](uop)), nil
	case ir.I64:
		return ewUnaryKernel(op, ewUnaryRun[int64](uop)), nil
	default:
		return Compute{}, fmt.Errorf("%s: no kernel for %s", op.Name(), dt)
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

func ewBindGelu(op *ir.Op) (Compute, error) {
	approx, err := ewOptBool(op.Attrs, "approximate", false)
	if err != nil {
		return Compute{}, err
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

func ewBindClip(op *ir.Op) (Compute, error) {
	lo, hi, err := ewClipAttrs(op.Attrs)
	if err != nil {
		return Compute{}, err
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
		return Compute{}, fmt.Errorf("clip: no kernel for %s", dt)
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
// Float gradients take one fused pass (relu_grad), which reads only y.
func ewGradRelu(g *GradContext) ([]*ir.Value, error) {
	y := g.Y(0)
	if y.Type().DType.IsFloat() {
		return []*ir.Value{ReluGrad(g.B, y, g.DY[0])}, nil
	}
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

// ewGradSigmoid is dy·y·(1−y).
func ewGradSigmoid(g *GradContext) ([]*ir.Value, error) {
	y := g.Y(0)
	return []*ir.Value{Multiply(g.B, g.DY[0], Multiply(g.B, y, Scale(g.B, y, -1, 1)))}, nil
}

// ewGradExp is dy·y.
func ewGradExp(g *GradContext) ([]*ir.Value, error) {
	return []*ir.Value{Multiply(g.B, g.DY[0], g.Y(0))}, nil
}

// ewGradLog is dy/x.
func ewGradLog(g *GradContext) ([]*ir.Value, error) {
	return []*ir.Value{Divide(g.B, g.DY[0], g.X(0))}, nil
}

// ewGradSqrt is dy/(2y).
func ewGradSqrt(g *GradContext) ([]*ir.Value, error) {
	return []*ir.Value{Divide(g.B, Scale(g.B, g.DY[0], 0.5, 0), g.Y(0))}, nil
}

// ewGradRsqrt is −dy·y³/2, since d x^(−1/2) = −x^(−3/2)/2.
func ewGradRsqrt(g *GradContext) ([]*ir.Value, error) {
	y := g.Y(0)
	y3 := Multiply(g.B, Square(g.B, y), Scale(g.B, y, -0.5, 0))
	return []*ir.Value{Multiply(g.B, g.DY[0], y3)}, nil
}

// ewGradAbs is dy·sign(x), with sign(0) = 0.
func ewGradAbs(g *GradContext) ([]*ir.Value, error) {
	x, dy := g.X(0), g.DY[0]
	zero := Full(g.B, dy.Type().DType, 0)
	neg := Where(g.B, LessThan(g.B, x, zero), Neg(g.B, dy), zero)
	return []*ir.Value{Where(g.B, GreaterThan(g.B, x, zero), dy, neg)}, nil
}

// ewGradSquare is 2x·dy.
func ewGradSquare(g *GradContext) ([]*ir.Value, error) {
	return []*ir.Value{Multiply(g.B, g.DY[0], Scale(g.B, g.X(0), 2, 0))}, nil
}

// ewGradGelu calls gelu_grad, which differentiates the form the forward
// used.
func ewGradGelu(g *GradContext) ([]*ir.Value, error) {
	approx, err := ewOptBool(g.Op.Attrs, "approximate", false)
	if err != nil {
		return nil, err
	}
	return []*ir.Value{GeluGrad(g.B, g.X(0), g.DY[0], approx)}, nil
}

// ewGradSilu calls silu_grad.
func ewGradSilu(g *GradContext) ([]*ir.Value, error) {
	return []*ir.Value{SiluGrad(g.B, g.X(0), g.DY[0])}, nil
}

// ewGradSoftplus is dy·sigmoid(x).
func ewGradSoftplus(g *GradContext) ([]*ir.Value, error) {
	return []*ir.Value{Multiply(g.B, g.DY[0], Sigmoid(g.B, g.X(0)))}, nil
}

// ewGradClip passes dy where min ≤ x ≤ max.
func ewGradClip(g *GradContext) ([]*ir.Value, error) {
	lo, hi, err := ewClipAttrs(g.Op.Attrs)
	if err != nil {
		return nil, err
	}
	x, dy := g.X(0), g.DY[0]
	dt := dy.Type().DType
	// An infinite bound needs no test, except that NaN must fail it.
	var in *ir.Value
	if !math.IsInf(lo, -1) || math.IsInf(hi, 1) {
		in = GreaterEqual(g.B, x, Full(g.B, dt, lo))
	}
	if !math.IsInf(hi, 1) {
		below := LessEqual(g.B, x, Full(g.B, dt, hi))
		if in == nil {
			in = below
		} else {
			in = LogicalAnd(g.B, in, below)
		}
	}
	return []*ir.Value{Where(g.B, in, dy, Full(g.B, dt, 0))}, nil
}
