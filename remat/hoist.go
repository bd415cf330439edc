package remat

import "github.com/gopir/gopir/ir"

// hoistConstants copies the scalar constants of loop body body (its
// "full" ops without operands) to the top level, ahead of the loop
// about to be built, and returns them so that the body's copy skips
// them. Interpreting a 0-d "full" costs as much as a small kernel, and
// a checkpointed loop runs its bodies once more; made once, a scalar
// stays live across the loop for a few bytes.
func (r *rewriter) hoistConstants(body *ir.Block) map[*ir.Op]bool {
	hoisted := map[*ir.Op]bool{}
	for _, op := range body.Ops() {
		if op.Name() != "full" || op.NumOperands() != 0 || len(op.Results()) != 1 {
			continue
		}
		if t := op.Result(0).Type(); t.IsStack() || !t.IsStatic() || t.Rank() != 0 {
			continue
		}
		r.copyOp(r.top, op)
		hoisted[op] = true
	}
	return hoisted
}
