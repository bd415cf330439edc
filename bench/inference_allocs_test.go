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

// convKernels are the functions whose Go allocations a run may still
// make: the convolution kernels build a closure per call for their
// parallel loops (kernels/conv*.go, which this test leaves to their own
// work). Every other allocation fails the test.
var convKernels = []string{"gopir/kernels.Conv2D", "gopir/kernels.conv2D", "gopir/kernels.im2col"}

// TestRepeatedRunsMakeNoGoAllocations: once a program has run on feeds of
// some shapes, running it again on them through RunInto makes no Go heap
// object, with one kernel thread and two — apart from the convolution
// kernels' own closures, which every allocation left must come from. It
// covers the exported ONNX models at batch 1 and 8, optimized for
// inference (package optimize) and as imported (resnet18ish optimized
// only, when its .onnx file is there and not in -short mode), and the
// evaluation program of every zoo model, with the pack cache on.
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
	for _, name := range zooModels(t) {
		for _, threads := range []int{1, 2} {
			run, done := zooEval(t, name, threads)
			checkRunAllocs(t, fmt.Sprintf("%s evaluation threads %d", name, threads), run)
			done()
		}
	}
}

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
// any made outside the convolution kernels. Where the allocations come
// from is read from the memory profile, which a garbage collection
// publishes; a collection also empties the sync.Pools that recycle the
// kernels' job objects, so each window first runs twice to fill them
// again, and the count of a window of 2n runs less that of a window of n
// runs is what n runs allocate.
func checkRunAllocs(t *testing.T, what string, run func()) {
	t.Helper()
	const n = 10
	old := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = old }()
	window := func(runs int) (map[string]int64, float64) {
		before := allocStacks()
		run()
		run()
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
	var outside []string
	for stack, c := range long {
		if c -= short[stack]; c >= n/2 && !slices.ContainsFunc(convKernels, func(f string) bool { return strings.Contains(stack, f) }) {
			outside = append(outside, fmt.Sprintf("%d in %d runs: %s", c, n, stack))
		}
	}
	if len(outside) > 0 {
		slices.Sort(outside)
		t.Errorf("%s: %.2f Go allocations per run, some outside the convolution kernels:\n%s", what, perRun, strings.Join(outside, "\n"))
	} else {
		t.Logf("%s: %.2f Go allocations per run, all in the convolution kernels", what, perRun)
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
