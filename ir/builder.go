package ir

import (
	"errors"
	"fmt"
)

// Builder appends ops to a block at an insertion point. Errors are sticky,
// as with bufio.Scanner: the first one is kept, later calls return
// placeholder values so that building code stays linear, and Err or Finish
// reports it. The nested builders that If and While hand to their closures
// share the error of the builder that made them.
type Builder struct {
	prog  *Program
	block *Block
	at    int // insertion index in block; -1 appends
	err   *error
	pos   *Pos // positions of new ops, if set (SetPos); shared like err
}

// NewBuilder returns a builder that appends to the top level of p.
func NewBuilder(p *Program) *Builder {
	var err error
	return &Builder{prog: p, block: p.body, at: -1, err: &err, pos: new(Pos)}
}

// SetPos makes the ops that b and the builders sharing its error (At, and
// the closures of If and While) build from now on record p as their
// position, instead of the Go code that built them: an importer sets the
// place in the file it reads. The zero Pos goes back to Go positions.
func (b *Builder) SetPos(p Pos) {
	if b.pos == nil {
		b.pos = new(Pos)
	}
	*b.pos = p
}

// Pos is the position SetPos gave, or the zero Pos.
func (b *Builder) Pos() Pos {
	if b.pos == nil {
		return Pos{}
	}
	return *b.pos
}

// here is the position of an op being built: the one SetPos gave, or the
// first Go caller outside the helper packages.
func (b *Builder) here() Pos {
	if b.pos != nil && *b.pos != (Pos{}) {
		return *b.pos
	}
	return callerPos()
}

// Program returns the program being built.
func (b *Builder) Program() *Program { return b.prog }

// Block returns the block the builder inserts into.
func (b *Builder) Block() *Block { return b.block }

// SetInsertionPoint makes the builder insert into block before the op at
// index, and keep inserting after what it inserted: a builder at index 0
// writes a prologue that stays ahead of ops appended later. An index of -1
// (or past the end) appends instead.
func (b *Builder) SetInsertionPoint(block *Block, index int) {
	if index < 0 || index > len(block.ops) {
		index = -1
	}
	b.block, b.at = block, index
}

// SetInsertionPointBefore makes the builder insert just before op.
func (b *Builder) SetInsertionPointBefore(op *Op) {
	b.SetInsertionPoint(op.block, op.block.IndexOf(op))
}

// At returns a builder sharing b's program and error that inserts into
// block before index (-1 appends).
func (b *Builder) At(block *Block, index int) *Builder {
	nb := &Builder{prog: b.prog, err: b.err, pos: b.pos}
	nb.SetInsertionPoint(block, index)
	return nb
}

// Err returns the first error the builder met, if any.
func (b *Builder) Err() error { return *b.err }

// Fail records err (wrapped with the caller's position) unless an error is
// already recorded. Helpers that validate their own arguments use it.
func (b *Builder) Fail(err error) {
	if *b.err == nil {
		*b.err = &Error{Pos: b.here(), Msg: err.Error(), Err: err}
	}
}

// Finish verifies the program and returns it, or the first building error,
// or the verifier's errors.
func (b *Builder) Finish() (*Program, error) {
	if err := b.Err(); err != nil {
		return nil, err
	}
	if err := Verify(b.prog); err != nil {
		return nil, err
	}
	return b.prog, nil
}

// Op appends an op whose result types are inferred by the hook registered
// for name (see Register). Unknown names are an error.
func (b *Builder) Op(name string, attrs Attrs, operands ...*Value) *Op {
	pos := b.here()
	types, err := b.infer(name, attrs, operands)
	if err != nil {
		if *b.err == nil {
			*b.err = &Error{Pos: pos, Op: name, Msg: err.Error(), Err: err}
		}
		return b.poisoned(name, attrs, operands, pos)
	}
	op := b.Generic(name, operands, attrs, types, 0)
	op.Pos = pos
	return op
}

// Op1 is Op for ops with one result; it returns that result.
func (b *Builder) Op1(name string, attrs Attrs, operands ...*Value) *Value {
	op := b.Op(name, attrs, operands...)
	if op.block == nil {
		return op.results[0] // a placeholder op; the error is recorded
	}
	if op.NumResults() != 1 {
		b.failAt(op.Pos, name, fmt.Errorf("op has %d results, not 1", op.NumResults()))
		return b.poisonValue()
	}
	return op.results[0]
}

// ErrPoisoned is the error behind the placeholder values a Builder returns
// after a failure; it never reaches the user as the first error.
var ErrPoisoned = errors.New("operand comes from a failed op")

func (b *Builder) infer(name string, attrs Attrs, operands []*Value) ([]Type, error) {
	types := make([]Type, len(operands))
	for i, v := range operands {
		if v == nil {
			return nil, fmt.Errorf("operand %d is nil", i)
		}
		if !v.typ.IsValid() {
			return nil, ErrPoisoned
		}
		types[i] = v.typ
	}
	spec, ok := LookupSpec(name)
	if !ok {
		return nil, fmt.Errorf("unknown op %q (is package ops imported?)", name)
	}
	if spec.BuiltBy != "" {
		return nil, fmt.Errorf("%q must be built with Builder.%s", name, spec.BuiltBy)
	}
	if i := stackOperand(types); i >= 0 && !spec.Stacks {
		return nil, stackOperandError(i, types[i])
	}
	return spec.Infer(types, attrs)
}

func (b *Builder) failAt(pos Pos, op string, err error) {
	if *b.err == nil {
		*b.err = &Error{Pos: pos, Op: op, Msg: err.Error(), Err: err}
	}
}

// poisoned returns a placeholder op that is not inserted anywhere; its
// results have invalid types, so ops built from them fail quietly.
func (b *Builder) poisoned(name string, attrs Attrs, operands []*Value, pos Pos) *Op {
	op := &Op{name: name, Attrs: attrs, Pos: pos, operands: operands}
	for i := 0; i < 8; i++ {
		v := b.poisonValue()
		v.def, v.index = op, i
		op.results = append(op.results, v)
	}
	return op
}

func (b *Builder) poisonValue() *Value { return &Value{id: -1} }

// Generic appends an op with the given result types and number of empty
// regions, without type inference or checks. The parser uses it, and so do
// passes that know the types already; Verify checks the result.
func (b *Builder) Generic(name string, operands []*Value, attrs Attrs, results []Type, regions int) *Op {
	op := &Op{name: name, Attrs: attrs, Pos: b.here()}
	op.operands = make([]*Value, len(operands))
	for i, v := range operands {
		op.operands[i] = v
		if v != nil {
			v.addUse(op, i)
		}
	}
	for _, t := range results {
		v := b.prog.newValue(t)
		v.def, v.index = op, len(op.results)
		op.results = append(op.results, v)
	}
	for range regions {
		r := &Region{parent: op}
		r.block = &Block{region: r}
		op.regions = append(op.regions, r)
	}
	if b.at < 0 {
		b.block.insert(len(b.block.ops), op)
	} else {
		b.block.insert(b.at, op)
		b.at++
	}
	return op
}

// Yield appends a "yield" that ends the current region with vals.
func (b *Builder) Yield(vals ...*Value) *Op {
	op := b.Generic("yield", vals, nil, nil, 0)
	op.Pos = b.here()
	return op
}

// If appends an "if" on cond. then and els build the two branches with
// nested builders and return the values each branch yields; the counts must
// agree, and each result's type is the join of the two yielded types. A nil
// function stands for a branch that computes and yields nothing. If returns
// the op's results.
func (b *Builder) If(cond *Value, then, els func(b *Builder) []*Value) []*Value {
	pos := b.here()
	// On a bad condition the branches are still built, so that the caller
	// gets as many (placeholder) results as it expects.
	switch {
	case cond == nil:
		b.failAt(pos, "if", errors.New("condition is nil"))
	case !cond.typ.IsValid():
		b.failAt(pos, "if", ErrPoisoned)
	}
	op := b.Generic("if", []*Value{cond}, nil, nil, 2)
	op.Pos = pos
	var yields [2][]*Value
	for i, fn := range []func(*Builder) []*Value{then, els} {
		inner := b.At(op.regions[i].block, -1)
		if fn != nil {
			yields[i] = fn(inner)
		}
		y := inner.Yield(yields[i]...)
		y.Pos = pos
	}
	if b.Err() != nil {
		return b.poisonValues(len(yields[0]))
	}
	if len(yields[0]) != len(yields[1]) {
		b.failAt(pos, "if", fmt.Errorf("then branch yields %d values, else branch %d", len(yields[0]), len(yields[1])))
		return b.poisonValues(len(yields[0]))
	}
	for i := range yields[0] {
		t, e := yields[0][i], yields[1][i]
		if t == nil || e == nil || !t.typ.IsValid() || !e.typ.IsValid() {
			b.failAt(pos, "if", fmt.Errorf("yielded value %d is nil or from a failed op", i))
			return b.poisonValues(len(yields[0]))
		}
		j, ok := Join(t.typ, e.typ)
		if !ok {
			b.failAt(pos, "if", fmt.Errorf("result %d: then branch yields %s, else branch %s", i, t.typ, e.typ))
			return b.poisonValues(len(yields[0]))
		}
		op.AppendResult(j)
	}
	return op.results
}

// While appends a "while" with initial condition cond and loop-carried
// values init. body receives the block arguments (the current values) and
// returns the next condition and the next values. The loop-carried types
// are init's types; use WhileTyped when a value's shape changes between
// iterations. While returns the final values.
func (b *Builder) While(cond *Value, init []*Value, body func(b *Builder, args []*Value) (*Value, []*Value)) []*Value {
	types := make([]Type, len(init))
	for i, v := range init {
		if v != nil {
			types[i] = v.typ
		}
	}
	return b.whileTyped(b.here(), cond, init, types, body)
}

// WhileTyped is While with explicit loop-carried types, which each initial
// and each yielded value must refine.
func (b *Builder) WhileTyped(cond *Value, init []*Value, types []Type, body func(b *Builder, args []*Value) (*Value, []*Value)) []*Value {
	return b.whileTyped(b.here(), cond, init, types, body)
}

func (b *Builder) whileTyped(pos Pos, cond *Value, init []*Value, types []Type, body func(*Builder, []*Value) (*Value, []*Value)) []*Value {
	if len(types) != len(init) {
		b.failAt(pos, "while", fmt.Errorf("%d initial values but %d loop-carried types", len(init), len(types)))
		return b.poisonValues(len(init))
	}
	if cond == nil {
		b.failAt(pos, "while", errors.New("condition is nil"))
		return b.poisonValues(len(init))
	}
	if !cond.typ.IsValid() {
		b.failAt(pos, "while", ErrPoisoned)
		return b.poisonValues(len(init))
	}
	for i, v := range init {
		if v == nil {
			b.failAt(pos, "while", fmt.Errorf("initial value %d is nil", i))
			return b.poisonValues(len(init))
		}
		if !v.typ.IsValid() {
			b.failAt(pos, "while", ErrPoisoned)
			return b.poisonValues(len(init))
		}
	}
	for i, t := range types {
		if !t.IsValid() {
			b.failAt(pos, "while", fmt.Errorf("loop-carried type %d, %s, is invalid", i, t))
			return b.poisonValues(len(init))
		}
	}
	op := b.Generic("while", append([]*Value{cond}, init...), nil, types, 1)
	op.Pos = pos
	blk := op.regions[0].block
	for _, t := range types {
		blk.AppendArg(t)
	}
	inner := b.At(blk, -1)
	next, vals := body(inner, blk.args)
	y := inner.Yield(append([]*Value{next}, vals...)...)
	y.Pos = pos
	return op.results
}

func (b *Builder) poisonValues(n int) []*Value {
	vs := make([]*Value, n)
	for i := range vs {
		vs[i] = b.poisonValue()
	}
	return vs
}
