package ir

// Value is an SSA value: the result of an op or an argument of a block. It
// is defined exactly once and may be used in the defining block after its
// definition and in any block nested inside that block.
type Value struct {
	id    int
	typ   Type
	def   *Op    // the op that defines it, or nil for a block argument
	index int    // result or argument index
	block *Block // the block of a block argument (nil for op results)
	uses  []Use

	// Name is the name the value had in the source text, if any. The printer
	// ignores it and numbers values canonically.
	Name string
}

// Use is one operand slot that refers to a value.
type Use struct {
	Op    *Op
	Index int // operand index
}

// ID is a number unique among the values of one program, in creation order.
func (v *Value) ID() int { return v.id }

// Type is the value's tensor type.
func (v *Value) Type() Type { return v.typ }

// Def returns the op that defines v, or nil if v is a block argument.
func (v *Value) Def() *Op { return v.def }

// Index is v's position among its op's results or its block's arguments.
func (v *Value) Index() int { return v.index }

// IsBlockArg reports whether v is a block argument.
func (v *Value) IsBlockArg() bool { return v.def == nil }

// Block returns the block that defines v: the block holding its op, or the
// block whose argument it is.
func (v *Value) Block() *Block {
	if v.def != nil {
		return v.def.block
	}
	return v.block
}

// Uses lists the operand slots that refer to v, in the order they were made.
func (v *Value) Uses() []Use { return v.uses }

func (v *Value) addUse(op *Op, i int) { v.uses = append(v.uses, Use{op, i}) }

func (v *Value) removeUse(op *Op, i int) {
	for k, u := range v.uses {
		if u.Op == op && u.Index == i {
			v.uses = append(v.uses[:k], v.uses[k+1:]...)
			return
		}
	}
}

// ReplaceAllUsesWith makes every use of v refer to w instead.
func (v *Value) ReplaceAllUsesWith(w *Value) {
	for _, u := range append([]Use(nil), v.uses...) {
		u.Op.SetOperand(u.Index, w)
	}
}
