package autodiff

import (
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// dependents returns the float values of p that depend on a value of wrt:
// the only ones a gradient can reach. It looks through if branches and
// iterates while bodies to a fixed point; ops marked NoGrad cut the chain.
func dependents(p *ir.Program, wrt []*ir.Value) map[*ir.Value]bool {
	dep := map[*ir.Value]bool{}
	for _, w := range wrt {
		dep[w] = true
	}
	depBlock(p.Body(), dep)
	return dep
}

// depBlock marks the dependents in b and reports whether it marked any.
func depBlock(b *ir.Block, dep map[*ir.Value]bool) bool {
	changed := false
	mark := func(v *ir.Value) {
		if !dep[v] && differentiable(v.Type()) {
			dep[v] = true
			changed = true
		}
	}
	for _, op := range b.Ops() {
		if r, ok := regionRules[op.Name()]; ok {
			if r.deps(op, dep, mark) {
				changed = true
			}
			continue
		}
		if def, ok := ops.Lookup(op.Name()); ok && def.NoGrad {
			continue
		}
		for _, x := range op.Operands() {
			if dep[x] {
				for _, r := range op.Results() {
					mark(r)
				}
				break
			}
		}
	}
	return changed
}

// A regionRule differentiates one kind of op with regions; the op's file
// registers it (if.go, while.go).
type regionRule struct {
	// deps marks, with mark, the values of op (its results, its regions'
	// block arguments and inner values) that depend on marked values, and
	// reports whether it marked any.
	deps func(op *ir.Op, dep map[*ir.Value]bool, mark func(*ir.Value)) bool
	// backward appends the backward of op to s, given the gradients of its
	// results (nil where none flows).
	backward func(s *scope, op *ir.Op, dys []*ir.Value) error
}

var regionRules = map[string]regionRule{}
