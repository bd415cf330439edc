package exec

import (
	"fmt"

	"github.com/gopir/gopir/ir"
)

// A "while" runs its body while the condition holds. The initial values
// become the body's block arguments, moved in when they die at the while
// (movableInits) and shared otherwise; each iteration's yields become the
// next iteration's arguments, and the last ones the results.

func init() { regionOps["while"] = regionOp{run: runWhile, moves: movableInits} }

func runWhile(e *Executable, b *blockCode, in *instr) error {
	body := in.regions[0]
	n := len(in.out)
	cond := in.in[0].get().Bool()[0]
	if e.opts.Conditions != nil {
		e.opts.Conditions(in.op, cond)
	}
	// The initial values move into the first iteration's frame when they
	// die here; otherwise they are shared, and the outer frame keeps its
	// reference until their last use.
	for i := range n {
		r := in.in[i+1]
		if in.donate&(1<<uint(i+1)) != 0 {
			body.slots[i] = r.get()
			r.blk.slots[r.slot] = nil
		} else {
			body.slots[i] = r.get().Retain()
		}
	}
	for cond {
		if e.done != nil {
			select {
			case <-e.done:
				body.clearFrame()
				return fmt.Errorf("run cancelled in %s %q: %w", in.op.Pos, in.op.Name(), e.ctx.Err())
			default:
			}
		}
		vals, err := e.runBlock(body)
		if err != nil {
			return err
		}
		cond = vals[0].Bool()[0]
		if e.opts.Conditions != nil {
			e.opts.Conditions(in.op, cond)
		}
		vals[0].Release()
		vals[0] = nil
		// The body's frame is empty now: last iteration's block arguments
		// were released at their last use or moved into vals.
		for i := range n {
			body.slots[i] = vals[i+1]
			vals[i+1] = nil
		}
	}
	for i := range n {
		b.slots[in.out[i]] = body.slots[i]
		body.slots[i] = nil
	}
	return nil
}

// movableInits picks the initial values of a while that can move into the
// loop instead of being shared: they belong to this block's frame, die at
// the while, appear once among its operands and are not captured by the
// body (captured lists what it uses from outside). Bit i+1 stands for
// operand i+1 (initial value i).
func movableInits(in *instr, bc *blockCode, at int, lastUse []int, captured []*ir.Value) uint64 {
	op := in.op
	inBody := make(map[*ir.Value]bool, len(captured))
	for _, v := range captured {
		inBody[v] = true
	}
	var mask uint64
	for i := 1; i < len(in.in) && i < 64; i++ {
		r, v := in.in[i], op.Operand(i)
		if r.blk != bc || lastUse[r.slot] != at || inBody[v] {
			continue
		}
		once := true
		for j, other := range in.in {
			if j != i && other == r {
				once = false
			}
		}
		if once {
			mask |= 1 << uint(i)
		}
	}
	return mask
}
