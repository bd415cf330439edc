package remat

import (
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// Checkpointing a loop. The forward "while" no longer pushes residuals
// onto its tapes: it pushes its carried values (those it had before
// autodiff added the trip counter and the tapes) onto one stack each, on
// every trip whose counter is a multiple of k. The backward "while" runs
// once per segment of k trips, from the last: it pops the segment's
// checkpoint, runs the original forward body again over the segment's
// trips from it (an inner "while" that fills fresh tapes exactly as the
// forward did), then the original backward body over the same trips (an
// inner "while" that empties them). Each trip is recomputed once, so the
// added work is one forward pass of the loop, whatever k; the memory is
// T/k checkpoints and the residuals of k trips instead of those of T.

// forwardLoop copies forward loop lp.fwd, replacing its tapes by
// checkpoints taken every k trips.
func (r *rewriter) forwardLoop(lp *loopPair, k int) *ir.Op {
	fwd, c := lp.fwd, lp.counter
	body := fwd.Region(0).Block()
	args := body.Args()
	r.top.SetPos(fwd.Pos)
	operands := []*ir.Value{r.val(fwd.Operand(0))}
	var types []ir.Type
	for i := 0; i <= c; i++ {
		operands = append(operands, r.val(fwd.Operand(1+i)))
		types = append(types, args[i].Type())
	}
	for i := range c {
		operands = append(operands, ops.StackNew(r.top, args[i].Type()))
		types = append(types, ir.StackOf(args[i].Type()))
	}
	// The checkpoint test's constants are made once, before the loop,
	// rather than on every trip.
	var every, zero *ir.Value
	if k > 1 {
		every, zero = ops.Full(r.top, ir.I64, float64(k)), ops.Full(r.top, ir.I64, 0)
	}
	hoisted := r.hoistConstants(body)
	r.top.SetPos(fwd.Pos)
	n := r.top.Generic("while", operands, fwd.Attrs, types, 1)
	nb := n.Region(0).Block()
	for _, t := range types {
		nb.AppendArg(t)
	}
	for i := 0; i <= c; i++ {
		r.vals[args[i]] = nb.Args()[i]
	}
	b := r.top.At(nb, -1)
	y := body.Terminator()
	for _, op := range body.Ops() {
		if op == y {
			break
		}
		if op.Name() != "stack_push" && !hoisted[op] {
			r.copyOp(b, op)
		}
	}
	next := []*ir.Value{r.val(y.Operand(0))}
	for i := 0; i <= c; i++ {
		next = append(next, r.val(y.Operand(1+i)))
	}
	r.top.SetPos(fwd.Pos)
	ckpts := nb.Args()[c+1:]
	push := func(b *ir.Builder) []*ir.Value {
		out := make([]*ir.Value, c)
		for i := range c {
			out[i] = ops.StackPush(b, ckpts[i], nb.Args()[i])
		}
		return out
	}
	if k == 1 {
		next = append(next, push(b)...)
	} else {
		take := ops.Equal(b, ops.Mod(b, nb.Args()[c], every), zero)
		next = append(next, b.If(take, push, func(*ir.Builder) []*ir.Value { return ckpts })...)
	}
	b.Yield(next...).Pos = y.Pos
	for i := 0; i <= c; i++ {
		r.vals[fwd.Result(i)] = n.Result(i)
	}
	r.ckpt[fwd] = n.Results()[c+1:]
	r.out.fwdLoops[fwd] = n
	return n
}

// backwardLoop builds the backward of a checkpointed loop: per segment,
// the forward body again, then the backward body.
func (r *rewriter) backwardLoop(lp *loopPair) *ir.Op {
	fwd, bwd, c := lp.fwd, lp.bwd, lp.counter
	k := r.s.Every[fwd]
	gb := bwd.Region(0).Block()
	gargs := gb.Args()
	tape := map[int]bool{}
	for _, t := range lp.bwdTapes {
		tape[t] = true
	}
	r.top.SetPos(bwd.Pos)
	operands := []*ir.Value{r.val(bwd.Operand(0))}
	var types []ir.Type
	pos := map[int]int{} // carried value of the backward → of the new loop
	for i, a := range gargs {
		if !tape[i] {
			pos[i] = len(types)
			operands = append(operands, r.val(bwd.Operand(1+i)))
			types = append(types, a.Type())
		}
	}
	nk := len(types)
	for _, s := range r.ckpt[fwd] {
		operands = append(operands, s)
		types = append(types, s.Type())
	}
	// The constants the segment bounds need are made once, before the
	// loop, rather than on every segment.
	one, zero := ops.Full(r.top, ir.I64, 1), ops.Full(r.top, ir.I64, 0)
	var every *ir.Value
	if k > 1 {
		every = ops.Full(r.top, ir.I64, float64(k))
	}
	body := fwd.Region(0).Block()
	hoisted := r.hoistConstants(body)
	for op := range r.hoistConstants(gb) {
		hoisted[op] = true
	}
	r.top.SetPos(bwd.Pos)
	n := r.top.Generic("while", operands, bwd.Attrs, types, 1)
	r.cur = n
	nb := n.Region(0).Block()
	for _, t := range types {
		nb.AppendArg(t)
	}
	b := r.top.At(nb, -1)

	// The segment's checkpoint and first trip j0: the trips left are
	// [0, left), the segment [j0, left).
	var state, rest []*ir.Value
	for _, s := range nb.Args()[nk:] {
		s2, v := ops.StackPop(b, s)
		rest, state = append(rest, s2), append(state, v)
	}
	left := nb.Args()[pos[lp.bwdCounter]]
	last := ops.Subtract(b, left, one)
	j0 := last
	if k > 1 {
		j0 = ops.Subtract(b, last, ops.Mod(b, last, every))
	}

	// The forward body over the segment, onto fresh tapes.
	fargs := body.Args()
	finit := append(append([]*ir.Value{ops.LessThan(b, j0, left)}, state...), j0)
	ftypes := make([]ir.Type, len(fargs))
	for i, a := range fargs {
		ftypes[i] = a.Type()
		if i > c {
			finit = append(finit, ops.StackNew(b, *a.Type().Elem))
		}
	}
	r.top.SetPos(fwd.Pos)
	fi := b.Generic("while", finit, fwd.Attrs, ftypes, 1)
	r.out.loops[fi] = r.out.fwdLoops[fwd]
	r.out.cloned = append(r.out.cloned, fwd)
	fib := fi.Region(0).Block()
	for i, a := range fargs {
		r.vals[a] = fib.AppendArg(ftypes[i])
	}
	fb := b.At(fib, -1)
	fy := body.Terminator()
	for _, op := range body.Ops() {
		if op != fy && !hoisted[op] {
			r.copyOp(fb, op)
		}
	}
	r.top.SetPos(fwd.Pos)
	fnext := []*ir.Value{ops.LessThan(fb, r.val(fy.Operand(1+c)), left)}
	for _, v := range fy.Operands()[1:] {
		fnext = append(fnext, r.val(v))
	}
	fb.Yield(fnext...).Pos = fy.Pos

	// The backward body over the same trips, emptying them.
	r.top.SetPos(bwd.Pos)
	ginit := []*ir.Value{ops.GreaterThan(b, left, j0)}
	gtypes := make([]ir.Type, len(gargs))
	for i, a := range gargs {
		gtypes[i] = a.Type()
		if tape[i] {
			ginit = append(ginit, fi.Result(bwd.Operand(1+i).Index()))
		} else {
			ginit = append(ginit, nb.Args()[pos[i]])
		}
	}
	gi := b.Generic("while", ginit, bwd.Attrs, gtypes, 1)
	gib := gi.Region(0).Block()
	for i, a := range gargs {
		r.vals[a] = gib.AppendArg(gtypes[i])
	}
	ib := b.At(gib, -1)
	gy := gb.Terminator()
	for _, op := range gb.Ops() {
		if op != gy && !hoisted[op] {
			r.copyOp(ib, op)
		}
	}
	r.top.SetPos(bwd.Pos)
	gnext := []*ir.Value{ops.GreaterThan(ib, r.val(gy.Operand(1+lp.bwdCounter)), j0)}
	for _, v := range gy.Operands()[1:] {
		gnext = append(gnext, r.val(v))
	}
	ib.Yield(gnext...).Pos = gy.Pos

	r.top.SetPos(bwd.Pos)
	next := []*ir.Value{ops.GreaterThan(b, j0, zero)}
	for i := range gargs {
		if !tape[i] {
			next = append(next, gi.Result(i))
		}
	}
	b.Yield(append(next, rest...)...).Pos = gy.Pos
	for i := range gargs {
		if !tape[i] {
			r.vals[bwd.Result(i)] = n.Result(pos[i])
		}
	}
	return n
}
