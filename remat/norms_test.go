package remat_test

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/remat"
)

// bnnet is a small convnet with batch norms in training: two blocks of
// conv, batch norm (its running statistics written back and fetched),
// ReLU and pooling over a batch of 16, then a dense layer and the sum.
// Its peak is the first block's activations and their gradients, which
// only a split running the batch norms in passes lowers.
func bnnet(t *testing.T) *case_ {
	var stats []string
	c := build(t, func(b *ir.Builder, param func(string, ...int) *ir.Value) *ir.Value {
		x := ops.Data(b, "x", ir.F32, -1, 2, 16, 16)
		one := []int{1, 1}
		norm := func(name string, h *ir.Value, ch int) *ir.Value {
			mean := ops.Parameter(b, name+".mean", ir.F32, ch)
			variance := ops.Parameter(b, name+".var", ir.F32, ch)
			y, m, v, _, _ := ops.BatchNorm(b, h, param(name+".scale", ch), param(name+".bias", ch), mean, variance, 1e-5, 0.1, true)
			ops.AssignInto(b, mean, m)
			ops.AssignInto(b, variance, v)
			ops.Fetch(b, name+".mean", m)
			ops.Fetch(b, name+".var", v)
			stats = append(stats, name)
			return y
		}
		h := ops.Conv2D(b, x, param("w1", 6, 2, 3, 3), one, one, one, 1)
		h = ops.Relu(b, norm("bn1", h, 6))
		h, _ = ops.MaxPool2D(b, h, []int{2, 2}, []int{2, 2}, []int{0, 0})
		h = ops.Conv2D(b, h, param("w2", 6, 6, 3, 3), one, one, one, 1)
		h = ops.Relu(b, norm("bn2", h, 6))
		h = ops.Flatten(b, h, 1, 3)
		return ops.ReduceSum(b, ops.Matmul(b, h, param("w3", 6*8*8, 3), false, false), nil, false)
	})
	r := rand.New(rand.NewPCG(9, 10))
	for _, name := range stats {
		c.params[name+".mean"] = randF32(t, r, 0.1, 6)
		c.params[name+".var"] = randF32(t, r, 0.1, 6)
		for i := range c.params[name+".var"].F32() {
			c.params[name+".var"].F32()[i] += 1
		}
	}
	c.feed("x", randF32(t, r, 1, 16, 2, 16, 16))
	return c
}

// countOps counts the top-level ops of p named name.
func countOps(p *ir.Program, name string) int {
	n := 0
	for _, op := range p.Body().Ops() {
		if op.Name() == name {
			n++
		}
	}
	return n
}

// At its floor, and at every budget from half its natural peak up that
// fits, the step of a convnet with batch norms runs split over the batch
// through them: the statistics summed over the pieces, the pieces
// normalised, batch_norm_grad's sums over the pieces and each piece's dx.
// It computes the same bits (the loss, every gradient and the running
// statistics written back), peaks where the planner says, under the
// budget, and so do batches of other sizes.
func TestSplitRunsBatchNormsInPasses(t *testing.T) {
	c := bnnet(t)
	defer c.release()
	natural, err := c.plan(c.p)
	if err != nil {
		t.Fatal(err)
	}
	_, err = remat.Fit(c.p, remat.Options{Budget: 1, Backward: c.backward, Plan: c.plan, Feeds: c.types})
	var floor *remat.FloorError
	if !errors.As(err, &floor) {
		t.Fatalf("a budget of 1 byte: %v", err)
	}
	through := false
	for _, budget := range []int64{floor.Floor, natural.Peak / 2, natural.Peak * 7 / 10} {
		if budget < floor.Floor {
			continue
		}
		res := c.fit(t, budget)
		passes := countOps(res.Program, "batch_norm_sum_acc") > 0 && countOps(res.Program, "batch_norm_grad_sum_acc") > 0
		t.Logf("budget %d (natural %d, floor %d): peak %d, splits %+v, through batch norms %v", budget, natural.Peak, floor.Floor, res.Peak, res.Splits, passes)
		through = through || passes
		c.check(t, res, budget, true)
	}
	if !through {
		t.Fatalf("no budget split through a batch norm: the test checks nothing")
	}
	res := c.fit(t, floor.Floor)
	for _, n := range []int{5, 1, 24} {
		c.feed("x", randF32(t, rand.New(rand.NewPCG(11, uint64(n))), 1, n, 2, 16, 16))
		c.check(t, res, floor.Floor, false)
	}
}
