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
		switch op.Name() {
		case "if":
			for _, r := range op.Regions() {
				if depBlock(r.Block(), dep) {
					changed = true
				}
				for j, y := range r.Block().Terminator().Operands() {
					if dep[y] && j < op.NumResults() {
						mark(op.Result(j))
					}
				}
			}
		case "while":
			body := op.Region(0).Block()
			for i, a := range body.Args() {
				if i+1 < op.NumOperands() && dep[op.Operand(i+1)] {
					mark(a)
				}
			}
			for {
				inner := depBlock(body, dep)
				grew := false
				for i, y := range body.Terminator().Operands()[1:] {
					if i < len(body.Args()) && dep[y] && !dep[body.Args()[i]] {
						mark(body.Args()[i])
						grew = true
					}
				}
				changed = changed || inner || grew
				if !grew {
					break
				}
			}
			for i, a := range body.Args() {
				if dep[a] && i < op.NumResults() {
					mark(op.Result(i))
				}
			}
		default:
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
	}
	return changed
}
