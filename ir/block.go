package ir

// Block is a list of ops, with arguments when it is the body of a "while".
type Block struct {
	args   []*Value
	ops    []*Op
	region *Region  // nil for the top-level block
	prog   *Program // set on the top-level block only
}

// Region is a nested body of an op: a branch of "if" or the body of
// "while". It holds one block.
type Region struct {
	block  *Block
	parent *Op
}

// Block returns the region's block.
func (r *Region) Block() *Block { return r.block }

// Parent returns the op that owns the region.
func (r *Region) Parent() *Op { return r.parent }

// Args returns the block's arguments.
func (b *Block) Args() []*Value { return b.args }

// Ops returns the block's ops in order. Do not modify the slice.
func (b *Block) Ops() []*Op { return b.ops }

// Region returns the region holding b, or nil for the top-level block.
func (b *Block) Region() *Region { return b.region }

// ParentOp returns the op whose region holds b, or nil at the top level.
func (b *Block) ParentOp() *Op {
	if b.region == nil {
		return nil
	}
	return b.region.parent
}

// Terminator returns the block's last op if it is a "yield", else nil.
func (b *Block) Terminator() *Op {
	if n := len(b.ops); n > 0 && b.ops[n-1].Terminator() {
		return b.ops[n-1]
	}
	return nil
}

// AppendArg adds a block argument of type t and returns it.
func (b *Block) AppendArg(t Type) *Value {
	v := b.program().newValue(t)
	v.block, v.index = b, len(b.args)
	b.args = append(b.args, v)
	return v
}

// Encloses reports whether b is inner or one of its ancestors.
func (b *Block) Encloses(inner *Block) bool {
	for c := inner; c != nil; {
		if c == b {
			return true
		}
		op := c.ParentOp()
		if op == nil {
			return false
		}
		c = op.block
	}
	return false
}

func (b *Block) program() *Program {
	for c := b; ; {
		if c.prog != nil {
			return c.prog
		}
		op := c.ParentOp()
		if op == nil || op.block == nil {
			return nil
		}
		c = op.block
	}
}

func (b *Block) insert(at int, op *Op) {
	op.block = b
	b.ops = append(b.ops, nil)
	copy(b.ops[at+1:], b.ops[at:])
	b.ops[at] = op
}

// IndexOf returns the position of op in b, or -1.
func (b *Block) IndexOf(op *Op) int {
	for i, o := range b.ops {
		if o == op {
			return i
		}
	}
	return -1
}
