package remat_test

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/remat"
)

// convnet is a small LeNet: two conv blocks (conv, bias, ReLU, pool) over
// a batch of 16 whose first dim is the dynamic one, then a dense layer and
// the sum. Its peak is the first block's activations, sample by sample:
// what a split over the batch lowers. With mean, the first block's output
// is also read by a sum over the batch in the forward pass, which no
// split can run in pieces.
func convnet(t *testing.T, mean bool) *case_ {
	c := build(t, func(b *ir.Builder, param func(string, ...int) *ir.Value) *ir.Value {
		x := ops.Data(b, "x", ir.F32, -1, 2, 16, 16)
		one := []int{1, 1}
		h := ops.Conv2D(b, x, param("w1", 6, 2, 3, 3), one, one, one, 1)
		h = ops.Relu(b, ops.Add(b, h, param("b1", 6, 1, 1)))
		h, _ = ops.MaxPool2D(b, h, []int{2, 2}, []int{2, 2}, []int{0, 0})
		if mean {
			h = ops.Subtract(b, h, ops.ReduceMean(b, h, []int{0}, true))
		}
		h = ops.Conv2D(b, h, param("w2", 8, 6, 3, 3), one, one, one, 1)
		h = ops.Relu(b, ops.Add(b, h, param("b2", 8, 1, 1)))
		h = ops.Flatten(b, h, 1, 3)
		return ops.ReduceSum(b, ops.Matmul(b, h, param("w3", 8*8*8, 3), false, false), nil, false)
	})
	c.feed("x", randF32(t, rand.New(rand.NewPCG(3, 4)), 1, 16, 2, 16, 16))
	return c
}

// At half the natural peak the convnet's step runs over the batch in
// pieces of kernels.BatchGroup samples: the forward trunk piece by piece,
// then its backward, each piece recomputing the trunk. It computes the
// same bits (the loss and every gradient, the conv filters' and biases'
// sums over the batch among them) and peaks where the planner says.
func TestFitSplitsOverTheBatch(t *testing.T) {
	c := convnet(t, false)
	defer c.release()
	natural, err := c.plan(c.p)
	if err != nil {
		t.Fatal(err)
	}
	budget := natural.Peak / 2
	res := c.fit(t, budget)
	if len(res.Splits) != 1 || res.Splits[0].Pieces != 4 || res.Splits[0].Samples != 4 || res.Splits[0].BackOps == 0 {
		t.Fatalf("at half of %d bytes: splits %+v, want one in 4 pieces of 4 samples", natural.Peak, res.Splits)
	}
	t.Logf("natural %d, budget %d, planned %d, split %+v", natural.Peak, budget, res.Peak, res.Splits[0])
	c.check(t, res, budget, true)
	// Another batch of the same size: still the same bits. Batches of
	// other sizes than the one planned for run too (the last piece takes
	// what is left, whole groups; pieces past the end are empty) and give
	// the same bits as well.
	c.feed("x", randF32(t, rand.New(rand.NewPCG(5, 6)), 2, 16, 2, 16, 16))
	c.check(t, res, budget, true)
	for _, n := range []int{6, 1, 20} {
		c.feed("x", randF32(t, rand.New(rand.NewPCG(7, uint64(n))), 1, n, 2, 16, 16))
		c.check(t, res, budget, false)
	}
}

// A value that a forward op sums over the batch cannot be split at: the
// split stops before it, and what lies past it is not split.
func TestSplitStopsAtSumsOverTheBatch(t *testing.T) {
	c := convnet(t, true)
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
	res := c.fit(t, floor.Floor)
	split := false
	for _, s := range res.Splits {
		split = true
		if s.Op != "max_pool2d" && s.Op != "relu" && s.Op != "add" && s.Op != "conv2d" {
			t.Fatalf("split at %s (%s): past the batch's mean", s.Cut, s.Op)
		}
	}
	t.Logf("floor %d of %d: splits %+v", floor.Floor, natural.Peak, res.Splits)
	if !split {
		t.Fatalf("no split at the floor (%d of %d bytes): the test checks nothing", floor.Floor, natural.Peak)
	}
	c.check(t, res, floor.Floor, true)
}

// Between the floor and the natural peak a split widens its pieces and
// keeps the forward pieces of what the budget allows (its backward pieces
// recompute less): some budget keeps a value, another runs pieces of 8
// samples; every budget computes the same bits.
func TestSplitKeepsWhatTheBudgetAllows(t *testing.T) {
	c := convnet(t, false)
	defer c.release()
	if kept, wide := splitBudgets(t, c); !kept || !wide {
		t.Fatalf("kept %v, wider pieces %v: the test checks nothing", kept, wide)
	}
}

// splitBudgets fits c at budgets from half its natural peak up, checks
// each, and reports whether a split kept a value or ran pieces wider than
// a group.
func splitBudgets(t *testing.T, c *case_) (kept, wide bool) {
	natural, err := c.plan(c.p)
	if err != nil {
		t.Fatal(err)
	}
	for pct := int64(50); pct < 100; pct += 5 {
		budget := natural.Peak * pct / 100
		res, err := remat.Fit(c.p, remat.Options{Budget: budget, Backward: c.backward, Plan: c.plan, Feeds: c.types})
		var floor *remat.FloorError
		if errors.As(err, &floor) {
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		for _, s := range res.Splits {
			t.Logf("%d%%: %+v (recomputed %d FLOPs)", pct, s, res.RecomputedFlops)
			kept = kept || len(s.Kept) > 0
			wide = wide || s.Samples > 4
		}
		c.check(t, res, budget, true)
	}
	return kept, wide
}
