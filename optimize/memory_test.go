package optimize_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/optimize"
	"github.com/gopir/gopir/tensor"
)

// An optimized model run many times, some runs cancelled in the middle,
// keeps its allocated bytes at the parameters' after every run; releasing
// the Params (and the user's store) frees everything.
func TestOptimizedRepeatsWithoutLeaks(t *testing.T) {
	for _, name := range []string{"mlp", "cnn", "resnet18ish"} {
		t.Run(name, func(t *testing.T) {
			m := loadModel(t, name)
			a := memory.New(memory.Options{})
			cancelAt := -1
			var cancel context.CancelFunc
			seen := 0
			log := func(exec.MemoryRecord) {
				if seen++; seen == cancelAt {
					cancel()
				}
			}
			x, res, err := optimize.Compile(m.prog, m.store, exec.Options{Alloc: a, Threads: 2, MemoryLog: log, CheckLeaks: true})
			if err != nil {
				t.Fatal(err)
			}
			if fused := res.Counts[slices.IndexFunc(res.Counts, func(c optimize.Count) bool { return c.Pass == "fuse_epilogue" })]; fused.Rewrites == 0 {
				t.Fatalf("nothing fused: %s", res.Summary())
			}
			base := a.Stats().Allocated.Current
			feeds := map[string]*tensor.Tensor{"x": rebatch(t, m.cases[0].inputs["x"], 3)}
			defer releaseAll(feeds)
			reps := 40
			if name == "resnet18ish" {
				reps = 8
			}
			for i := range reps {
				var ctx context.Context
				ctx, cancel = context.WithCancel(context.Background())
				cancelAt, seen = -1, 0
				if i%3 == 2 {
					cancelAt = 2 + i%4 // a few instructions in
				}
				out, err := x.Run(ctx, feeds)
				cancel()
				switch {
				case cancelAt > 0 && !errors.Is(err, context.Canceled):
					t.Fatalf("run %d: cancelled after %d instructions, got %v", i, cancelAt, err)
				case cancelAt < 0 && err != nil:
					t.Fatalf("run %d: %v", i, err)
				case err == nil:
					out.Release()
				}
				if got := a.Stats().Allocated.Current; got != base {
					t.Fatalf("run %d: %d bytes allocated, want the parameters' %d", i, got, base)
				}
			}
			x.Store().Release()
			if got := a.Stats().Allocated.Current; got != 0 {
				t.Errorf("after releasing the Params: %d bytes still allocated on the run's allocator", got)
			}
		})
	}
}

// The planner predicts the optimized programs' peaks to the byte: the
// fused ops' workspaces and results are sized from their Infer and Work
// like every op's.
func TestPlannerExactOnOptimized(t *testing.T) {
	for _, name := range []string{"mlp", "cnn", "resnet18ish"} {
		t.Run(name, func(t *testing.T) {
			m := loadModel(t, name)
			for _, threads := range []int{1, 2} {
				for _, batch := range []int{1, 4} {
					// The parameters on the run's allocator, and only those
					// the optimized program reads once the user's store is
					// released: the allocator holds exactly the store the
					// plan counts.
					a := memory.New(memory.Options{})
					user := copyStore(t, m.store, a)
					x, _, err := optimize.Compile(m.prog, user, exec.Options{Alloc: a, Threads: threads})
					user.Release()
					if err != nil {
						t.Fatal(err)
					}
					feeds := map[string]*tensor.Tensor{"x": rebatch(t, m.cases[0].inputs["x"], batch)}
					checkPlanExact(t, fmt.Sprintf("threads %d batch %d", threads, batch), x, a, feeds)
					releaseAll(feeds)
					x.Store().Release()
				}
			}
		})
	}
}

// checkPlanExact runs x, whose allocator is a, on feeds (an "x") and
// fails unless x's plan for the feeds' types has the peak and the end
// of allocated bytes the run had.
func checkPlanExact(t *testing.T, what string, x *exec.Executable, a *memory.Allocator, feeds map[string]*tensor.Tensor) {
	t.Helper()
	a.ResetPeak()
	out, err := x.Run(context.Background(), feeds)
	if err != nil {
		t.Fatal(err)
	}
	peak, end := a.Stats().Allocated.Peak, a.Stats().Allocated.Current
	out.Release()
	plan, err := x.Plan(exec.PlanOptions{Feeds: map[string]ir.Type{"x": ir.TensorOf(ir.F32, feeds["x"].Shape()...)}})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Peak != peak || plan.End != end {
		t.Errorf("%s: planned peak %d end %d, measured %d %d", what, plan.Peak, plan.End, peak, end)
	} else {
		t.Logf("%s: peak %d bytes planned and measured", what, peak)
	}
}

// copyStore copies every tensor of s onto a, into a new store.
func copyStore(t *testing.T, s *exec.Store, a *memory.Allocator) *exec.Store {
	t.Helper()
	c := exec.NewStore()
	for _, n := range s.Names() {
		x, _ := s.Get(n)
		y, err := tensor.New(a, x.DType(), x.Shape()...)
		if err != nil {
			t.Fatal(err)
		}
		copy(y.Raw(), x.Raw())
		c.Set(n, y)
	}
	return c
}
