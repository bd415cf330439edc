package remat

import (
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// hoistUpdates moves each update to right after the last op it must
// follow: what makes its operands, the last read of its parameter (a
// view's read included), the write of the step count it reads, a random
// op; never before the backward pass. The parameter ops only updates
// read move with them.
func TestHoistUpdates(t *testing.T) {
	for _, c := range []struct {
		name   string
		view   bool // the step reads a view of w1 after w1's gradient
		random bool // a random op right after w2's last read
		grads  bool // w2's gradient made after its last read, and moved
	}{{"plain", false, false, false}, {"view", true, false, false}, {"random", false, true, false}, {"grads", false, false, true}} {
		t.Run(c.name, func(t *testing.T) {
			b := ir.NewBuilder(ir.NewProgram())
			x := ops.Data(b, "x", ir.F32, 4, 3)
			w1 := ops.Parameter(b, "w1", ir.F32, 3, 3)
			w2 := ops.Parameter(b, "w2", ir.F32, 3, 2)
			h := ops.Matmul(b, x, w1, false, false)
			y := ops.Matmul(b, h, w2, false, false)
			var g2, dh *ir.Value
			if c.grads {
				dh = ops.Matmul(b, y, w2, false, true) // w2's last read
				g2 = ops.Matmul(b, h, y, true, false)  // w2's gradient
			} else {
				g2 = ops.Matmul(b, h, y, true, false)
				dh = ops.Matmul(b, y, w2, false, true)
			}
			var rnd *ir.Value
			if c.random {
				rnd = ops.UniformRandom(b, ir.F32, 0, 1, 1, 2)
			}
			g1 := ops.Matmul(b, x, dh, true, false) // w1's gradient
			var view *ir.Value
			if c.view {
				view = ops.ReduceSum(b, ops.Reshape(b, w1, 9), nil, false)
			}
			step := ops.Parameter(b, "step", ir.I64)
			ops.Increment(b, step, 1)
			lr := ops.Parameter(b, "lr", ir.F64)
			u1 := ops.SGDUpdate(b, w1, g1, lr, 0)
			u2 := ops.SGDUpdate(b, w2, g2, lr, 0)
			ops.Fetch(b, "y", y)
			if view != nil {
				ops.Fetch(b, "view", view)
			}
			if rnd != nil {
				ops.Fetch(b, "rnd", rnd)
			}
			p, err := b.Finish()
			if err != nil {
				t.Fatal(err)
			}
			top := p.Body()
			from := top.IndexOf(y.Def()) + 1
			moved, err := hoistUpdates(top, from, c.grads)
			if err != nil {
				t.Fatal(err)
			}
			at := func(op *ir.Op) int { return top.IndexOf(op) }
			// u2 right after w2's last read (or the random op after it),
			// lr's parameter op between; u1 right after its gradient, or
			// the view's read.
			after2 := dh.Def()
			if c.random {
				after2 = rnd.Def()
			}
			if got := at(u2); got != at(after2)+2 || at(lr.Def()) != at(u2)-1 {
				t.Errorf("w2's update at %d, lr at %d: want right after %q at %d, lr's parameter op between\n%s", got, at(lr.Def()), after2.Name(), at(after2), p)
			}
			after1 := g1.Def()
			if view != nil {
				after1 = view.Def()
			}
			if got := at(u1); got != at(after1)+1 {
				t.Errorf("w1's update at %d: want right after %q at %d\n%s", got, after1.Name(), at(after1), p)
			}
			// The increment goes to the start of the backward pass, or
			// right after the random op, whose stream is keyed by its
			// position (only moved updates and parameter ops between).
			start := from
			if c.random {
				start = at(rnd.Def()) + 1
			}
			inc := top.Ops()[at(step.Def())+1]
			if inc.Name() != "increment" || at(step.Def()) < start || at(inc) > at(u1) {
				t.Errorf("the step count's parameter op at %d, then %q: want them from %d on, before w1's update\n%s", at(step.Def()), inc.Name(), start, p)
			}
			for _, op := range top.Ops()[start:at(step.Def())] {
				if op.Name() != "sgd_update" && op.Name() != "parameter" {
					t.Errorf("%q at %d, before the increment at %d: want it after\n%s", op.Name(), at(op), at(inc), p)
				}
			}
			var names []string
			for op := range moved {
				if op.Name() != "parameter" {
					names = append(names, op.Name())
				}
			}
			want := 2 // the increment and w2's update (w1's follows its gradient, the last op before it)
			if c.grads {
				want = 3 // and w2's gradient, before w2's last read
				if at(g2.Def()) > at(dh.Def()) {
					t.Errorf("w2's gradient at %d: want it before w2's last read at %d\n%s", at(g2.Def()), at(dh.Def()), p)
				}
			}
			if len(names) != want {
				t.Errorf("moved %v, want %d ops", names, want)
			}
		})
	}
}
