package optimize

import (
	"fmt"

	"github.com/gopir/gopir/ir"
)

// swapOp puts an op named name, with op's attributes and operands, where
// op is, gives its result to every reader of op's first result, and
// erases op (whose other results nothing may read). The new op's result
// must have the type of op's first result. It returns the new op.
func swapOp(q *ir.Program, op *ir.Op, name string) (*ir.Op, error) {
	return replaceOp(q, op, name, op.Attrs)
}

// replaceOp is swapOp with the new op's attributes given.
func replaceOp(q *ir.Program, op *ir.Op, name string, attrs ir.Attrs) (*ir.Op, error) {
	b := ir.NewBuilder(q)
	b.SetInsertionPoint(op.Block(), op.Block().IndexOf(op)+1)
	b.SetPos(op.Pos)
	y := b.Op1(name, attrs, op.Operands()...)
	if err := b.Err(); err != nil {
		return nil, fmt.Errorf("optimize: %s at %s: %w", op.Name(), op.Pos, err)
	}
	if want := op.Result(0).Type(); !y.Type().Equal(want) {
		return nil, fmt.Errorf("optimize: %s at %s: %s has type %s, not %s", op.Name(), op.Pos, name, y.Type(), want)
	}
	op.Result(0).ReplaceAllUsesWith(y)
	if err := erase(op); err != nil {
		return nil, err
	}
	return y.Def(), nil
}

// swapF32 puts an op named to in place of each op named from whose one
// operand is f32 (the float32 forms of softmax and sigmoid), anywhere in
// the program, and returns the new program and how many it replaced.
func swapF32(p *ir.Program, from, to string) (*ir.Program, int, error) {
	q := clone(p)
	var found []*ir.Op
	q.Walk(func(op *ir.Op) bool {
		if op.Name() == from && op.NumOperands() == 1 && op.Operand(0).Type().DType == ir.F32 {
			found = append(found, op)
		}
		return true
	})
	for _, op := range found {
		if _, err := swapOp(q, op, to); err != nil {
			return nil, 0, err
		}
	}
	return q, len(found), nil
}
