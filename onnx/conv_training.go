package onnx

import (
	"fmt"
	"strings"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// The training operators of ONNX's preview domain. Gradient asks for the
// gradient of a scalar y with respect to the values xs: gopir's own
// reverse mode appends it (through if and while too).

// trainingDomain is the domain of ONNX's training operators.
const trainingDomain = "ai.onnx.preview.training"

func init() {
	registerNoFold(convGradient, trainingDomain+".Gradient")
	register(convOptimizer, trainingDomain+".Adam", trainingDomain+".Adagrad", trainingDomain+".Momentum")
}

func convGradient(n *node) ([]*value, error) {
	if n.s.parent != nil {
		return nil, n.unsupported("a Gradient inside a subgraph")
	}
	xsNames, yName := n.Strings("xs"), n.String("y", "")
	if len(n.Strings("zs")) > 0 {
		return nil, n.unsupported("zs")
	}
	y, ok := n.s.lookup(yName)
	if !ok {
		return nil, fmt.Errorf("y %q is not defined before the Gradient", yName)
	}
	var xs []*ir.Value
	for _, name := range xsNames {
		x, ok := n.s.lookup(name)
		if !ok {
			return nil, fmt.Errorf("x %q is not defined before the Gradient", name)
		}
		xs = append(xs, n.s.use(x))
	}
	grads, err := autodiff.Backward(n.b, n.s.use(y), xs)
	if err != nil {
		return nil, err
	}
	return out(grads...), nil
}

// The optimizers of the preview training domain (Adam, Adagrad, Momentum)
// are functional: one node updates one or more tensors X_i from their
// gradients G_i and states, and returns the new values and states (X_i
// new, then each state's new values). They are composed of elementwise
// ops, following the pseudo code of ONNX's operator documentation with
// numpy broadcasting, in X's dtype (the learning rate R is cast to it):
//
//	G' = norm_coefficient·X + G
//	Adam      V' = α·V + (1 − α)·G'; H' = β·H + (1 − β)·G'²
//	          R' = T > 0 ? R·√(1 − β^T)/(1 − α^T) : R
//	          X' = (1 − norm_coefficient_post)·(X − R'·V'/(√H' + ε))
//	Adagrad   H' = H + G'²; X' = X − R/(1 + T·decay_factor)·G'/(√H' + ε)
//	Momentum  V' = α·V + (T > 0 ? β : 1)·G'
//	          X' = X − R·V' (standard) or X − R·(G' + α·V') (nesterov)
//
// Adam without an epsilon attribute is refused: ONNX's schema gives it
// the default 1e-6, but ONNX's own test of that case (test_adam_multiple)
// expects 1e-2, so the default is not something gopir can rely on.

// optimizerState lists, per optimizer, the names of the tensors of each
// group of inputs after R and T: the optimized tensors first.
var optimizerState = map[string][]string{
	"Adam":     {"X", "G", "V", "H"},
	"Adagrad":  {"X", "G", "H"},
	"Momentum": {"X", "G", "V"},
}

func convOptimizer(n *node) ([]*value, error) {
	kind := strings.TrimPrefix(n.p.GetOpType(), trainingDomain+".")
	names := optimizerState[kind]
	groups := (n.NumIn() - 2) / len(names)
	if n.NumIn() < 2+len(names) || (n.NumIn()-2)%len(names) != 0 {
		n.fail("%s takes R, T and %d tensors per optimized tensor (%s), got %d inputs", kind, len(names), strings.Join(names, ", "), n.NumIn())
		return nil, nil
	}
	for i := range n.NumIn() {
		if !n.Has(i) {
			n.fail("input %d is missing", i)
			return nil, nil
		}
	}
	rt, tt := n.Type(0), n.Type(1)
	if rt.IsStack() || !rt.DType.IsFloat() || rt.IsStatic() && rt.NumElements() != 1 {
		n.fail("R is %s, want a float scalar", rt)
	}
	if tt.IsStack() || tt.DType != ir.I64 || tt.IsStatic() && tt.NumElements() != 1 {
		n.fail("T is %s, want an i64 scalar", tt)
	}
	dt := n.Type(2).DType
	for i := 2; i < n.NumIn(); i++ {
		if t := n.Type(i); t.IsStack() || t.DType != dt || !dt.IsFloat() {
			n.fail("input %d is %s, want a float tensor of one dtype with the others", i, t)
		}
	}
	norm := n.Float("norm_coefficient", 0)
	var alpha, beta, eps, post, decay float64
	var nesterov bool
	switch kind {
	case "Adam":
		alpha, beta = n.Float("alpha", 0.9), n.Float("beta", 0.999)
		post = n.Float("norm_coefficient_post", 0)
		if !n.HasAttr("epsilon") {
			return nil, n.unsupported("Adam without an epsilon attribute (ONNX's schema defaults it to 1e-6, its backend test test_adam_multiple to 1e-2)")
		}
		eps = n.Float("epsilon", 0)
	case "Adagrad":
		eps, decay = n.Float("epsilon", 1e-6), n.Float("decay_factor", 0)
	case "Momentum":
		for _, a := range []string{"alpha", "beta", "mode", "norm_coefficient"} {
			if !n.HasAttr(a) {
				n.fail("Momentum needs attribute %s", a)
			}
		}
		alpha, beta = n.Float("alpha", 0), n.Float("beta", 0)
		switch mode := n.String("mode", ""); mode {
		case "standard":
		case "nesterov":
			nesterov = true
		default:
			n.fail("mode %q is not standard or nesterov", mode)
		}
	}
	if n.err != nil {
		return nil, nil
	}
	b := n.b
	c := func(v float64) *ir.Value { return ops.Full(b, dt, v) }
	r := scalarOf(b, n.In(0))
	if r.Type().DType != dt {
		r = ops.Cast(b, r, dt)
	}
	t := scalarOf(b, n.In(1))
	tf := ops.Cast(b, t, dt)
	first := ops.LessEqual(b, t, ops.Full(b, ir.I64, 0)) // T > 0 is false
	switch kind {
	case "Adam":
		bias := ops.Divide(b, ops.Sqrt(b, ops.Subtract(b, c(1), ops.Pow(b, c(beta), tf))), ops.Subtract(b, c(1), ops.Pow(b, c(alpha), tf)))
		r = ops.Where(b, first, r, ops.Multiply(b, r, bias))
	case "Adagrad":
		r = ops.Divide(b, r, ops.Add(b, c(1), ops.Multiply(b, tf, c(decay))))
	}
	in := func(k, i int) *ir.Value { return n.In(2 + k*groups + i) }
	outs := make([]*ir.Value, (len(names)-1)*groups)
	for i := range groups {
		x, g := in(0, i), in(1, i)
		greg := ops.Add(b, ops.Multiply(b, c(norm), x), g)
		switch kind {
		case "Adam":
			v := ops.Add(b, ops.Multiply(b, c(alpha), in(2, i)), ops.Multiply(b, c(1-alpha), greg))
			h := ops.Add(b, ops.Multiply(b, c(beta), in(3, i)), ops.Multiply(b, c(1-beta), ops.Multiply(b, greg, greg)))
			step := ops.Divide(b, ops.Multiply(b, r, v), ops.Add(b, ops.Sqrt(b, h), c(eps)))
			outs[i] = ops.Multiply(b, c(1-post), ops.Subtract(b, x, step))
			outs[groups+i], outs[2*groups+i] = v, h
		case "Adagrad":
			h := ops.Add(b, in(2, i), ops.Multiply(b, greg, greg))
			step := ops.Divide(b, ops.Multiply(b, r, greg), ops.Add(b, ops.Sqrt(b, h), c(eps)))
			outs[i], outs[groups+i] = ops.Subtract(b, x, step), h
		case "Momentum":
			badj := ops.Where(b, first, c(1), c(beta))
			v := ops.Add(b, ops.Multiply(b, c(alpha), in(2, i)), ops.Multiply(b, badj, greg))
			dir := v
			if nesterov {
				dir = ops.Add(b, greg, ops.Multiply(b, c(alpha), v))
			}
			outs[i], outs[groups+i] = ops.Subtract(b, x, ops.Multiply(b, r, dir)), v
		}
	}
	return out(outs...), nil
}
