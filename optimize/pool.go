package optimize

import (
	"fmt"

	"github.com/gopir/gopir/ir"
)

// DropPoolIndices replaces each max_pool2d whose indices (its second
// result) nothing reads by max_pool2d_values, which gives the same maxima
// bit for bit without writing the indices: at inference nothing reads
// them, and they were half the op's output bytes and most of its time. It
// returns the new program and how many ops it replaced.
func DropPoolIndices(p *ir.Program) (*ir.Program, int, error) {
	q := clone(p)
	n, err := dropPoolIndices(q, everyOp, nil)
	if err != nil {
		return nil, 0, err
	}
	return q, n, nil
}

// dropPoolIndices is DropPoolIndices on q itself, for the pools that pass
// only; made, when not nil, hears of each new op and the pool it replaces.
func dropPoolIndices(q *ir.Program, only func(*ir.Op) bool, made func(*ir.Op, []*ir.Op)) (int, error) {
	var found []*ir.Op
	q.Walk(func(op *ir.Op) bool {
		if op.Name() == "max_pool2d" && op.NumOperands() == 1 && op.NumResults() == 2 && len(op.Result(1).Uses()) == 0 && only(op) {
			found = append(found, op)
		}
		return true
	})
	for _, op := range found {
		b := ir.NewBuilder(q)
		b.SetInsertionPoint(op.Block(), op.Block().IndexOf(op)+1)
		b.SetPos(op.Pos)
		y := b.Op1("max_pool2d_values", op.Attrs, op.Operand(0))
		if err := b.Err(); err != nil {
			return 0, fmt.Errorf("optimize: max_pool2d at %s: %w", op.Pos, err)
		}
		if want := op.Result(0).Type(); !y.Type().Equal(want) {
			return 0, fmt.Errorf("optimize: max_pool2d at %s: max_pool2d_values has type %s, not %s", op.Pos, y.Type(), want)
		}
		op.Result(0).ReplaceAllUsesWith(y)
		if err := erase(op); err != nil {
			return 0, err
		}
		if made != nil {
			made(y.Def(), []*ir.Op{op})
		}
	}
	return len(found), nil
}
