package remat_test

import (
	"testing"

	"github.com/gopir/gopir/ir"
)

// The pieces of a split run their convolutions fused with the bias add
// and the ReLU after them, their pools without indices, and, in the
// forward pieces (which keep only the cut), the first block's pool inside
// its convolution; the ops outside the pieces stay as they were. The
// step computes the bits of the unsplit one and peaks where the planner
// says (TestRematerializedRunsReturnToBaseline runs the same split many
// times and out of memory at every limit).
func TestSplitPiecesRunFused(t *testing.T) {
	c := convnet(t, false)
	defer c.release()
	natural, err := c.plan(c.p)
	if err != nil {
		t.Fatal(err)
	}
	budget := natural.Peak / 2
	res := c.fit(t, budget)
	if len(res.Splits) != 1 {
		t.Fatalf("splits %+v, want one", res.Splits)
	}
	pieces := res.Splits[0].Pieces
	p := res.Program
	for _, name := range []string{"conv2d", "add", "relu", "max_pool2d"} {
		if n := countOps(p, name); n != 0 {
			t.Errorf("%d %s ops left in the pieces", n, name)
		}
	}
	// Forward: two fused convolutions a piece, the first with its pool;
	// backward: the two again, recomputed, the pool apart (the backward
	// reads the ReLU's output).
	if n := countOps(p, "conv2d_fused"); n != 4*pieces {
		t.Errorf("%d conv2d_fused ops, want %d", n, 4*pieces)
	}
	if n := countPooled(p); n != pieces {
		t.Errorf("%d convolutions with their pool, want %d", n, pieces)
	}
	if n := countOps(p, "max_pool2d_values"); n != pieces {
		t.Errorf("%d max_pool2d_values, want %d", n, pieces)
	}
	for _, name := range []string{"matmul", "relu_grad", "max_pool2d_grad_x"} {
		want := countOps(c.p, name)
		if name != "matmul" {
			want *= pieces
		}
		if n := countOps(p, name); n != want {
			t.Errorf("%d %s ops, want %d", n, name, want)
		}
	}
	c.check(t, res, budget, true)
}

func countPooled(p *ir.Program) int {
	n := 0
	for _, op := range p.Body().Ops() {
		if op.Name() == "conv2d_fused" && op.Attrs.Has("pool") {
			if pool, err := op.Attrs.Str("pool"); err == nil && pool == "max2x2" {
				n++
			}
		}
	}
	return n
}
