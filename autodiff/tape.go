package autodiff

import (
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// loop is what the scope of a forward while body knows of the pair of
// loops: the forward loop, its backward and the tapes they carry.
type loop struct {
	outer   *scope // the scope that holds the forward loop
	fwd, bw *ir.Op
	tapes   []*tape // in the order they were made: their place among the operands
	byType  map[string]*tape
}

// A tape is the stack that keeps the residuals of one type. Loops nested
// directly in loop bodies share their tapes: the outermost loop of the nest
// gets a new stack, every loop inside carries it along (operand, block
// argument, yield, result), and each body pushes its residuals onto it,
// inner loops' before its own. The backward carries the tape back the same
// way and pops in exactly the reverse order. A stack per loop instead would
// have each loop keep every stack of the loops inside it on stacks of its
// own, one more per level: a backward quadratic in the depth of the nest.
type tape struct {
	fwd, bw chain // through the forward body and the backward body
}

// chain is the thread of one tape through a block: its value on entry, the
// ops that take it and return its next value (links, in block order), and
// its value at the end.
type chain struct {
	block      *ir.Block
	head, tail *ir.Value
	links      map[*ir.Op]*ir.Value // link → the value it returns
}

func newChain(block *ir.Block, head *ir.Value) chain {
	return chain{block: block, head: head, tail: head, links: map[*ir.Op]*ir.Value{}}
}

// at returns the tape's value just before op i of the block.
func (c *chain) at(i int) *ir.Value {
	ops := c.block.Ops()
	for i--; i >= 0; i-- {
		if v, ok := c.links[ops[i]]; ok {
			return v
		}
	}
	return c.head
}

// link records that op, just placed in the block, takes the tape's value in
// and returns out: whatever took in after op takes out now.
func (c *chain) link(op *ir.Op, in, out *ir.Value) {
	for _, u := range append([]ir.Use(nil), in.Uses()...) {
		if u.Op != op {
			u.Op.SetOperand(u.Index, out)
		}
	}
	if c.tail == in {
		c.tail = out
	}
	c.links[op] = out
}

// tape returns the loop's tape of residuals of type t, threading it through
// the loops around when it is new.
func (l *loop) tape(t ir.Type) *tape {
	key := t.String()
	if tp := l.byType[key]; tp != nil {
		return tp
	}
	st := ir.StackOf(t)
	var outer *tape
	if l.outer.loop != nil {
		outer = l.outer.loop.tape(t)
	}
	tp := &tape{}
	var full *ir.Value // the filled tape, after the outermost loop

	// Forward: the tape enters the loop and leaves it unchanged until
	// pushes are linked in before the yield.
	body := l.fwd.Region(0).Block()
	if outer != nil {
		in := outer.fwd.at(l.fwd.Block().IndexOf(l.fwd))
		l.fwd.AppendOperand(in)
		outer.fwd.link(l.fwd, in, l.fwd.AppendResult(st))
	} else {
		l.fwd.AppendOperand(ops.StackNew(l.outer.before(l.fwd), t))
		full = l.fwd.AppendResult(st)
	}
	tp.fwd = newChain(body, body.AppendArg(st))
	body.Terminator().AppendOperand(tp.fwd.head)

	// Backward: the same through the backward loop, whose yield, built
	// last, hands on the tail.
	if outer != nil {
		in := outer.bw.at(l.bw.Block().IndexOf(l.bw))
		l.bw.AppendOperand(in)
		outer.bw.link(l.bw, in, l.bw.AppendResult(st))
	} else {
		l.bw.AppendOperand(l.outer.resolve(full))
		l.bw.AppendResult(st)
	}
	bwBody := l.bw.Region(0).Block()
	tp.bw = newChain(bwBody, bwBody.AppendArg(st))

	l.tapes = append(l.tapes, tp)
	l.byType[key] = tp
	return tp
}

// residual makes forward value v of the loop body available to the
// backward body: pushed at the end of every forward iteration, popped at
// the start of the backward one. Residuals made later are pushed later and
// popped earlier.
func (l *loop) residual(b *ir.Builder, v *ir.Value) *ir.Value {
	tp := l.tape(v.Type())
	body := tp.fwd.block
	y := body.IndexOf(body.Terminator())
	in := tp.fwd.at(y)
	pushed := ops.StackPush(b.At(body, y), in, v)
	tp.fwd.link(pushed.Def(), in, pushed)

	in = tp.bw.head
	rest, item := ops.StackPop(b.At(tp.bw.block, 0), in)
	tp.bw.link(rest.Def(), in, rest)
	return item
}
