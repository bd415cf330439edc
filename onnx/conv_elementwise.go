package onnx

import (
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// Elementwise ops: arithmetic, comparisons and logic with numpy
// broadcasting (ONNX's multidirectional broadcasting is numpy's), unary
// functions, and activations composed from them.

func init() {
	binary := map[string]func(b *ir.Builder, x, y *ir.Value) *ir.Value{
		"Add": ops.Add, "Sub": ops.Subtract, "Mul": ops.Multiply, "Div": ops.Divide, "Pow": ops.Pow,
		"Equal": ops.Equal, "Less": ops.LessThan, "LessOrEqual": ops.LessEqual,
		"Greater": ops.GreaterThan, "GreaterOrEqual": ops.GreaterEqual,
		"And": ops.LogicalAnd, "Or": ops.LogicalOr, "Xor": ops.NotEqual,
	}
	for name, f := range binary {
		register(func(n *node) ([]*value, error) {
			if name == "Pow" {
				return convPow(n)
			}
			x, y := n.In(0), n.legacyBroadcast(n.In(1), n.In(0))
			return out(f(n.b, x, y)), nil
		}, name)
	}
	unary := map[string]func(b *ir.Builder, x *ir.Value) *ir.Value{
		"Neg": ops.Neg, "Abs": ops.Abs, "Exp": ops.Exp, "Log": ops.Log, "Sqrt": ops.Sqrt,
		"Relu": ops.Relu, "Sigmoid": ops.Sigmoid, "Tanh": ops.Tanh, "Softplus": ops.Softplus,
		"Not": ops.LogicalNot,
	}
	for name, f := range unary {
		register(func(n *node) ([]*value, error) { return out(f(n.b, n.In(0))), nil }, name)
	}
	register(convReciprocal, "Reciprocal")
	register(convVariadic, "Max", "Min", "Sum", "Mean")
	register(convClip, "Clip")
	register(convWhere, "Where")
	register(convCast, "Cast")
	register(convCastLike, "CastLike")
	register(convLeakyRelu, "LeakyRelu")
	register(convElu, "Elu", "Selu", "Celu")
	register(convHardSigmoid, "HardSigmoid", "HardSwish")
	register(convSoftsign, "Softsign")
	register(convPRelu, "PRelu")
	register(convThresholdedRelu, "ThresholdedRelu")
	register(convGelu, "Gelu")
}

// legacyBroadcast reads the broadcast and axis attributes of arithmetic
// before opset 7, which broadcast y against x with y's dims placed at
// axis (numpy's suffix rule without axis), and returns y reshaped so that
// numpy broadcasting does the same. consumed_inputs (before opset 6) is an
// optimization hint with no effect on values.
func (n *node) legacyBroadcast(y, x *ir.Value) *ir.Value {
	if n.Opset() >= 7 {
		return y
	}
	if n.Opset() < 6 {
		n.Ints("consumed_inputs")
	}
	axis, hasAxis := n.Int("axis", 0), n.HasAttr("axis")
	if n.Int("broadcast", 0) == 0 || !hasAxis {
		return y
	}
	xr, yr := x.Type().Rank(), y.Type().Rank()
	a := n.axis(axis, xr)
	trailing := xr - a - yr
	if trailing < 0 {
		n.fail("broadcast at axis %d: %s does not fit in %s", axis, y.Type(), x.Type())
		return y
	}
	if trailing == 0 {
		return y
	}
	axes := make([]int, trailing)
	for i := range axes {
		axes[i] = yr + i
	}
	return ops.Unsqueeze(n.b, y, axes...)
}

// scalar appends a rank-0 constant of dt.
func scalar(b *ir.Builder, dt ir.DType, v float64) *ir.Value { return ops.Full(b, dt, v) }

// convPow: the result has the base's type. ONNX lets the exponent have
// another type, and integer bases; gopir's pow takes one float dtype, so
// integer powers are computed in f64 and truncated back, which is exact
// while the results stay below 2^53.
func convPow(n *node) ([]*value, error) {
	x, y := n.In(0), n.In(1)
	dt := x.Type().DType
	if dt.IsFloat() {
		return out(ops.Pow(n.b, x, ops.Cast(n.b, y, dt))), nil
	}
	if !dt.IsInt() {
		return nil, n.unsupported("a base of type %s", x.Type())
	}
	p := ops.Pow(n.b, ops.Cast(n.b, x, ir.F64), ops.Cast(n.b, y, ir.F64))
	return out(ops.Cast(n.b, p, dt)), nil
}

func convReciprocal(n *node) ([]*value, error) {
	x := n.In(0)
	return out(ops.Divide(n.b, scalar(n.b, x.Type().DType, 1), x)), nil
}

// convVariadic: Max, Min, Sum and Mean fold their inputs pairwise (with
// broadcasting); Mean divides the sum by the count.
func convVariadic(n *node) ([]*value, error) {
	f := map[string]func(*ir.Builder, *ir.Value, *ir.Value) *ir.Value{
		"Max": ops.Maximum, "Min": ops.Minimum, "Sum": ops.Add, "Mean": ops.Add,
	}[n.p.GetOpType()]
	ins := n.Ins()
	if len(ins) == 0 {
		n.fail("needs at least one input")
		return nil, nil
	}
	acc := ins[0]
	for _, x := range ins[1:] {
		acc = f(n.b, acc, x)
	}
	if n.p.GetOpType() == "Mean" && len(ins) > 1 {
		acc = ops.Divide(n.b, acc, scalar(n.b, acc.Type().DType, float64(len(ins))))
	} else if len(ins) == 1 {
		acc = ops.Assign(n.b, acc)
	}
	return out(acc), nil
}

// convClip: bounds are attributes before opset 11 and optional scalar
// inputs from 11 on; an absent bound does not clip.
func convClip(n *node) ([]*value, error) {
	x := n.In(0)
	if n.Opset() < 11 {
		lo, hi := n.Float("min", -3.4028234663852886e+38), n.Float("max", 3.4028234663852886e+38)
		return out(ops.Clip(n.b, x, lo, hi)), nil
	}
	y := x
	if n.Has(1) {
		y = ops.Maximum(n.b, y, n.In(1))
	}
	if n.Has(2) {
		y = ops.Minimum(n.b, y, n.In(2))
	}
	if y == x {
		y = ops.Assign(n.b, x)
	}
	return out(y), nil
}

func convWhere(n *node) ([]*value, error) {
	return out(ops.Where(n.b, n.In(0), n.In(1), n.In(2))), nil
}

func convCast(n *node) ([]*value, error) {
	to := n.Int("to", 0)
	dt, err := dtypeOf(to)
	if err != nil {
		return nil, err
	}
	n.Int("saturate", 1) // only meaningful for float8 types, which gopir lacks
	return out(ops.Cast(n.b, n.In(0), dt)), nil
}

func convCastLike(n *node) ([]*value, error) {
	return out(ops.Cast(n.b, n.In(0), n.Type(1).DType)), nil
}

// dtypeOf maps an ONNX element type code to a gopir dtype.
func dtypeOf(code int64) (ir.DType, error) {
	et, err := lookupType(int32(code))
	if err != nil {
		return ir.InvalidDType, err
	}
	return ir.DType(et.dtype), nil
}

// convLeakyRelu: x where x ≥ 0, alpha·x elsewhere.
func convLeakyRelu(n *node) ([]*value, error) {
	x := n.In(0)
	alpha := n.Float("alpha", 0.01)
	dt := x.Type().DType
	neg := ops.Multiply(n.b, x, scalar(n.b, dt, alpha))
	return out(ops.Where(n.b, ops.GreaterEqual(n.b, x, scalar(n.b, dt, 0)), x, neg)), nil
}

// convElu covers Elu (alpha·(eˣ−1) below 0), Selu (gamma·Elu with its
// alpha) and Celu (alpha·(e^(x/alpha)−1) below 0).
func convElu(n *node) ([]*value, error) {
	x := n.In(0)
	dt := x.Type().DType
	b := n.b
	var alpha, gamma, inner float64 = 1, 1, 1
	switch n.p.GetOpType() {
	case "Elu":
		alpha = n.Float("alpha", 1)
	case "Selu":
		alpha = n.Float("alpha", 1.67326319217681884765625)
		gamma = n.Float("gamma", 1.05070102214813232421875)
	case "Celu":
		alpha = n.Float("alpha", 1)
		inner = 1 / alpha
	}
	xi := x
	if inner != 1 {
		xi = ops.Multiply(b, x, scalar(b, dt, inner))
	}
	neg := ops.Multiply(b, ops.Subtract(b, ops.Exp(b, xi), scalar(b, dt, 1)), scalar(b, dt, alpha))
	y := ops.Where(b, ops.GreaterThan(b, x, scalar(b, dt, 0)), x, neg)
	if gamma != 1 {
		y = ops.Multiply(b, y, scalar(b, dt, gamma))
	}
	return out(y), nil
}

// convHardSigmoid: max(0, min(1, alpha·x + beta)); HardSwish is
// x·HardSigmoid(x) with alpha 1/6 and beta 1/2.
func convHardSigmoid(n *node) ([]*value, error) {
	x := n.In(0)
	dt := x.Type().DType
	alpha, beta := 1.0/6, 0.5
	if n.p.GetOpType() == "HardSigmoid" {
		alpha, beta = n.Float("alpha", 0.2), n.Float("beta", 0.5)
	}
	hs := ops.Clip(n.b, ops.Add(n.b, ops.Multiply(n.b, x, scalar(n.b, dt, alpha)), scalar(n.b, dt, beta)), 0, 1)
	if n.p.GetOpType() == "HardSwish" {
		hs = ops.Multiply(n.b, x, hs)
	}
	return out(hs), nil
}

func convSoftsign(n *node) ([]*value, error) {
	x := n.In(0)
	dt := x.Type().DType
	return out(ops.Divide(n.b, x, ops.Add(n.b, ops.Abs(n.b, x), scalar(n.b, dt, 1)))), nil
}

// convPRelu: x where x ≥ 0, slope·x elsewhere (slope broadcasts).
func convPRelu(n *node) ([]*value, error) {
	x, slope := n.In(0), n.In(1)
	xt, st := x.Type(), slope.Type()
	if n.Opset() < 7 && st.Rank() == 1 && xt.Rank() > 2 {
		// Before opset 7 a 1-D slope ran along the channel axis.
		shape := make([]int, xt.Rank()-1)
		for i := range shape {
			shape[i] = 1
		}
		shape[0] = -1
		slope = ops.Reshape(n.b, slope, shape...)
	}
	dt := x.Type().DType
	return out(ops.Where(n.b, ops.GreaterEqual(n.b, x, scalar(n.b, dt, 0)), x, ops.Multiply(n.b, x, slope))), nil
}

func convThresholdedRelu(n *node) ([]*value, error) {
	x := n.In(0)
	dt := x.Type().DType
	alpha := n.Float("alpha", 1)
	return out(ops.Where(n.b, ops.GreaterThan(n.b, x, scalar(n.b, dt, alpha)), x, scalar(n.b, dt, 0))), nil
}

func convGelu(n *node) ([]*value, error) {
	approx := n.String("approximate", "none")
	if approx != "none" && approx != "tanh" {
		return nil, n.unsupported("approximate=%q", approx)
	}
	return out(ops.Gelu(n.b, n.In(0), approx == "tanh")), nil
}
