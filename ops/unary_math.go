package ops

import (
	"fmt"
	"math"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Elementwise math: rounding, sign, trigonometric and hyperbolic functions
// and their inverses, erf, and float classification.
//
//	floor, ceil, round (x)                                f32 f64
//	sign (x)                                              f32 f64 i32 i64
//	sin, cos, tan, asin, acos, atan (x)                   f32 f64
//	sinh, cosh, asinh, acosh, atanh, erf (x)              f32 f64
//	is_nan (x) -> i1, is_inf {positive, negative} (x) -> i1  f32 f64
//
// round rounds halves to even. sign is -1, 0 or 1 (NaN stays NaN, zeros
// keep their sign). Outside an inverse function's domain the result is NaN
// (asin(2), acosh(0.5)); atanh(±1) is ±Inf. f32 results are the float64
// functions of package math rounded once. is_inf detects +Inf where
// positive and -Inf where negative (both default to true; with both false
// the result is all false).
//
// Gradients: sin dy·cos x; cos −dy·sin x; tan dy·(1+y²); asin
// dy/√((1−x)(1+x)); acos the negation of that; atan dy/(1+x²); sinh
// dy·cosh x; cosh dy·sinh x; asinh dy/√(x²+1); acosh dy/√((x−1)(x+1));
// atanh dy/((1−x)(1+x)); erf dy·2/√π·exp(−x²). All are built from ops
// with gradients, so second derivatives work. floor, ceil, round and sign
// are piecewise constant: their derivative is 0 wherever it exists, so
// they are NoGrad and contribute nothing (as PyTorch, whose gradients of
// them are zeros); at the jumps there is no derivative to give. is_nan and
// is_inf have i1 results and are NoGrad.

var ewMathOps = []struct {
	name  string
	op    kernels.UnaryOp
	types ewDTypeSet
	grad  VJP // nil: piecewise constant, NoGrad
}{
	{"floor", kernels.UnaryFloor, ewFloats, nil},
	{"ceil", kernels.UnaryCeil, ewFloats, nil},
	{"round", kernels.UnaryRound, ewFloats, nil},
	{"sign", kernels.UnarySign, ewNumbers, nil},
	{"sin", kernels.UnarySin, ewFloats, ewGradSin},
	{"cos", kernels.UnaryCos, ewFloats, ewGradCos},
	{"tan", kernels.UnaryTan, ewFloats, ewGradTan},
	{"asin", kernels.UnaryAsin, ewFloats, ewGradAsin},
	{"acos", kernels.UnaryAcos, ewFloats, ewGradAcos},
	{"atan", kernels.UnaryAtan, ewFloats, ewGradAtan},
	{"sinh", kernels.UnarySinh, ewFloats, ewGradSinh},
	{"cosh", kernels.UnaryCosh, ewFloats, ewGradCosh},
	{"asinh", kernels.UnaryAsinh, ewFloats, ewGradAsinh},
	{"acosh", kernels.UnaryAcosh, ewFloats, ewGradAcosh},
	{"atanh", kernels.UnaryAtanh, ewFloats, ewGradAtanh},
	{"erf", kernels.UnaryErf, ewFloats, ewGradErf},
}

func init() {
	for _, u := range ewMathOps {
		op := u.op
		register(&Def{Name: u.name, Infer: ewInferUnary(u.types), Grad: u.grad, NoGrad: u.grad == nil,
			Compute: func(o *ir.Op) (Compute, error) { return ewBindUnary(o, op) }, NCHWc: nchwcUnary})
	}
	register(&Def{Name: "is_nan", Infer: ewInferClass(false), Compute: ewBindIsNaN, NoGrad: true})
	register(&Def{Name: "is_inf", Infer: ewInferClass(true), Compute: ewBindIsInf, NoGrad: true})
}

// ewInferClass is the Infer hook of is_nan and is_inf (signs: it has the
// positive and negative attributes): a float operand, an i1 result of its
// shape.
func ewInferClass(signs bool) func([]ir.Type, ir.Attrs) ([]ir.Type, error) {
	return func(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
		if err := wantOperands(in, 1); err != nil {
			return nil, err
		}
		if err := ewFloats.check(in[0]); err != nil {
			return nil, err
		}
		if signs {
			if _, _, err := ewInfSigns(attrs); err != nil {
				return nil, err
			}
		}
		return []ir.Type{ir.TensorOf(ir.I1, in[0].Dims...)}, nil
	}
}

// ewInfSigns decodes is_inf's positive and negative (default true) into
// the classification to run; some is false when both are false, when the
// result is all false.
func ewInfSigns(attrs ir.Attrs) (c kernels.ClassOp, some bool, err error) {
	pos, err := ewOptBool(attrs, "positive", true)
	if err != nil {
		return 0, false, err
	}
	neg, err := ewOptBool(attrs, "negative", true)
	if err != nil {
		return 0, false, err
	}
	switch {
	case pos && neg:
		return kernels.ClassInf, true, nil
	case pos:
		return kernels.ClassPosInf, true, nil
	case neg:
		return kernels.ClassNegInf, true, nil
	}
	return 0, false, nil
}

func ewBindIsNaN(op *ir.Op) (Compute, error) { return ewBindClass(op, kernels.ClassNaN, true) }

func ewBindIsInf(op *ir.Op) (Compute, error) {
	c, some, err := ewInfSigns(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	return ewBindClass(op, c, some)
}

// ewBindClass returns the kernel of classification c, or of an all-false
// result if !some.
func ewBindClass(op *ir.Op, c kernels.ClassOp, some bool) (Compute, error) {
	var run func(threads int, out []bool, x *tensor.Tensor) error
	switch dt := op.Operand(0).Type().DType; dt {
	case ir.F32:
		run = func(threads int, out []bool, x *tensor.Tensor) error {
			return kernels.Classify(c, threads, out, ewView[float32](x))
		}
	case ir.F64:
		run = func(threads int, out []bool, x *tensor.Tensor) error {
			return kernels.Classify(c, threads, out, ewView[float64](x))
		}
	default:
		return Compute{}, fmt.Errorf("%s: no kernel for %s", op.Name(), dt)
	}
	return ewMapKernel(op, func(ctx *Ctx, out, x *tensor.Tensor) error {
		if !some {
			clear(ewView[bool](out))
			return nil
		}
		return run(ctx.Threads, ewView[bool](out), x)
	}), nil
}

// Floor appends the largest integer ≤ x.
func Floor(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("floor", nil, x) }

// Ceil appends the smallest integer ≥ x.
func Ceil(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("ceil", nil, x) }

// Round appends x rounded to the nearest integer, halves to even.
func Round(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("round", nil, x) }

// Sign appends -1, 0 or 1 by the sign of x.
func Sign(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("sign", nil, x) }

// Sin appends sin x.
func Sin(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("sin", nil, x) }

// Cos appends cos x.
func Cos(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("cos", nil, x) }

// Tan appends tan x.
func Tan(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("tan", nil, x) }

// Asin appends arcsin x.
func Asin(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("asin", nil, x) }

// Acos appends arccos x.
func Acos(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("acos", nil, x) }

// Atan appends arctan x.
func Atan(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("atan", nil, x) }

// Sinh appends sinh x.
func Sinh(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("sinh", nil, x) }

// Cosh appends cosh x.
func Cosh(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("cosh", nil, x) }

// Asinh appends arsinh x.
func Asinh(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("asinh", nil, x) }

// Acosh appends arcosh x.
func Acosh(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("acosh", nil, x) }

// Atanh appends artanh x.
func Atanh(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("atanh", nil, x) }

// Erf appends the error function of x.
func Erf(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("erf", nil, x) }

// IsNaN appends x != x (i1).
func IsNaN(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("is_nan", nil, x) }

// IsInf appends whether x is +Inf (if positive) or -Inf (if negative), as
// i1.
func IsInf(b *ir.Builder, x *ir.Value, positive, negative bool) *ir.Value {
	return b.Op1("is_inf", ir.A("positive", positive, "negative", negative), x)
}

// Gradient rules.

func ewGradSin(g *GradContext) ([]*ir.Value, error) {
	return []*ir.Value{Multiply(g.B, g.DY[0], Cos(g.B, g.X(0)))}, nil
}

func ewGradCos(g *GradContext) ([]*ir.Value, error) {
	return []*ir.Value{Multiply(g.B, g.DY[0], Neg(g.B, Sin(g.B, g.X(0))))}, nil
}

// ewGradTan is dy·(1 + y²).
func ewGradTan(g *GradContext) ([]*ir.Value, error) {
	return []*ir.Value{Multiply(g.B, g.DY[0], Scale(g.B, Square(g.B, g.Y(0)), 1, 1))}, nil
}

// ewOneMinusSq is (1−x)(1+x), which keeps its precision near |x| = 1
// where 1−x² would cancel.
func ewOneMinusSq(b *ir.Builder, x *ir.Value) *ir.Value {
	return Multiply(b, Scale(b, x, -1, 1), Scale(b, x, 1, 1))
}

// ewGradAsin is dy/√((1−x)(1+x)).
func ewGradAsin(g *GradContext) ([]*ir.Value, error) {
	return []*ir.Value{Multiply(g.B, g.DY[0], Rsqrt(g.B, ewOneMinusSq(g.B, g.X(0))))}, nil
}

// ewGradAcos is −dy/√((1−x)(1+x)).
func ewGradAcos(g *GradContext) ([]*ir.Value, error) {
	return []*ir.Value{Multiply(g.B, Neg(g.B, g.DY[0]), Rsqrt(g.B, ewOneMinusSq(g.B, g.X(0))))}, nil
}

// ewGradAtan is dy/(1 + x²).
func ewGradAtan(g *GradContext) ([]*ir.Value, error) {
	return []*ir.Value{Divide(g.B, g.DY[0], Scale(g.B, Square(g.B, g.X(0)), 1, 1))}, nil
}

func ewGradSinh(g *GradContext) ([]*ir.Value, error) {
	return []*ir.Value{Multiply(g.B, g.DY[0], Cosh(g.B, g.X(0)))}, nil
}

func ewGradCosh(g *GradContext) ([]*ir.Value, error) {
	return []*ir.Value{Multiply(g.B, g.DY[0], Sinh(g.B, g.X(0)))}, nil
}

// ewGradAsinh is dy/√(x² + 1).
func ewGradAsinh(g *GradContext) ([]*ir.Value, error) {
	return []*ir.Value{Multiply(g.B, g.DY[0], Rsqrt(g.B, Scale(g.B, Square(g.B, g.X(0)), 1, 1)))}, nil
}

// ewGradAcosh is dy/√((x−1)(x+1)).
func ewGradAcosh(g *GradContext) ([]*ir.Value, error) {
	x := g.X(0)
	return []*ir.Value{Multiply(g.B, g.DY[0], Rsqrt(g.B, Multiply(g.B, Scale(g.B, x, 1, -1), Scale(g.B, x, 1, 1))))}, nil
}

// ewGradAtanh is dy/((1−x)(1+x)).
func ewGradAtanh(g *GradContext) ([]*ir.Value, error) {
	return []*ir.Value{Divide(g.B, g.DY[0], ewOneMinusSq(g.B, g.X(0)))}, nil
}

// ewGradErf is dy·2/√π·exp(−x²).
func ewGradErf(g *GradContext) ([]*ir.Value, error) {
	e := Exp(g.B, Scale(g.B, Square(g.B, g.X(0)), -1, 0))
	return []*ir.Value{Multiply(g.B, g.DY[0], Scale(g.B, e, 2/math.SqrtPi, 0))}, nil
}
