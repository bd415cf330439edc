package remat

import (
	"strings"
	"testing"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// A copy of an op never reads an operand updated in place since the op
// ran: batch_norm's y may be recomputed after its running statistics are
// overwritten (it does not read them in training, ops.Reads), its new
// running statistics and a matmul by an overwritten parameter may not.
func TestRewriteNeverReadsWhatWasOverwritten(t *testing.T) {
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F32, 8, 4)
	w := ops.Parameter(b, "w", ir.F32, 4, 4)
	scale, bias := ops.Parameter(b, "scale", ir.F32, 4), ops.Parameter(b, "bias", ir.F32, 4)
	mean, vr := ops.Parameter(b, "mean", ir.F32, 4), ops.Parameter(b, "var", ir.F32, 4)
	y, meanOut, _, _, _ := ops.BatchNorm(b, x, scale, bias, mean, vr, 1e-5, 0.1, true)
	ops.AssignInto(b, mean, meanOut)
	h := ops.Tanh(b, ops.Matmul(b, y, w, false, false))
	ops.AssignInto(b, w, ops.FullLike(b, w, 0, ir.InvalidDType))
	loss := ops.ReduceSum(b, ops.Multiply(b, h, y), nil, false)
	grads, err := autodiff.Backward(b, loss, []*ir.Value{scale})
	if err != nil {
		t.Fatal(err)
	}
	ops.Fetch(b, "g", grads[0])
	ops.Fetch(b, "m", meanOut) // read late
	p, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	top := p.Body()
	a, err := analyze(p, top.Ops()[top.IndexOf(loss.Def())+1])
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		drop []*ir.Value
		ok   bool
	}{
		{"batch_norm's y", []*ir.Value{y}, true},
		{"batch_norm's new running mean", []*ir.Value{meanOut}, false},
		{"tanh of a matmul by an overwritten w", []*ir.Value{h, h.Def().Operand(0)}, false},
	} {
		s := Schedule{Drop: map[*ir.Value]bool{}, Every: map[*ir.Op]int{}, Again: map[*ir.Value]map[int]bool{}}
		for _, v := range c.drop {
			s.Drop[v] = true
		}
		rw, err := a.rewrite(s)
		switch {
		case c.ok && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.ok && len(rw.cloned) == 0:
			t.Errorf("%s: nothing recomputed", c.name)
		case c.ok:
			if err := ir.Verify(rw.prog); err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
		case err == nil || !strings.Contains(err.Error(), "updated in place"):
			t.Errorf("%s: %v, want a refusal: it reads what was updated in place", c.name, err)
		}
	}
}
