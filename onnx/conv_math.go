package onnx

import (
	"math"
	"slices"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// Elementwise math and products: rounding, sign, the trigonometric and
// hyperbolic functions and their inverses, erf, Mod, IsNaN and IsInf,
// ReduceProd and Det map to gopir ops of their own; Shrink and
// MeanVarianceNormalization are composed of other ops and Einsum is
// lowered to transposes, reshapes, matmuls and sums (conv_einsum.go). The
// random ops are refused (convRandom).

func init() {
	floatOnly := map[string]func(b *ir.Builder, x *ir.Value) *ir.Value{
		"Floor": ops.Floor, "Ceil": ops.Ceil, "Round": ops.Round,
		"Sin": ops.Sin, "Cos": ops.Cos, "Tan": ops.Tan, "Asin": ops.Asin, "Acos": ops.Acos, "Atan": ops.Atan,
		"Sinh": ops.Sinh, "Cosh": ops.Cosh, "Asinh": ops.Asinh, "Acosh": ops.Acosh, "Atanh": ops.Atanh,
		"Erf": ops.Erf, "IsNaN": ops.IsNaN, "Det": ops.Det,
	}
	for name, f := range floatOnly {
		register(func(n *node) ([]*value, error) {
			x := n.In(0)
			if !x.Type().DType.IsFloat() {
				return nil, n.unsupported("an input of type %s", x.Type())
			}
			return out(f(n.b, x)), nil
		}, name)
	}
	register(convSign, "Sign")
	register(convIsInf, "IsInf")
	register(convMod, "Mod")
	register(convShrink, "Shrink")
	register(convMVN, "MeanVarianceNormalization")
	registerNoFold(convRandom, "Bernoulli", "RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike")
}

// isNumber reports whether dt is a float or integer dtype (not i1).
func isNumber(dt ir.DType) bool { return dt.IsFloat() || dt.IsInt() }

func convSign(n *node) ([]*value, error) {
	x := n.In(0)
	if !isNumber(x.Type().DType) {
		return nil, n.unsupported("an input of type %s", x.Type())
	}
	return out(ops.Sign(n.b, x)), nil
}

// convIsInf: detect_positive and detect_negative default to 1.
func convIsInf(n *node) ([]*value, error) {
	x := n.In(0)
	pos, neg := n.Int("detect_positive", 1) != 0, n.Int("detect_negative", 1) != 0
	if !x.Type().DType.IsFloat() {
		return nil, n.unsupported("an input of type %s", x.Type())
	}
	return out(ops.IsInf(n.b, x, pos, neg)), nil
}

// convMod: fmod=0 (the default) takes the divisor's sign, like Python's %,
// and fmod=1 the dividend's, like C's fmod. ONNX asks for fmod=1 on
// floats; fmod=0 there is numpy's remainder, which gopir's mod computes
// too. An integer remainder by zero is a run-time error.
func convMod(n *node) ([]*value, error) {
	x, y := n.In(0), n.In(1)
	fmod := n.Int("fmod", 0)
	xt, yt := x.Type(), y.Type()
	switch {
	case xt.DType != yt.DType:
		n.fail("inputs of types %s and %s: want one type", xt, yt)
		return nil, nil
	case !isNumber(xt.DType):
		return nil, n.unsupported("inputs of type %s", xt)
	case fmod == 0:
		return out(ops.Mod(n.b, x, y)), nil
	case fmod == 1:
		return out(ops.Fmod(n.b, x, y)), nil
	}
	n.fail("fmod=%d: want 0 or 1", fmod)
	return nil, nil
}

// convShrink: x+bias below -lambd, x−bias above lambd, 0 between. On
// integer inputs lambd and bias must be integers.
func convShrink(n *node) ([]*value, error) {
	x := n.In(0)
	lambd, bias := n.Float("lambd", 0.5), n.Float("bias", 0)
	dt := x.Type().DType
	switch {
	case dt.IsInt() && (lambd != math.Trunc(lambd) || bias != math.Trunc(bias)):
		return nil, n.unsupported("lambd=%v, bias=%v (not integers) on an input of type %s", lambd, bias, x.Type())
	case !isNumber(dt):
		return nil, n.unsupported("an input of type %s", x.Type())
	}
	b := n.b
	below := ops.LessThan(b, x, scalar(b, dt, -lambd))
	above := ops.GreaterThan(b, x, scalar(b, dt, lambd))
	hi := ops.Where(b, above, ops.Subtract(b, x, scalar(b, dt, bias)), scalar(b, dt, 0))
	return out(ops.Where(b, below, ops.Add(b, x, scalar(b, dt, bias)), hi)), nil
}

// convMVN: (x − mean)/(std + 1e-9) over axes (default [0, 2, 3]), with
// the mean and the (biased) variance over those axes, as ONNX's function
// body; the variance is taken of the centered values, which does not
// cancel like E[x²] − E[x]².
func convMVN(n *node) ([]*value, error) {
	x := n.In(0)
	axes := n.Ints("axes")
	if !n.HasAttr("axes") {
		axes = []int64{0, 2, 3}
	}
	dt := x.Type().DType
	if !dt.IsFloat() {
		return nil, n.unsupported("an input of type %s", x.Type())
	}
	r := x.Type().Rank()
	ax := make([]int, len(axes))
	for i, a := range axes {
		ax[i] = n.axis(a, r)
	}
	if len(ax) == 0 {
		n.fail("axes is empty")
		return nil, nil
	}
	if n.err != nil {
		return nil, nil
	}
	for i, a := range ax {
		if slices.Contains(ax[:i], a) {
			n.fail("axes %v lists axis %d twice", axes, a)
			return nil, nil
		}
	}
	b := n.b
	d := ops.Subtract(b, x, ops.ReduceMean(b, x, ax, true))
	std := ops.Sqrt(b, ops.ReduceMean(b, ops.Square(b, d), ax, true))
	return out(ops.Divide(b, d, ops.Add(b, std, scalar(b, dt, 1e-9)))), nil
}

// convRandom refuses the random ops: any sample would be a valid result,
// but not the one ONNX's reference draws with numpy's generator, so an
// imported model's outputs could never be checked against ONNX's.
func convRandom(n *node) ([]*value, error) {
	return nil, &UnsupportedError{What: "random op " + n.p.GetOpType(),
		Reason: "gopir's random numbers cannot reproduce the draws of ONNX's reference, so it does not import random ops"}
}
