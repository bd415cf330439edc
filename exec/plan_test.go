package exec_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

// measureAndPlan runs x once on feeds, recording its path, and plans the
// same run; it returns the measured peak and end, and the plan.
func measureAndPlan(t *testing.T, x *exec.Executable, path *[]bool, feeds map[string]*tensor.Tensor, feedsAllocated bool) (int64, int64, *exec.Plan) {
	t.Helper()
	a := x.Allocator()
	a.ResetPeak()
	*path = (*path)[:0]
	res, err := x.Run(context.Background(), feeds)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	peak, end := a.Stats().Allocated.Peak, a.Stats().Allocated.Current
	res.Release()
	types := map[string]ir.Type{}
	for n, f := range feeds {
		types[n] = ir.TensorOf(ir.DType(f.DType()), f.Shape()...)
	}
	plan, err := x.Plan(exec.PlanOptions{Feeds: types, FeedsAllocated: feedsAllocated, Path: *path})
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	return peak, end, plan
}

// Every program of the testdata directories, run on zero or random feeds
// (dynamic dims 2 or 3), is planned to the byte: the planner's peak and
// end equal the allocator's, following the run's path.
func TestPlanMatchesRunOnTestdata(t *testing.T) {
	var files []string
	for _, dir := range []string{"../ir/testdata", "../cmd/gopir/testdata"} {
		fs, _ := filepath.Glob(filepath.Join(dir, "*.pir"))
		files = append(files, fs...)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, file := range files {
		if base := filepath.Base(file); base == "huge.pir" || base == "bad_syntax.pir" || base == "bad_types.pir" {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		p, err := ir.Parse(file, src)
		if err != nil || ir.Verify(p) != nil {
			continue // the dialect tests' programs
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			for _, noDonate := range []bool{false, true} {
				a := memory.New(memory.Options{})
				var path []bool
				record := func(_ *ir.Op, c bool) { path = append(path, c) }
				x, err := exec.Compile(p, exec.Options{Alloc: a, NoDonate: noDonate, Conditions: record})
				if err != nil {
					t.Skipf("compile: %v", err)
				}
				host := memory.New(memory.Options{})
				feeds := map[string]*tensor.Tensor{}
				for _, s := range x.Feeds() {
					if s.Type.IsStack() {
						t.Skip("stack feeds")
					}
					dims := make([]int, s.Type.Rank())
					for i, d := range s.Type.Dims {
						if d == ir.Dynamic {
							d = 2 + r.IntN(2)
						}
						dims[i] = d
					}
					v, _ := tensor.Zeros(host, tensor.DType(s.Type.DType), dims...)
					if s.Type.DType.IsInt() && v.Len() == 1 {
						v.SetFloat64At(0, 3) // a small trip count
					}
					feeds[s.Name] = v
				}
				for _, s := range x.Params() {
					v, _ := tensor.Zeros(a, tensor.DType(s.Type.DType), s.Type.Dims...)
					x.Store().Set(s.Name, v)
				}
				peak, end, plan := measureAndPlan(t, x, &path, feeds, false)
				t.Logf("NoDonate %v: planned peak %d end %d, measured %d %d", noDonate, plan.Peak, plan.End, peak, end)
				if plan.Peak != peak || plan.End != end {
					t.Errorf("NoDonate %v: planned peak %d and end %d, measured %d and %d", noDonate, plan.Peak, plan.End, peak, end)
				}
				for _, f := range feeds {
					f.Release()
				}
				x.Store().Release()
			}
		})
	}
}
