package autodiff

import (
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

func init() { regionRules["if"] = regionRule{deps: depsIf, backward: (*scope).ifOp} }

// depsIf: a result depends on what either branch yields for it.
func depsIf(op *ir.Op, dep map[*ir.Value]bool, mark func(*ir.Value)) bool {
	changed := false
	for _, r := range op.Regions() {
		if depBlock(r.Block(), dep) {
			changed = true
		}
		for j, y := range r.Block().Terminator().Operands() {
			if dep[y] && j < op.NumResults() && !dep[op.Result(j)] {
				mark(op.Result(j))
				changed = changed || dep[op.Result(j)]
			}
		}
	}
	return changed
}

// ifOp appends the backward of a forward "if": an "if" on the same
// condition whose branch k differentiates forward branch k, seeded with the
// gradients of the if's results, and yields the gradients of the values the
// branches captured.
func (s *scope) ifOp(op *ir.Op, dys []*ir.Value) error {
	captured := s.d.captured(op)
	if len(captured) == 0 {
		return nil
	}
	nres := len(dys) // the results before any residuals are added
	bif := s.b.Generic("if", []*ir.Value{s.resolve(op.Operand(0))}, nil, nil, 2)
	bif.Pos = op.Pos
	var outs [2][]*ir.Value
	for k := range 2 {
		fwd := op.Region(k).Block()
		// The resolver's own ops go first in the branch: a value it is
		// asked for may be needed inside a nested backward if that is
		// already built, so they must come before any backward op.
		prologue := s.b.At(bif.Region(k).Block(), 0)
		inner := s.d.newScope(s, fwd, s.b.At(bif.Region(k).Block(), -1), func(v *ir.Value) *ir.Value {
			if !fwd.Encloses(v.Block()) {
				return s.resolve(v)
			}
			r, scalar := s.ifResidual(op, k, v)
			if scalar {
				return ops.Reshape(prologue, r)
			}
			return r
		})
		y := fwd.Terminator()
		for j := range nres {
			if dys[j] != nil && s.d.dep[y.Operand(j)] {
				inner.addGrad(y.Operand(j), dys[j])
			}
		}
		// A copy: residual placeholders insert into the branch as it is walked.
		body := append([]*ir.Op(nil), fwd.Ops()[:len(fwd.Ops())-1]...)
		if err := inner.run(body); err != nil {
			return err
		}
		for _, c := range captured {
			g := inner.grads[c]
			if g == nil {
				g = inner.zerosLike(c)
			}
			outs[k] = append(outs[k], g)
		}
		inner.b.Yield(outs[k]...)
	}
	for j, c := range captured {
		t, ok := ir.Join(outs[0][j].Type(), outs[1][j].Type())
		if !ok {
			t = dynamic(c.Type())
		}
		s.addGrad(c, bif.AppendResult(t))
	}
	return nil
}

// ifResidual makes value v of branch k of the forward if available after
// the if: it becomes an extra result, yielded by branch k and stood in for
// by a zero-byte placeholder in the other branch. It returns the value as
// reachable from the backward of the if's block, and whether v is a scalar
// carried as a one-element vector (the caller reshapes it back where it
// needs it).
func (s *scope) ifResidual(op *ir.Op, k int, v *ir.Value) (*ir.Value, bool) {
	if v.Block() != op.Region(k).Block() {
		// v is deeper in the branch: the deeper scope made it a residual of
		// its own op; here we only see that op's results.
		panic("autodiff: residual from a nested region reached the wrong scope")
	}
	t := v.Type()
	scalar := !t.IsStack() && t.Rank() == 0
	res := op.AppendResult(residualType(t))
	for kk := range 2 {
		blk := op.Region(kk).Block()
		y := blk.Terminator()
		fb := s.b.At(blk, blk.IndexOf(y))
		var val *ir.Value
		switch {
		case kk == k && scalar:
			val = ops.Reshape(fb, v, 1) // a view: no copy
		case kk == k:
			val = v
		case t.IsStack():
			val = ops.StackNew(fb, *t.Elem)
		default:
			val = ops.Full(fb, t.DType, 0, make([]int, max(1, t.Rank()))...)
		}
		y.AppendOperand(val)
	}
	return s.resolve(res), scalar
}

// residualType is the type of an if result that carries a branch value:
// every dim dynamic, so that the other branch's empty placeholder fits, and
// scalars as one-element vectors for the same reason.
func residualType(t ir.Type) ir.Type {
	if !t.IsStack() && t.Rank() == 0 {
		return ir.TensorOf(t.DType, ir.Dynamic)
	}
	return dynamic(t)
}
