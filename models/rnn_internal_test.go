package models

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/gopir/gopir/internal/fdcheck"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/data"
	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/nn"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// rnnGradProgram builds the rnn task's loss in dtype dt, appends its
// gradient with respect to every trainable parameter, and compiles it with
// the parameters created from seed. Fetches: "loss" and "grad:NAME".
func rnnGradProgram(t *testing.T, task *rnnTask, dt ir.DType, seed int64) (*exec.Executable, *memory.Allocator, *exec.Store, []string) {
	t.Helper()
	b := ir.NewBuilder(ir.NewProgram())
	m := nn.NewModule(dt, true)
	outs, err := task.Build(b, m)
	if err != nil {
		t.Fatal(err)
	}
	grads, err := autodiff.Backward(b, outs.Loss, m.Trainable())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range m.Params() {
		if s.Trainable {
			names = append(names, s.Name)
		}
	}
	ops.Fetch(b, "loss", outs.Loss)
	for i, g := range grads {
		ops.Fetch(b, "grad:"+names[i], g)
	}
	p, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	alloc := memory.New(memory.Options{})
	store := exec.NewStore()
	t.Cleanup(store.Release)
	if err := m.Create(alloc, seed, store.Set); err != nil {
		t.Fatal(err)
	}
	e, err := exec.Compile(p, exec.Options{Alloc: alloc, Store: store, Threads: 1, CheckLeaks: true})
	if err != nil {
		t.Fatal(err)
	}
	return e, alloc, store, names
}

// rnnBatchFeeds returns the training feeds of samples idx (float32: an
// f64 build casts them where they enter).
func rnnBatchFeeds(t *testing.T, a *memory.Allocator, s *data.Sequences, idx []int) Feeds {
	t.Helper()
	f, err := rnnFeeds(a, s, idx, true)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestRNNGradientMatchesFiniteDifferences checks the gradient through the
// while loop (autodiff's stacks) of an f64 build of the model against
// central differences, for elements of every parameter.
func TestRNNGradientMatchesFiniteDifferences(t *testing.T) {
	for _, static := range []bool{false, true} {
		t.Run(fmt.Sprintf("static_batch=%v", static), func(t *testing.T) {
			rnnGradCheck(t, rnnConfig{Hidden: 5, NTrain: 64, NTest: 8, MinLen: 5, MaxLen: 5, D: 4, Classes: 3, EvalBatch: 8, StaticBatch: static})
		})
	}
}

func rnnGradCheck(t *testing.T, cfg rnnConfig) {
	task := newRNN(cfg)
	if err := task.Load(DataConfig{Batch: 4, Seed: 11}); err != nil {
		t.Fatal(err)
	}
	e, alloc, store, names := rnnGradProgram(t, task, ir.F64, 3)
	feeds := rnnBatchFeeds(t, alloc, task.train, []int{0, 1, 2, 3})
	defer feeds.Release()
	if T := feeds.Tensors["x"].Shape()[0]; T != 5 {
		t.Fatalf("T = %d, want 5", T)
	}
	ctx := context.Background()
	res, err := e.Run(ctx, feeds.Tensors)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	loss := func() float64 {
		r, err := e.Run(ctx, feeds.Tensors)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Release()
		return r["loss"].F64()[0]
	}
	checked, worst := 0, 0.0
	for _, name := range names {
		p, _ := store.Get(name)
		g := res["grad:"+name].F64()
		vals := p.F64()
		// A spread of elements: first, last and a few in between.
		for _, k := range []int{0, len(vals) / 3, len(vals) / 2, 2 * len(vals) / 3, len(vals) - 1} {
			orig := vals[k]
			num := fdcheck.Derivative(orig, func(d float64) float64 {
				vals[k] = orig + d
				return loss()
			})
			vals[k] = orig
			diff := math.Abs(num - g[k])
			if !fdcheck.Close(g[k], num, 1e-5) {
				t.Errorf("%s[%d]: autodiff %.10g, finite differences %.10g", name, k, g[k], num)
			}
			worst = max(worst, diff)
			checked++
		}
	}
	if checked < 20 {
		t.Fatalf("checked only %d elements", checked)
	}
	t.Logf("%d elements of %d parameters, largest |autodiff − finite difference| %.3g", checked, len(names), worst)
}

// TestRNNPeakMemoryIsLinearInT runs forward and backward on batches of one
// size and lengths 1..16 in mixed order: the step's peak is exactly affine
// in T (the stacks hold one set of residuals per iteration), and after
// every step the allocator is back to the parameters' bytes. It does so
// for a static and a dynamic batch dim; the static one needs fewer bytes
// per iteration (no residuals kept only for their shape).
func TestRNNPeakMemoryIsLinearInT(t *testing.T) {
	slopes := map[bool]int64{}
	for _, static := range []bool{true, false} {
		cfg := rnnDefaultConfig()
		cfg.MinLen, cfg.MaxLen, cfg.NTrain, cfg.NTest = 1, 16, 2048, 8
		cfg.StaticBatch = static
		slopes[static] = rnnPeakSlope(t, cfg)
	}
	if !(slopes[true] < slopes[false]) {
		t.Errorf("bytes per iteration: %d with a static batch, %d with a dynamic one", slopes[true], slopes[false])
	}
}

func rnnPeakSlope(t *testing.T, cfg rnnConfig) int64 {
	const B = 16
	task := newRNN(cfg)
	if err := task.Load(DataConfig{Batch: B, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	e, alloc, store, _ := rnnGradProgram(t, task, ir.F32, 1)
	x := e.Program().Lookup("data", "x").Result(0).Type()
	if got := x.Dims[1] != ir.Dynamic; got != cfg.StaticBatch {
		t.Fatalf("x is %s; static batch dim %v, want %v", x, got, cfg.StaticBatch)
	}
	byLen := map[int][]int{}
	for i, l := range task.train.Lengths() {
		if len(byLen[l]) < B {
			byLen[l] = append(byLen[l], i)
		}
	}
	base := alloc.Stats().Allocated.Current // the parameters, at aligned sizes
	if base < store.Bytes() {
		t.Fatalf("allocated %d before any step, store holds %d", base, store.Bytes())
	}
	peak := map[int]int64{}
	for _, T := range []int{7, 3, 12, 1, 16, 5, 9, 2, 14, 4, 11, 6, 15, 8, 13, 10, 16, 1, 7} {
		if len(byLen[T]) < B {
			t.Fatalf("fewer than %d samples of length %d", B, T)
		}
		feeds := rnnBatchFeeds(t, alloc, task.train, byLen[T])
		alloc.ResetPeak()
		res, err := e.Run(context.Background(), feeds.Tensors)
		if err != nil {
			t.Fatalf("T=%d: %v", T, err)
		}
		p := alloc.Stats().Allocated.Peak
		res.Release()
		feeds.Release()
		if got := alloc.Stats().Allocated.Current; got != base {
			t.Fatalf("T=%d: allocated %d bytes after the step, %d before", T, got, base)
		}
		if old, seen := peak[T]; seen && old != p {
			t.Errorf("T=%d: peak %d, earlier %d", T, p, old)
		}
		peak[T] = p
	}
	slope := peak[2] - peak[1]
	if slope <= 0 {
		t.Fatalf("peak does not grow with T: %d at T=1, %d at T=2", peak[1], peak[2])
	}
	for T := 2; T <= 16; T++ {
		if d := peak[T] - peak[T-1]; d != slope {
			t.Errorf("peak(%d)-peak(%d) = %d, want %d (peaks %v)", T, T-1, d, slope, peak)
		}
	}
	t.Logf("static batch %v: peak = %d + %d·T bytes above the %d bytes of parameters (B=%d, H=%d)",
		cfg.StaticBatch, peak[1]-slope-base, slope, base, B, cfg.Hidden)
	return slope
}

// TestRNNZeroTrips runs forward and backward with T = 0: the loop runs
// no iteration, the state stays zero, so only the head's bias gets a
// nonzero gradient, and nothing is left behind.
func TestRNNZeroTrips(t *testing.T) {
	for _, static := range []bool{false, true} {
		cfg := rnnConfig{Hidden: 6, NTrain: 32, NTest: 8, MinLen: 3, MaxLen: 3, D: 4, Classes: 3, EvalBatch: 8, StaticBatch: static}
		task := newRNN(cfg)
		if err := task.Load(DataConfig{Batch: 4, Seed: 1}); err != nil {
			t.Fatal(err)
		}
		e, alloc, _, names := rnnGradProgram(t, task, ir.F32, 1)
		base := alloc.Stats().Allocated.Current
		x, err := tensor.Zeros(alloc, tensor.F32, 0, 4, cfg.D)
		if err != nil {
			t.Fatal(err)
		}
		trips, _ := tensor.Scalar(alloc, tensor.I64, 0)
		label, _ := tensor.FromI64(alloc, []int64{0, 1, 2, 0}, 4)
		feeds := Feeds{Tensors: map[string]*tensor.Tensor{"x": x, "T": trips, "label": label}}
		res, err := e.Run(context.Background(), feeds.Tensors)
		if err != nil {
			t.Fatalf("static batch %v: %v", static, err)
		}
		for _, n := range names {
			g := res["grad:"+n].F32()
			nonzero := false
			for _, v := range g {
				nonzero = nonzero || v != 0
			}
			if nonzero != (n == "head.b") {
				t.Errorf("static batch %v: gradient of %s: nonzero %v", static, n, nonzero)
			}
		}
		res.Release()
		feeds.Release()
		if got := alloc.Stats().Allocated.Current; got != base {
			t.Errorf("static batch %v: allocated %d after the run, %d before", static, got, base)
		}
	}
}
