package ir

import "fmt"

// Op is an operation: a name, operands, results, attributes and regions.
type Op struct {
	name     string
	operands []*Value
	results  []*Value
	regions  []*Region
	block    *Block

	// Attrs holds the op's attributes. Change it only before the program is
	// compiled.
	Attrs Attrs
	// Pos is where the op came from: a text position, or the Go caller that
	// built it.
	Pos Pos
}

// Name is the op's name, e.g. "add" or "if".
func (o *Op) Name() string { return o.name }

// Operands returns the op's operands. Do not modify the slice.
func (o *Op) Operands() []*Value { return o.operands }

// Operand returns operand i.
func (o *Op) Operand(i int) *Value { return o.operands[i] }

// NumOperands is len(Operands()).
func (o *Op) NumOperands() int { return len(o.operands) }

// Results returns the op's results. Do not modify the slice.
func (o *Op) Results() []*Value { return o.results }

// Result returns result i.
func (o *Op) Result(i int) *Value { return o.results[i] }

// NumResults is len(Results()).
func (o *Op) NumResults() int { return len(o.results) }

// Regions returns the op's regions.
func (o *Op) Regions() []*Region { return o.regions }

// Region returns region i.
func (o *Op) Region(i int) *Region { return o.regions[i] }

// Block returns the block that holds o.
func (o *Op) Block() *Block { return o.block }

// ParentOp returns the op whose region holds o, or nil at the top level.
func (o *Op) ParentOp() *Op {
	if o.block == nil || o.block.region == nil {
		return nil
	}
	return o.block.region.parent
}

// SetOperand makes operand i refer to v. A nil v leaves the slot empty,
// which Verify reports.
func (o *Op) SetOperand(i int, v *Value) {
	if old := o.operands[i]; old != nil {
		old.removeUse(o, i)
	}
	o.operands[i] = v
	if v != nil {
		v.addUse(o, i)
	}
}

// AppendOperand adds v as a new last operand.
func (o *Op) AppendOperand(v *Value) {
	o.operands = append(o.operands, v)
	if v != nil {
		v.addUse(o, len(o.operands)-1)
	}
}

// AppendResult adds a new last result of type t and returns it. On an op
// that is in no program (the placeholder a Builder returns after an
// error) the result is a placeholder too.
func (o *Op) AppendResult(t Type) *Value {
	var v *Value
	if p := o.program(); p != nil {
		v = p.newValue(t)
	} else {
		v = &Value{id: -1, typ: t}
	}
	v.def, v.index = o, len(o.results)
	o.results = append(o.results, v)
	return v
}

// Terminator reports whether o ends its block ("yield"): its spec says so.
func (o *Op) Terminator() bool {
	spec, ok := LookupSpec(o.name)
	return ok && spec.Terminator
}

func (o *Op) program() *Program {
	if o.block == nil {
		return nil
	}
	return o.block.program()
}

// Erase removes o from its block, with the ops nested in its regions, and
// drops their uses of other values. Its results must be unused (outside o
// itself); Erase reports an error and changes nothing otherwise.
func (o *Op) Erase() error {
	inside := func(u Use) bool {
		for p := u.Op; p != nil; p = p.ParentOp() {
			if p == o {
				return true
			}
		}
		return false
	}
	var check func(op *Op) error
	check = func(op *Op) error {
		for _, r := range op.results {
			for _, u := range r.uses {
				if !inside(u) {
					return fmt.Errorf("ir: cannot erase %q: result %d is still used by %q", o.name, r.index, u.Op.name)
				}
			}
		}
		for _, r := range op.regions {
			for _, a := range r.block.args {
				for _, u := range a.uses {
					if !inside(u) {
						return fmt.Errorf("ir: cannot erase %q: a block argument is used outside it", o.name)
					}
				}
			}
			for _, inner := range r.block.ops {
				if err := check(inner); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := check(o); err != nil {
		return err
	}
	var drop func(op *Op)
	drop = func(op *Op) {
		for _, r := range op.regions {
			for _, inner := range r.block.ops {
				drop(inner)
			}
		}
		for i := range op.operands {
			op.SetOperand(i, nil)
		}
	}
	drop(o)
	if b := o.block; b != nil {
		if i := b.IndexOf(o); i >= 0 {
			b.ops = append(b.ops[:i], b.ops[i+1:]...)
		}
		o.block = nil
	}
	return nil
}
