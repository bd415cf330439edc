package optimize

import "github.com/gopir/gopir/ir"

// Helpers the passes share to read and edit the copy they rewrite.

// soleUser returns the op that uses v and which operand v is there, when
// v has exactly one use.
func soleUser(v *ir.Value) (*ir.Op, int, bool) {
	uses := v.Uses()
	if len(uses) != 1 {
		return nil, 0, false
	}
	return uses[0].Op, uses[0].Index, true
}

// other is the operand of the two-operand op that is not operand i.
func other(op *ir.Op, i int) *ir.Value { return op.Operand(1 - i) }

// isView reports whether op's result is a view of its operand (same
// elements, another shape): reshape and its kin.
func isView(op *ir.Op) bool {
	switch op.Name() {
	case "reshape", "flatten", "squeeze", "unsqueeze":
		return op.NumOperands() == 1 && op.NumResults() == 1
	}
	return false
}

// droppable reports whether op may be erased once nothing uses its
// results: it reads a parameter or a constant, or views such a value, and
// cannot fail on its own.
func droppable(op *ir.Op) bool {
	if len(op.Regions()) > 0 || op.NumResults() == 0 {
		return false
	}
	for _, r := range op.Results() {
		if len(r.Uses()) > 0 {
			return false
		}
	}
	switch op.Name() {
	case "parameter", "constant", "full":
		return true
	}
	return isView(op)
}

// erase removes ops (each unused once the ones before it are gone), then
// every op that fed them and is now droppable (see dropDead). It returns
// the first error, which means a pass tried to erase an op still in use:
// a bug in the pass.
func erase(ops ...*ir.Op) error {
	var feeders []*ir.Op
	for _, op := range ops {
		feeders = appendDefs(feeders, op)
		if err := op.Erase(); err != nil {
			return err
		}
	}
	return dropDead(feeders...)
}

// dropDead erases those of ops that are droppable and, transitively, the
// droppable ops that fed only them.
func dropDead(ops ...*ir.Op) error {
	for len(ops) > 0 {
		op := ops[len(ops)-1]
		ops = ops[:len(ops)-1]
		if op == nil || op.Block() == nil || op.Block().IndexOf(op) < 0 || !droppable(op) {
			continue
		}
		ops = appendDefs(ops, op)
		if err := op.Erase(); err != nil {
			return err
		}
	}
	return nil
}

// appendDefs appends the ops that define op's operands.
func appendDefs(defs []*ir.Op, op *ir.Op) []*ir.Op {
	for _, v := range op.Operands() {
		if d := v.Def(); d != nil {
			defs = append(defs, d)
		}
	}
	return defs
}

// builderBefore returns a builder that inserts before op, giving new ops
// op's position.
func builderBefore(p *ir.Program, op *ir.Op) *ir.Builder {
	b := ir.NewBuilder(p)
	b.SetInsertionPointBefore(op)
	b.SetPos(op.Pos)
	return b
}

// paramNames is the set of names of p's parameter ops.
func paramNames(p *ir.Program) map[string]bool {
	names := map[string]bool{}
	p.Walk(func(op *ir.Op) bool {
		if op.Name() == "parameter" {
			if n, err := op.Attrs.Str("name"); err == nil {
				names[n] = true
			}
		}
		return true
	})
	return names
}

// isFloat reports whether t is an f32 or f64 tensor type.
func isFloat(t ir.Type) bool {
	return !t.IsStack() && !t.Unranked && (t.DType == ir.F32 || t.DType == ir.F64)
}
