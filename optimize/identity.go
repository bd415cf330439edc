package optimize

import (
	"github.com/gopir/gopir/ir"
)

// RemoveIdentities makes the uses of each op that returns its operand
// unchanged use the operand instead, and erases the op: reshape, flatten,
// squeeze and unsqueeze to the operand's own type (with at most one dim
// left dynamic, which the element count then fixes), expand to its own
// static type; transpose by the identity permutation; cast to the operand's dtype; assign;
// stop_gradient; dropout in evaluation mode whose mask is unused; x+0,
// 0+x, x−0, x·1, 1·x, x/1 and scale by 1 plus 0, where the 0 or 1 is a
// constant or full of x's dtype that does not broadcast x. The values are
// the same bits, except that x+0 and scale turn −0 into +0 and the
// removal keeps −0. It returns the new program and how many ops it
// removed.
func RemoveIdentities(p *ir.Program) (*ir.Program, int, error) {
	q := clone(p)
	var found []*ir.Op
	q.Walk(func(op *ir.Op) bool {
		if identityOperand(op) >= 0 {
			found = append(found, op)
		}
		return true
	})
	for _, op := range found {
		op.Result(0).ReplaceAllUsesWith(op.Operand(identityOperand(op)))
		if err := erase(op); err != nil {
			return nil, 0, err
		}
	}
	return q, len(found), nil
}

// identityOperand returns the operand op's first result always equals, or
// −1; op's other results, if any, must be unused.
func identityOperand(op *ir.Op) int {
	if len(op.Regions()) > 0 || op.NumResults() == 0 || op.NumOperands() == 0 {
		return -1
	}
	for _, r := range op.Results()[1:] {
		if len(r.Uses()) > 0 {
			return -1
		}
	}
	x := op.Operand(0)
	same := op.NumResults() >= 1 && op.Result(0).Type().Equal(x.Type())
	if !same {
		return -1
	}
	switch op.Name() {
	case "assign", "stop_gradient", "cast":
		return 0
	case "reshape", "flatten", "squeeze", "unsqueeze":
		if op.NumOperands() == 1 && sizeFixed(x.Type()) {
			return 0
		}
	case "expand":
		if op.NumOperands() == 1 && x.Type().IsStatic() {
			return 0
		}
	case "transpose":
		perm, err := op.Attrs.Ints("perm")
		if err != nil {
			return -1
		}
		for i, a := range perm {
			if a != i && a+len(perm) != i {
				return -1
			}
		}
		return 0
	case "dropout":
		if training, err := boolAttrDefault(op.Attrs, "training", true); err == nil && !training {
			return 0
		}
	case "scale":
		s, err1 := floatAttr(op.Attrs, "scale", 1)
		b, err2 := floatAttr(op.Attrs, "bias", 0)
		if err1 == nil && err2 == nil && s == 1 && b == 0 {
			return 0
		}
	case "add", "subtract", "multiply", "divide":
		return neutralOperand(op)
	}
	return -1
}

// neutralOperand returns, for a binary arithmetic op whose result has the
// type of one operand, that operand when the other is the op's neutral
// element in every position (0 for add and subtract's right, 1 for
// multiply and divide's right), or −1.
func neutralOperand(op *ir.Op) int {
	if op.NumOperands() != 2 {
		return -1
	}
	out := op.Result(0).Type()
	for i := range 2 {
		x, k := op.Operand(i), op.Operand(1-i)
		if !x.Type().Equal(out) || k.Type().DType != out.DType {
			continue
		}
		var neutral float64
		switch {
		case op.Name() == "add":
		case op.Name() == "subtract" && i == 0:
		case op.Name() == "multiply":
			neutral = 1
		case op.Name() == "divide" && i == 0:
			neutral = 1
		default:
			continue
		}
		if allEqual(k, neutral) {
			return i
		}
	}
	return -1
}

// allEqual reports whether every element of v, a constant or a full (or
// a view of one), is want.
func allEqual(v *ir.Value, want float64) bool {
	if !isFloat(v.Type()) && !v.Type().DType.IsInt() {
		return false
	}
	for d := v.Def(); d != nil && isView(d); d = v.Def() {
		v = d.Operand(0)
	}
	d := v.Def()
	if d == nil {
		return false
	}
	switch d.Name() {
	case "constant":
		dense, err := d.Attrs.Dense("value")
		if err != nil {
			return false
		}
		for i := range dense.Len() {
			if dense.Float64At(i) != want {
				return false
			}
		}
		return true
	case "full":
		f, err := d.Attrs.Float("value")
		return err == nil && f == want
	}
	return false
}

// sizeFixed reports whether a view to t of a value of type t must keep
// its shape: t is static, or has one dynamic dim and a nonzero product of
// the others, so that the element count fixes that dim.
func sizeFixed(t ir.Type) bool {
	dynamic, prod := 0, 1
	for _, d := range t.Dims {
		if d == ir.Dynamic {
			dynamic++
		} else {
			prod *= d
		}
	}
	return dynamic == 0 || dynamic == 1 && prod != 0
}
