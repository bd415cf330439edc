package optimize

import "github.com/gopir/gopir/ir"

// sameShape reports whether a and b are sure to have the same shape at run
// time: the same type, and each dim the type leaves dynamic traced to the
// same origin (dimOrigin). FuseEpilogue fuses a residual add only then,
// because the fused op adds without broadcasting.
func sameShape(a, b *ir.Value) bool {
	at, bt := a.Type(), b.Type()
	if !at.Equal(bt) || at.IsStack() || at.Unranked {
		return false
	}
	for i, d := range at.Dims {
		if d != ir.Dynamic {
			continue
		}
		va, ia := dimOrigin(a, i)
		vb, ib := dimOrigin(b, i)
		if va != vb || ia != ib {
			return false
		}
	}
	return true
}

// sameDimOps are ops whose result has the shape of operand 0.
var sameDimOps = map[string]bool{
	"relu": true, "sigmoid": true, "tanh": true, "silu": true, "gelu": true, "clip": true, "exp": true,
	"log": true, "sqrt": true, "rsqrt": true, "abs": true, "neg": true, "square": true, "softplus": true,
	"cast": true, "assign": true, "stop_gradient": true, "scale": true, "batch_norm": true,
	"layer_norm": true, "dropout": true, "softmax": true, "log_softmax": true,
}

// batchOps are ops whose result's dim 0 is operand 0's dim 0.
var batchOps = map[string]bool{
	"conv2d": true, "conv2d_fused": true, "max_pool2d": true, "max_pool2d_values": true, "avg_pool2d": true,
}

// dimOrigin follows dim i of v back through ops that pass it on
// unchanged, and returns the value and dim where it starts: the dims of
// two values with the same origin are equal in every run.
func dimOrigin(v *ir.Value, i int) (*ir.Value, int) {
	for {
		op := v.Def()
		if op == nil {
			return v, i
		}
		name := op.Name()
		switch {
		case sameDimOps[name] && v.Index() == 0 && op.NumOperands() > 0 && op.Operand(0).Type().Rank() == v.Type().Rank():
			v = op.Operand(0)
		case batchOps[name] && v.Index() == 0 && i == 0:
			v = op.Operand(0)
		case isBinaryElementwise(name) && op.NumOperands() == 2:
			next, j, ok := broadcastSource(op, i)
			if !ok {
				return v, i
			}
			v, i = next, j
		default:
			return v, i
		}
	}
}

func isBinaryElementwise(name string) bool {
	switch name {
	case "add", "subtract", "multiply", "divide", "maximum", "minimum":
		return true
	}
	return false
}

// broadcastSource returns the operand (and its dim) that gives dim i of
// the binary op's result: the only one whose aligned dim is dynamic,
// when the other's is absent or a static 1.
func broadcastSource(op *ir.Op, i int) (*ir.Value, int, bool) {
	out := op.Result(0).Type()
	var src *ir.Value
	dim := 0
	for _, x := range op.Operands() {
		t := x.Type()
		j := i - (out.Rank() - t.Rank())
		switch {
		case j < 0 || t.Dims[j] == 1:
		case t.Dims[j] == ir.Dynamic && src == nil:
			src, dim = x, j
		default:
			return nil, 0, false
		}
	}
	return src, dim, src != nil
}
