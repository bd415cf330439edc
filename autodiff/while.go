package autodiff

import (
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

func init() { regionRules["while"] = regionRule{deps: depsWhile, backward: (*scope).whileOp} }

// depsWhile: a block argument depends on its initial value or on what the
// body yields for it, iterated to a fixed point; the results follow their
// block arguments.
func depsWhile(op *ir.Op, dep map[*ir.Value]bool, mark func(*ir.Value)) bool {
	changed := false
	markNew := func(v *ir.Value) {
		if !dep[v] {
			mark(v)
			changed = changed || dep[v]
		}
	}
	body := op.Region(0).Block()
	for i, a := range body.Args() {
		if i+1 < op.NumOperands() && dep[op.Operand(i+1)] {
			markNew(a)
		}
	}
	for {
		inner := depBlock(body, dep)
		grew := false
		for i, y := range body.Terminator().Operands()[1:] {
			if i < len(body.Args()) && dep[y] && !dep[body.Args()[i]] {
				markNew(body.Args()[i])
				grew = true
			}
		}
		changed = changed || inner || grew
		if !grew {
			break
		}
	}
	for i, a := range body.Args() {
		if dep[a] && i < op.NumResults() {
			markNew(op.Result(i))
		}
	}
	return changed
}

// whileOp appends the backward of a forward "while". The forward loop gets
// a trip counter and, lazily, tapes for residuals (see tape); the backward
// loop runs the counter down to zero, popping residuals, and carries the
// gradients of the loop-carried values (from the last iteration back to the
// initial values) and of the captured values (summed over iterations).
func (s *scope) whileOp(op *ir.Op, dys []*ir.Value) error {
	n := len(dys) // loop-carried values before any stacks are added
	body := op.Region(0).Block()
	args := body.Args()[:n]
	var carried []int // loop-carried values that take gradients
	for i, a := range args {
		if s.d.dep[a] && differentiable(a.Type()) {
			carried = append(carried, i)
		}
	}
	captured := s.d.captured(op)
	if len(carried) == 0 && len(captured) == 0 {
		return nil
	}
	fwdYield := body.Terminator()
	seeds := make([]*ir.Value, len(carried))
	for idx, i := range carried {
		seeds[idx] = fwdYield.Operand(1 + i)
	}

	// The forward loop counts its iterations.
	i64 := ir.Scalar(ir.I64)
	op.AppendOperand(ops.Full(s.before(op), ir.I64, 0))
	counter := body.AppendArg(i64)
	yb := s.b.At(body, body.IndexOf(fwdYield))
	fwdYield.AppendOperand(ops.Add(yb, counter, ops.Full(yb, ir.I64, 1)))
	trips := op.AppendResult(i64)

	// The backward loop: gradients of the carried values, of the captured
	// values, the counter, then the tapes as residuals appear.
	zero := ops.Full(s.b, ir.I64, 0)
	tripsHere := s.resolve(trips)
	bwOperands := []*ir.Value{ops.GreaterThan(s.b, tripsHere, zero)}
	var bwTypes []ir.Type
	for idx, i := range carried {
		g := dys[i]
		if g == nil {
			g = s.zerosLike(op.Result(i))
		}
		bwOperands = append(bwOperands, g)
		bwTypes = append(bwTypes, dynamic(args[carried[idx]].Type()))
	}
	for _, c := range captured {
		bwOperands = append(bwOperands, s.zerosLike(c))
		bwTypes = append(bwTypes, dynamic(c.Type()))
	}
	bwOperands = append(bwOperands, tripsHere)
	bwTypes = append(bwTypes, i64)
	bw := s.b.Generic("while", bwOperands, nil, bwTypes, 1)
	bw.Pos = op.Pos
	bwBody := bw.Region(0).Block()
	for _, t := range bwTypes {
		bwBody.AppendArg(t)
	}
	bargs := bwBody.Args()
	dCarried := bargs[:len(carried)]
	dCaptured := bargs[len(carried) : len(carried)+len(captured)]
	bwCounter := bargs[len(carried)+len(captured)]

	l := &loop{outer: s, fwd: op, bw: bw, byType: map[string]*tape{}}
	inner := s.d.newScope(s, body, s.b.At(bwBody, -1), func(v *ir.Value) *ir.Value {
		if !body.Encloses(v.Block()) {
			return s.resolve(v)
		}
		if v.Block() != body {
			panic("autodiff: residual from a nested region reached the wrong scope")
		}
		return l.residual(s.b, v)
	})
	inner.loop = l
	for idx, v := range seeds {
		inner.addGrad(v, dCarried[idx])
	}
	// A copy: residual pushes insert into the body while it is walked.
	fwd := append([]*ir.Op(nil), body.Ops()[:body.IndexOf(fwdYield)]...)
	if err := inner.run(fwd); err != nil {
		return err
	}

	next := []*ir.Value{nil}
	for idx, i := range carried {
		g := inner.grads[args[i]]
		if g == nil {
			g = ops.FullLike(inner.b, dCarried[idx], 0, ir.InvalidDType)
		}
		next = append(next, g)
	}
	for idx, c := range captured {
		acc := dCaptured[idx]
		if g := inner.grads[c]; g != nil {
			acc = ops.Add(inner.b, acc, g)
		}
		next = append(next, acc)
	}
	left := ops.Subtract(inner.b, bwCounter, ops.Full(inner.b, ir.I64, 1))
	next[0] = ops.GreaterThan(inner.b, left, ops.Full(inner.b, ir.I64, 0))
	next = append(next, left)
	for _, tp := range l.tapes {
		next = append(next, tp.bw.tail)
	}
	inner.b.Yield(next...)

	for idx, i := range carried {
		s.addGrad(op.Operand(1+i), bw.Result(idx))
	}
	for idx, c := range captured {
		s.addGrad(c, bw.Result(len(carried)+idx))
	}
	return nil
}
