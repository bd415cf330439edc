package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
)

// VJP builds the vector-Jacobian product of one op: given the gradients of
// its results, it appends ops that compute the gradients of its operands
// and returns them (nil where an operand needs none). Each gradient has
// exactly its operand's shape: a rule for a broadcasting op reduces with
// ReduceSumTo.
type VJP func(g *GradContext) ([]*ir.Value, error)

// GradContext is what a VJP rule works with. The forward op's operands and
// results must be read through X and Y, never from Op directly: inside the
// backward of an if or while region they stand for values kept from the
// forward pass (residuals), which X and Y fetch on demand, so a rule only
// keeps alive what it actually uses.
type GradContext struct {
	B  *ir.Builder
	Op *ir.Op
	// DY holds the gradient of each result; nil where none flows.
	DY []*ir.Value

	need    []bool
	resolve func(*ir.Value) *ir.Value
}

// NewGradContext is used by package autodiff: need says which operand
// gradients are wanted, resolve maps a forward value to one usable where
// b inserts.
func NewGradContext(b *ir.Builder, op *ir.Op, dy []*ir.Value, need []bool, resolve func(*ir.Value) *ir.Value) *GradContext {
	return &GradContext{B: b, Op: op, DY: dy, need: need, resolve: resolve}
}

// X returns operand i as usable in the backward.
func (g *GradContext) X(i int) *ir.Value { return g.resolve(g.Op.Operand(i)) }

// Y returns result i as usable in the backward.
func (g *GradContext) Y(i int) *ir.Value { return g.resolve(g.Op.Result(i)) }

// Need reports whether the gradient of operand i is wanted.
func (g *GradContext) Need(i int) bool { return i < len(g.need) && g.need[i] }

// DYOrZero returns the gradient of result i, or zeros shaped like the
// result when none flows.
func (g *GradContext) DYOrZero(i int) *ir.Value {
	if g.DY[i] != nil {
		return g.DY[i]
	}
	return FullLike(g.B, g.Y(i), 0, ir.InvalidDType)
}

// Unbroadcast returns dy reduced to the shape of operand i, for ops that
// broadcast their operands. A static operand shape costs nothing to keep;
// when the types show that operand i cannot have been stretched, dy is
// already its shape; otherwise the shape is read from the operand at run
// time.
func (g *GradContext) Unbroadcast(dy *ir.Value, i int) *ir.Value {
	t := g.Op.Operand(i).Type()
	if t.IsStatic() {
		if dy.Type().Equal(t) {
			return dy
		}
		return g.B.Op1("reduce_sum_to", ir.A("shape", t.Dims), dy)
	}
	if !mayBroadcast(g.Op, i) {
		return dy
	}
	return g.B.Op1("reduce_sum_to", nil, dy, g.X(i))
}

// mayBroadcast reports whether broadcasting can have stretched operand i
// of op into its result 0: the result has more dims, or on some dim the
// operand may be 1 (it is 1 or dynamic) while the result may not. When
// both are dynamic, only another operand that may be larger there can
// have stretched it.
func mayBroadcast(op *ir.Op, i int) bool {
	t, r := op.Operand(i).Type(), op.Result(0).Type()
	if r.Rank() != t.Rank() {
		return true
	}
	for k, td := range t.Dims {
		rd := r.Dims[k]
		switch {
		case td == rd && td != ir.Dynamic, td > 1:
		case td == 1:
			if rd != 1 {
				return true
			}
		case rd == 1:
		case rd != ir.Dynamic:
			return true
		default:
			if op.NumOperands() < 2 {
				return true
			}
			for j, o := range op.Operands() {
				u := o.Type()
				if kk := k - (t.Rank() - u.Rank()); j != i && kk >= 0 && u.Dims[kk] != 1 {
					return true
				}
			}
		}
	}
	return false
}

// noSecondOrder is the rule of backward helper ops (conv2d_grad_input and
// the like): differentiating a gradient is not supported yet, and saying so
// beats returning zeros.
func noSecondOrder(g *GradContext) ([]*ir.Value, error) {
	return nil, fmt.Errorf("second derivatives through %q are not implemented", g.Op.Name())
}
