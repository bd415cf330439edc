package ir

// Program is a whole gopir program: one top-level block.
type Program struct {
	body   *Block
	nextID int

	// File names the source the program was parsed from, for messages.
	File string
}

// NewProgram returns an empty program.
func NewProgram() *Program {
	p := &Program{}
	p.body = &Block{prog: p}
	return p
}

// Body returns the top-level block.
func (p *Program) Body() *Block { return p.body }

// NumValues is one more than the largest value ID in the program.
func (p *Program) NumValues() int { return p.nextID }

func (p *Program) newValue(t Type) *Value {
	v := &Value{id: p.nextID, typ: t}
	p.nextID++
	return v
}

// Walk calls fn for every op of the program in textual (pre-)order: an op,
// then the ops of its regions, then the next op. If fn returns false, the
// op's regions are skipped.
func (p *Program) Walk(fn func(op *Op) bool) { walkBlock(p.body, fn) }

// WalkBlock is Walk restricted to b and the blocks nested in it.
func WalkBlock(b *Block, fn func(op *Op) bool) { walkBlock(b, fn) }

func walkBlock(b *Block, fn func(op *Op) bool) {
	for _, op := range b.ops {
		if fn(op) {
			for _, r := range op.regions {
				walkBlock(r.block, fn)
			}
		}
	}
}

// Lookup returns the top-level op with the given name whose "name"
// attribute is attrName, e.g. Lookup("data", "x").
func (p *Program) Lookup(opName, attrName string) *Op {
	for _, op := range p.body.ops {
		if op.name == opName {
			if s, err := op.Attrs.Str("name"); err == nil && s == attrName {
				return op
			}
		}
	}
	return nil
}
