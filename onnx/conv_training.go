package onnx

import (
	"fmt"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/ir"
)

// The Gradient op of ONNX's preview training domain asks for the gradient
// of a scalar y with respect to the values xs: gopir's own reverse mode
// appends it (through if and while too).

func init() {
	registerNoFold(convGradient, "ai.onnx.preview.training.Gradient")
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
