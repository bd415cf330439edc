package exec_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
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

// The backward pass of a loop keeps a tape that grows with the trip
// count: planned without the path, the plan gives the growth per trip,
// and Peak + PerTrip·(T − 1) is the measured peak of a run of T trips.
func TestPlanPerTripOfALoopsBackward(t *testing.T) {
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F32, 8, 64)
	n := ops.Data(b, "n", ir.I64)
	w := ops.Parameter(b, "w", ir.F32, 64, 64)
	zero := ops.Full(b, ir.I64, 0)
	outs := b.While(ops.LessThan(b, zero, n), []*ir.Value{zero, x}, func(b *ir.Builder, args []*ir.Value) (*ir.Value, []*ir.Value) {
		i1 := ops.Add(b, args[0], ops.Full(b, ir.I64, 1))
		h := ops.Tanh(b, ops.Matmul(b, args[1], w, false, false))
		return ops.LessThan(b, i1, n), []*ir.Value{i1, h}
	})
	loss := ops.ReduceSum(b, outs[1], nil, false)
	grads, err := autodiff.Backward(b, loss, []*ir.Value{w})
	if err != nil {
		t.Fatal(err)
	}
	ops.Fetch(b, "loss", loss)
	ops.Fetch(b, "w@GRAD", grads[0])
	p, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	a := memory.New(memory.Options{})
	var path []bool
	x1, err := exec.Compile(p, exec.Options{Alloc: a, Conditions: func(_ *ir.Op, c bool) { path = append(path, c) }})
	if err != nil {
		t.Fatal(err)
	}
	wv, _ := tensor.Zeros(a, tensor.F32, 64, 64)
	x1.Store().Set("w", wv)
	defer x1.Store().Release()
	types := map[string]ir.Type{"x": ir.TensorOf(ir.F32, 8, 64), "n": ir.TensorOf(ir.I64)}
	plan, err := x1.Plan(exec.PlanOptions{Feeds: types})
	if err != nil {
		t.Fatal(err)
	}
	if plan.PerTrip <= 0 {
		t.Fatalf("PerTrip %d; assumed %q", plan.PerTrip, plan.Assumed)
	}
	host := memory.New(memory.Options{})
	xv, _ := tensor.Zeros(host, tensor.F32, 8, 64)
	defer xv.Release()
	for _, trips := range []int{1, 2, 5, 9} {
		nv, _ := tensor.FromI64(host, []int64{int64(trips)}, []int{}...)
		peak, _, exact := measureAndPlan(t, x1, &path, map[string]*tensor.Tensor{"x": xv, "n": nv}, false)
		nv.Release()
		if want := plan.Peak + plan.PerTrip*int64(trips-1); peak != want || exact.Peak != peak {
			t.Errorf("%d trips: measured peak %d, formula %d + %d×%d = %d, exact plan %d", trips, peak, plan.Peak, plan.PerTrip, trips-1, want, exact.Peak)
		}
	}
}

// checkPeakAt runs p once more, noting the ops as they finish (the memory
// log) and the allocated bytes after every allocation, and checks that
// plan.PeakAt names the op that was running when the peak was first
// reached — the first op to finish after it — and the ops around it.
func checkPeakAt(t *testing.T, p *ir.Program, opts exec.Options, feeds map[string]*tensor.Tensor, path []bool, plan *exec.Plan) {
	t.Helper()
	var done []*ir.Op
	a := opts.Alloc
	max, at := a.Stats().Allocated.Current, -1
	var profile []int64 // the most allocated during each top-level op
	hi := max
	opts.MemoryLog = func(r exec.MemoryRecord) {
		done = append(done, r.Node)
		if r.Depth == 0 {
			profile = append(profile, hi)
			hi = r.Allocated
		}
	}
	x, err := exec.Compile(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	a.Observe(func(e memory.Event) {
		if e.Kind == "alloc" {
			hi = maxOf(hi, e.Allocated)
		}
		if e.Kind == "alloc" && e.Allocated > max {
			max, at = e.Allocated, len(done)
		}
	})
	res, err := x.Run(context.Background(), feeds)
	a.Observe(nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Release()
	if !slices.Equal(profile, plan.Profile) {
		t.Fatalf("the run's profile is %v, the plan's %v (path %v)\n%s", profile, plan.Profile, path, p)
	}
	if at < 0 {
		if len(plan.PeakAt) != 0 {
			t.Fatalf("nothing was allocated, but PeakAt is %v", plan.PeakAt)
		}
		return
	}
	n := len(plan.PeakAt)
	if n == 0 || plan.PeakAt[n-1] != done[at] {
		t.Fatalf("the peak was reached in %q at %s; PeakAt %v (path %v)\n%s", done[at].Name(), done[at].Pos, plan.PeakAt, path, p)
	}
	for i, op := range plan.PeakAt {
		if want := (*ir.Op)(nil); i > 0 {
			want = plan.PeakAt[i-1]
			if op.ParentOp() != want {
				t.Fatalf("PeakAt[%d] %q is not inside PeakAt[%d]", i, op.Name(), i-1)
			}
		} else if op.ParentOp() != nil {
			t.Fatalf("PeakAt[0] %q is not at the top level", op.Name())
		}
	}
}

func maxOf(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// A value whose size depends on data is named in the planner's error.
func TestPlanNamesAValueDependentSize(t *testing.T) {
	src := `{
  (%x) = "data" () {name:"x", shape:[4], dtype:f32} : () -> tensor<4xf32>
  (%i) = "nonzero" (%x) : (tensor<4xf32>) -> tensor<1x?xi64>
  () = "fetch" (%i) {name:"i"} : (tensor<1x?xi64>) -> ()
}`
	p, err := ir.Parse("nz.pir", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	x, err := exec.Compile(p, exec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = x.Plan(exec.PlanOptions{})
	var u *exec.UnplannableError
	if !errors.As(err, &u) || u.Value != "%1" || !strings.Contains(err.Error(), "nz.pir:3:3") || !strings.Contains(err.Error(), "depends on the values") {
		t.Fatalf("got %v", err)
	}
}

// Random programs with nested if and while, views, stacks and parameters
// are planned to the byte, with and without in-place reuse.
func TestPlanMatchesRandomPrograms(t *testing.T) {
	n := 150
	if testing.Short() {
		n = 40
	}
	const R, C = 2, 3
	param := make([]float32, R*C)
	for seed := range n {
		g := &mixGen{r: rand.New(rand.NewPCG(uint64(seed), 11)), depth: 2, R: R, C: C}
		p := g.program()
		r := rand.New(rand.NewPCG(uint64(seed), 12))
		in := mixFeeds(t, r, R, C)
		for _, noDonate := range []bool{false, true} {
			a := newAlloc()
			store := exec.NewStore()
			pv, _ := tensor.FromF32(a, param, R, C)
			store.Set("p", pv)
			var path []bool
			x, err := exec.Compile(p, exec.Options{Alloc: a, Store: store, Threads: 1, NoDonate: noDonate,
				Conditions: func(_ *ir.Op, c bool) { path = append(path, c) }})
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			peak, end, plan := measureAndPlan(t, x, &path, in, false)
			if plan.Peak != peak || plan.End != end {
				t.Fatalf("seed %d NoDonate %v: planned peak %d and end %d, measured %d and %d\n%s", seed, noDonate, plan.Peak, plan.End, peak, end, p)
			}
			checkPeakAt(t, p, exec.Options{Alloc: a, Store: store, Threads: 1, NoDonate: noDonate}, in, path, plan)
			store.Release()
		}
		releaseFeeds(in)
	}
}

// With PlanOptions.Replay the planner meets the allocator as the run
// does: on the random programs, under limits from the peak down and with
// small chunks (so that holes and chunk boundaries matter), a run and the
// replayed plan run out of memory at the same op or both fit, and the
// replay leaves its allocator as it found it.
func TestPlanReplayMeetsTheAllocatorAsTheRunDoes(t *testing.T) {
	n := 60
	if testing.Short() {
		n = 20
	}
	const R, C = 4, 5 // 80-byte tensors beside 64-byte scalars: holes of two sizes
	param := make([]float32, R*C)
	agreeOOM, fragmented := 0, 0
	for seed := range n {
		g := &mixGen{r: rand.New(rand.NewPCG(uint64(seed), 11)), depth: 2, R: R, C: C}
		p := g.program()
		in := mixFeeds(t, rand.New(rand.NewPCG(uint64(seed), 12)), R, C)
		var path []bool
		x, err := exec.Compile(p, exec.Options{Threads: 1, Conditions: func(_ *ir.Op, c bool) { path = append(path, c) }})
		if err != nil {
			t.Fatal(err)
		}
		pv, _ := tensor.FromF32(x.Allocator(), param, R, C)
		x.Store().Set("p", pv)
		peak, _, _ := measureAndPlan(t, x, &path, in, false)
		x.Store().Release()
		types := map[string]ir.Type{}
		for name, f := range in {
			types[name] = ir.TensorOf(ir.DType(f.DType()), f.Shape()...)
		}
		for _, limit := range []int64{peak + 128, peak + 64, peak, peak - 64, peak - 128, peak / 2} {
			if limit <= 0 {
				continue
			}
			opts := memory.Options{Limit: limit, ChunkSize: 384}
			// The run.
			a := memory.New(opts)
			store := exec.NewStore()
			pv, err := tensor.FromF32(a, param, R, C)
			if err != nil {
				store.Release()
				continue // not even the parameter fits
			}
			store.Set("p", pv)
			run, err := exec.Compile(p, exec.Options{Alloc: a, Store: store, Threads: 1})
			if err != nil {
				t.Fatal(err)
			}
			res, runErr := run.Run(context.Background(), in)
			if runErr == nil {
				res.Release()
			}
			// The replay, on an allocator in the state the run began in.
			b := memory.New(opts)
			held, _ := b.Alloc(pv.Bytes())
			_, planErr := run.Plan(exec.PlanOptions{Feeds: types, Path: path, Replay: b})
			if got, want := b.Stats().Allocated.Current, (held.Size()+63)&^63; got != want {
				t.Fatalf("seed %d limit %d: the replay left %d bytes allocated, want %d", seed, limit, got, want)
			}
			store.Release()
			var runOOM, planOOM *exec.OpError
			errors.As(runErr, &runOOM)
			errors.As(planErr, &planOOM)
			switch {
			case runErr == nil && planErr == nil:
			case runOOM != nil && planOOM != nil && runOOM.Pos == planOOM.Pos && runOOM.Op == planOOM.Op:
				agreeOOM++
				if limit >= peak {
					fragmented++
				}
			default:
				t.Fatalf("seed %d limit %d (peak %d): the run says %v, the replayed plan %v\n%s", seed, limit, peak, runErr, planErr, p)
			}
		}
		releaseFeeds(in)
	}
	if agreeOOM == 0 || fragmented == 0 {
		t.Fatalf("%d limits ran out of memory, %d of them at the peak: the test tells too little", agreeOOM, fragmented)
	}
}

// Without a path, the planner follows the conditions it can compute: a
// loop that counts to a constant, its backward and an "if" on the
// counter are planned exactly, with nothing assumed; a loop whose bound is
// a feed is still guessed.
func TestPlanFollowsConditionsItComputes(t *testing.T) {
	for _, bound := range []string{"const", "feed"} {
		b := ir.NewBuilder(ir.NewProgram())
		x := ops.Data(b, "x", ir.F32, 8, 16)
		n := ops.Full(b, ir.I64, 5)
		if bound == "feed" {
			n = ops.Data(b, "n", ir.I64)
		}
		w := ops.Parameter(b, "w", ir.F32, 16, 16)
		zero := ops.Full(b, ir.I64, 0)
		outs := b.While(ops.LessThan(b, zero, n), []*ir.Value{zero, x}, func(b *ir.Builder, args []*ir.Value) (*ir.Value, []*ir.Value) {
			i1 := ops.Add(b, args[0], ops.Full(b, ir.I64, 1))
			h := ops.Tanh(b, ops.Matmul(b, args[1], w, false, false))
			// Every other trip keeps a bigger temporary.
			odd := ops.Equal(b, ops.Mod(b, args[0], ops.Full(b, ir.I64, 2)), ops.Full(b, ir.I64, 1))
			h = b.If(odd, func(b *ir.Builder) []*ir.Value {
				big := ops.Full(b, ir.F32, 1, 64, 16)
				return []*ir.Value{ops.Add(b, h, ops.ReduceSum(b, big, []int{0}, false))}
			}, func(b *ir.Builder) []*ir.Value { return []*ir.Value{h} })[0]
			return ops.LessThan(b, i1, n), []*ir.Value{i1, h}
		})
		loss := ops.ReduceSum(b, outs[1], nil, false)
		grads, err := autodiff.Backward(b, loss, []*ir.Value{w})
		if err != nil {
			t.Fatal(err)
		}
		ops.Fetch(b, "w@GRAD", grads[0])
		p, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		var path []bool
		x1, err := exec.Compile(p, exec.Options{Conditions: func(_ *ir.Op, c bool) { path = append(path, c) }})
		if err != nil {
			t.Fatal(err)
		}
		wv, _ := tensor.Zeros(x1.Allocator(), tensor.F32, 16, 16)
		x1.Store().Set("w", wv)
		xv, _ := tensor.Zeros(host, tensor.F32, 8, 16)
		feeds := map[string]*tensor.Tensor{"x": xv}
		types := map[string]ir.Type{"x": ir.TensorOf(ir.F32, 8, 16)}
		if bound == "feed" {
			nv, _ := tensor.FromI64(host, []int64{5}, []int{}...)
			feeds["n"], types["n"] = nv, ir.TensorOf(ir.I64)
		}
		peak, _, _ := measureAndPlan(t, x1, &path, feeds, false)
		plan, err := x1.Plan(exec.PlanOptions{Feeds: types, Trips: 5})
		if err != nil {
			t.Fatal(err)
		}
		switch bound {
		case "const":
			if plan.Peak != peak || len(plan.Assumed) != 0 || plan.PerTrip != 0 {
				t.Errorf("a loop to a constant: planned %d (assumed %q, per trip %d), measured %d", plan.Peak, plan.Assumed, plan.PerTrip, peak)
			}
		case "feed":
			if len(plan.Assumed) == 0 || plan.PerTrip <= 0 {
				t.Errorf("a loop to a feed: assumed %q, per trip %d; want its trips guessed", plan.Assumed, plan.PerTrip)
			}
		}
		x1.Store().Release()
		releaseFeeds(feeds)
	}
}
