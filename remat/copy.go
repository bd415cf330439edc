package remat

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// A copier builds a new program from an old one op by op: every old value
// read is looked up in vals (its copy, or what stands for it now).
type copier struct {
	prog *ir.Program
	vals map[*ir.Value]*ir.Value
	err  error
}

func newCopier() *copier {
	return &copier{prog: ir.NewProgram(), vals: map[*ir.Value]*ir.Value{}}
}

// fail records the first error.
func (c *copier) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

// val returns what stands for old value v in the new program.
func (c *copier) val(v *ir.Value) *ir.Value {
	if n, ok := c.vals[v]; ok {
		return n
	}
	c.fail(fmt.Errorf("remat: %s is used before it is defined in the rewritten program", describe(v)))
	return nil
}

// emit appends to b a copy of op (without regions) with the given
// operands and attributes. Result types come from the op's Infer hook on
// the new operands' types, which may be more or less static than the
// original's; ops without one keep their declared types.
func (c *copier) emit(b *ir.Builder, op *ir.Op, operands []*ir.Value, attrs ir.Attrs) *ir.Op {
	types := make([]ir.Type, op.NumResults())
	for i, r := range op.Results() {
		types[i] = r.Type()
	}
	if spec, ok := ir.LookupSpec(op.Name()); ok && spec.Infer != nil && spec.Regions == 0 {
		in := make([]ir.Type, len(operands))
		for i, v := range operands {
			if v == nil {
				c.fail(fmt.Errorf("remat: %q at %s: operand %d is missing", op.Name(), op.Pos, i))
				b.SetPos(op.Pos)
				return b.Generic(op.Name(), operands, attrs, types, 0)
			}
			in[i] = v.Type()
		}
		t, err := spec.Infer(in, attrs)
		if err != nil {
			c.fail(fmt.Errorf("remat: %q at %s: %w", op.Name(), op.Pos, err))
		} else {
			types = t
		}
	}
	b.SetPos(op.Pos)
	return b.Generic(op.Name(), operands, attrs, types, 0)
}

// copyOp appends a copy of op, regions included, reading its operands
// through vals, and records its results.
func (c *copier) copyOp(b *ir.Builder, op *ir.Op) *ir.Op {
	operands := make([]*ir.Value, op.NumOperands())
	for i, v := range op.Operands() {
		operands[i] = c.val(v)
	}
	if len(op.Regions()) == 0 {
		n := c.emit(b, op, operands, op.Attrs)
		c.mapResults(op, n)
		return n
	}
	types := make([]ir.Type, op.NumResults())
	for i, r := range op.Results() {
		types[i] = r.Type()
	}
	b.SetPos(op.Pos)
	n := b.Generic(op.Name(), operands, op.Attrs, types, len(op.Regions()))
	for ri, r := range op.Regions() {
		c.copyBlock(b.At(n.Region(ri).Block(), -1), r.Block())
	}
	c.mapResults(op, n)
	return n
}

// copyBlock copies the arguments and ops of old into the block b inserts
// into.
func (c *copier) copyBlock(b *ir.Builder, old *ir.Block) {
	for _, a := range old.Args() {
		c.vals[a] = b.Block().AppendArg(a.Type())
	}
	for _, op := range old.Ops() {
		c.copyOp(b, op)
	}
}

func (c *copier) mapResults(old, n *ir.Op) {
	for i, r := range old.Results() {
		c.vals[r] = n.Result(i)
	}
}

// recomputable reports whether a copy of op, run later on the same
// operands, gives the same results: an op without regions with a kernel
// (not a feed, parameter, fetch or yield), that updates nothing in place
// and handles no stacks. Random ops qualify when copied with ops.Pin.
// Collective ops do not: every rank of a data-parallel job must run the
// same collectives, and a copy would talk to the others once more.
func recomputable(op *ir.Op) bool {
	if len(op.Regions()) > 0 || ops.Collective(op) {
		return false
	}
	d, ok := ops.Lookup(op.Name())
	if !ok || (d.Compute == nil && d.Bind == nil) || d.Stacks || len(d.Writes) > 0 {
		return false
	}
	return true
}

// describe names a value for messages: its op and position.
func describe(v *ir.Value) string {
	if op := v.Def(); op != nil {
		return fmt.Sprintf("result %d of %q at %s", v.Index(), op.Name(), op.Pos)
	}
	return "a block argument"
}

// valueNames numbers the values of p as the printer does (%0, %1, ... in
// order of definition, an op's results before its regions' values).
func valueNames(p *ir.Program) map[*ir.Value]string {
	names := map[*ir.Value]string{}
	var walk func(*ir.Block)
	walk = func(b *ir.Block) {
		for _, op := range b.Ops() {
			for _, r := range op.Results() {
				names[r] = fmt.Sprintf("%%%d", len(names))
			}
			for _, r := range op.Regions() {
				for _, a := range r.Block().Args() {
					names[a] = fmt.Sprintf("%%%d", len(names))
				}
				walk(r.Block())
			}
		}
	}
	walk(p.Body())
	return names
}
