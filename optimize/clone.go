package optimize

import (
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// clone returns a copy of p that a pass may rewrite in place: the same
// ops, attributes, types and positions. Ops that draw random numbers keyed
// by their position get their key written down (ops.Def.Pin), so that
// inserting or removing ops before them does not change their draws.
func clone(p *ir.Program) *ir.Program {
	q := ir.NewProgram()
	q.File = p.File
	vals := map[*ir.Value]*ir.Value{}
	copyBlock(ir.NewBuilder(q), p.Body(), vals)
	return q
}

func copyBlock(b *ir.Builder, old *ir.Block, vals map[*ir.Value]*ir.Value) {
	for _, a := range old.Args() {
		vals[a] = b.Block().AppendArg(a.Type())
	}
	for _, op := range old.Ops() {
		operands := make([]*ir.Value, op.NumOperands())
		for i, v := range op.Operands() {
			operands[i] = vals[v]
		}
		types := make([]ir.Type, op.NumResults())
		for i, r := range op.Results() {
			types[i] = r.Type()
		}
		attrs := op.Attrs
		if d, ok := ops.Lookup(op.Name()); ok && d.Pin != nil {
			attrs = d.Pin(op)
		}
		n := b.Generic(op.Name(), operands, attrs, types, len(op.Regions()))
		n.Pos = op.Pos
		for ri, r := range op.Regions() {
			copyBlock(b.At(n.Region(ri).Block(), -1), r.Block(), vals)
		}
		for i, r := range op.Results() {
			vals[r] = n.Result(i)
		}
	}
}
