package optimize

import "github.com/gopir/gopir/ir"

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
		values, err := swapOp(q, op, "max_pool2d_values")
		if err != nil {
			return 0, err
		}
		if made != nil {
			made(values, []*ir.Op{op})
		}
	}
	return len(found), nil
}
