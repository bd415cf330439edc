package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/models"
	"github.com/gopir/gopir/tensor"
	"github.com/gopir/gopir/train"
)

// TestRepeatedRunsMakeNoGoAllocations: once a program has run on feeds of
// some shapes, running it again on them through RunInto makes no Go heap
// object, with one kernel thread and two: every kernel's parallel loop is
// a pooled job, not a closure (kernels/perf_task.go). It covers the
// exported ONNX models at batch 1 and 8, optimized for inference (package
// optimize) and as imported (resnet18ish optimized only, when its .onnx
// file is there and not in -short mode), the deployed ppyoloe_s at a small
// image size, optimized and not, at batch 1 and 2, and the evaluation
// program of every other zoo model, with the pack cache on.
func TestRepeatedRunsMakeNoGoAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("under the race detector sync.Pool drops objects at random")
	}
	models, err := ModelsDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, model := range InferenceModels {
		man, err := ReadManifest(models, model)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(man.ModelPath()); modelMissing(err) || (model == "resnet18ish" && testing.Short()) {
			continue
		}
		for _, optimized := range []bool{true, false} {
			if !optimized && model == "resnet18ish" {
				continue // the imported program's kernels are the optimized one's, less the fused ones
			}
			for _, threads := range []int{1, 2} {
				in, err := NewInference(models, model, threads, optimized)
				if err != nil {
					t.Fatal(err)
				}
				for _, batch := range []int{1, 8} {
					if !man.Batched() && batch > 1 {
						continue
					}
					feeds, err := in.Feeds(batch)
					if err != nil {
						t.Fatal(err)
					}
					checkRunAllocs(t, fmt.Sprintf("%s optimized=%v batch %d threads %d", model, optimized, batch, threads), func() {
						if err := in.Run(feeds); err != nil {
							t.Fatal(err)
						}
					})
					ReleaseFeeds(feeds)
				}
				in.Close()
			}
		}
	}
	for _, optimized := range []bool{true, false} {
		for _, threads := range []int{1, 2} {
			cfg := train.Config{Model: DetModel, Batch: DetBatch, ImageSize: detAllocsSize}
			d, err := newDetInference(cfg, threads, []int{1, 2}, optimized)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range []int{1, 2} {
				checkRunAllocs(t, fmt.Sprintf("%s %d×%d deployed optimized=%v batch %d threads %d", DetModel, detAllocsSize, detAllocsSize, optimized, b, threads), func() {
					if err := d.Run(b); err != nil {
						t.Fatal(err)
					}
				})
			}
			d.Close()
		}
	}
	for _, name := range zooModels(t) {
		for _, threads := range []int{1, 2} {
			run, done := zooEval(t, name, threads)
			checkRunAllocs(t, fmt.Sprintf("%s evaluation threads %d", name, threads), run)
			done()
		}
	}
}

// detAllocsSize is the image side TestRepeatedRunsMakeNoGoAllocations
// runs the detector at: small, so that the test stays fast, and large
// enough that its resizes, concats and elementwise ops go parallel with
// two threads.
const detAllocsSize = 128

// zooModels lists the zoo's small models. ppyoloe_s is left out: its
// evaluation at 320×320 runs resize, concat, reductions and unary ops on
// tensors large enough to go parallel, and those kernels still build a
// closure per parallel call (like the convolutions), which this test
// would count; it also takes a minute and a half to check.
func zooModels(t *testing.T) []string {
	var names []string
	for _, n := range models.Names() {
		if n != "ppyoloe_s" {
			names = append(names, n)
		}
	}
	if len(names) < 5 {
		t.Fatalf("zoo %v: want mlp, lenet, gate, tinydet and rnn", names)
	}
	return names
}

// zooEval compiles model's evaluation program over freshly created
// parameters and returns a run on its first training batch's inputs (the
// evaluation program's feeds are a subset), and a function that releases
// everything.
func zooEval(t *testing.T, model string, threads int) (run func(), done func()) {
	t.Helper()
	tr, err := train.New(train.Config{Model: model, Steps: 1, Batch: 8})
	if err != nil {
		t.Fatal(err)
	}
	prog, err := train.BuildEvaluation(model)
	if err != nil {
		t.Fatal(err)
	}
	x, err := exec.Compile(prog, exec.Options{Alloc: tr.Allocator(), Store: tr.Store(), Threads: threads, PackCache: InferencePackCache})
	if err != nil {
		t.Fatal(err)
	}
	task, err := models.New(model)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Load(models.DataConfig{Batch: 8, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	batch, err := task.TrainFeeds(tr.Allocator(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	feeds := map[string]*tensor.Tensor{}
	for _, f := range x.Feeds() {
		feeds[f.Name] = batch.Tensors[f.Name]
	}
	res := exec.Results{}
	run = func() {
		if err := x.RunInto(context.Background(), feeds, res); err != nil {
			t.Fatal(err)
		}
		res.Release()
	}
	return run, func() {
		batch.Release()
		x.ReleasePacked()
		tr.Close()
	}
}

// checkRunAllocs counts the Go allocations of repeated runs of run, once
// run has reached its steady state (testing.AllocsPerRun is not used: its
// GOMAXPROCS(1) would keep every kernel on one goroutine), and fails on
// any made on (about) every run. Where the allocations come from is read
// from the memory profile, which a garbage collection publishes; a
// collection also empties the sync.Pools that recycle the kernels' job
// objects and scratch, so each window first runs ten times to fill them
// again (with two threads a pool's objects settle on the helpers over a
// few runs), and the counts of windows of n, 2n and 3n runs tell what n
// more runs allocate, twice.
func checkRunAllocs(t *testing.T, what string, run func()) {
	t.Helper()
	const n = 10
	old := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = old }()
	window := func(runs int) (map[string]int64, float64) {
		before := allocStacks()
		for range 10 {
			run()
		}
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		for range runs {
			run()
		}
		runtime.ReadMemStats(&m1)
		after := allocStacks()
		for stack, c := range after {
			after[stack] = c - before[stack]
		}
		return after, float64(m1.Mallocs-m0.Mallocs) / float64(runs)
	}
	short, _ := window(n)
	long, perRun := window(2 * n)
	if perRun < 0.5 {
		return // a sync.Pool emptied by a garbage collection now and then
	}
	longer, _ := window(3 * n)
	var every []string
	for stack, c := range long {
		// Made on about every run: n more runs made at least n/2 more,
		// twice over (a pool refilled now and then does not, twice).
		c1, c2 := c-short[stack], longer[stack]-c
		if c1 >= n/2 && c2 >= n/2 {
			every = append(every, fmt.Sprintf("%d and %d in %d runs: %s", c1, c2, n, stack))
		}
	}
	if len(every) > 0 {
		slices.Sort(every)
		t.Errorf("%s: %.2f Go allocations per run:\n%s", what, perRun, strings.Join(every, "\n"))
	} else {
		t.Logf("%s: %.2f Go allocations per run, none made on every run (a pool refilled now and then)", what, perRun)
	}
}

// allocStacks returns the allocation counts of the memory profile by
// stack (function names), after the garbage collections that publish the
// latest ones.
func allocStacks() map[string]int64 {
	runtime.GC()
	runtime.GC()
	var recs []runtime.MemProfileRecord
	n, _ := runtime.MemProfile(nil, true)
	for {
		recs = make([]runtime.MemProfileRecord, n+50)
		var ok bool
		if n, ok = runtime.MemProfile(recs, true); ok {
			recs = recs[:n]
			break
		}
	}
	out := map[string]int64{}
	for _, r := range recs[:len(recs):len(recs)] {
		var names []string
		frames := runtime.CallersFrames(r.Stack())
		for {
			f, more := frames.Next()
			if strings.Contains(f.Function, "gopir/") {
				names = append(names, f.Function)
			}
			if !more {
				break
			}
		}
		if stack := strings.Join(names, " < "); !strings.Contains(stack, "bench.allocStacks") { // not this function's own
			out[stack] += r.AllocObjects
		}
	}
	return out
}
