package models_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/models"
	"github.com/gopir/gopir/tensor"
	"github.com/gopir/gopir/train"
)

// The default tests of the MNIST classifiers (mlp, lenet, gate): programs,
// feeds, a few training steps, memory, evaluation, determinism. The
// accuracy runs are TestMNISTAccuracy, behind GOPIR_LONG=1.

var mnistModels = []string{"mlp", "lenet", "gate"}

// mnistTrainer returns a trainer of cfg, closed at the end of the test.
func mnistTrainer(t *testing.T, cfg train.Config) *train.Trainer {
	t.Helper()
	tr, err := train.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return tr
}

// mnistSteps runs n training steps and returns their records.
func mnistSteps(t *testing.T, tr *train.Trainer, n int) []train.StepRecord {
	t.Helper()
	recs := make([]train.StepRecord, 0, n)
	for range n {
		r, err := tr.Step(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	return recs
}

func mnistCountOps(p *ir.Program, name string) int {
	n := 0
	p.Walk(func(op *ir.Op) bool {
		if op.Name() == name {
			n++
		}
		return true
	})
	return n
}

func TestMNISTPrograms(t *testing.T) {
	for _, name := range mnistModels {
		t.Run(name, func(t *testing.T) {
			tp, err := train.BuildTraining(train.Config{Model: name})
			if err != nil {
				t.Fatal(err)
			}
			if err := ir.Verify(tp); err != nil {
				t.Fatalf("training program: %v", err)
			}
			ep, err := train.BuildEvaluation(name)
			if err != nil {
				t.Fatal(err)
			}
			if err := ir.Verify(ep); err != nil {
				t.Fatalf("evaluation program: %v", err)
			}
			for _, c := range []struct {
				p      *ir.Program
				feeds  []string
				fetch  string
				noFeed string
			}{
				{tp, []string{"x", "label"}, "loss", ""},
				{ep, []string{"x"}, "logits", "label"},
			} {
				for _, f := range c.feeds {
					if c.p.Lookup("data", f) == nil {
						t.Errorf("no feed %q in\n%s", f, c.p)
					}
				}
				if c.noFeed != "" && c.p.Lookup("data", c.noFeed) != nil {
					t.Errorf("the evaluation program feeds %q", c.noFeed)
				}
				if c.p.Lookup("fetch", c.fetch) == nil {
					t.Errorf("no fetch %q", c.fetch)
				}
			}
			if x := ep.Lookup("data", "x").Result(0).Type(); x.String() != "tensor<?x1x28x28xf32>" {
				t.Errorf("feed x is %s", x)
			}
			// The round trip through the text format is a fixed point.
			for _, p := range []*ir.Program{tp, ep} {
				q, err := ir.Parse(name+".pir", []byte(p.String()))
				if err != nil {
					t.Fatal(err)
				}
				if q.String() != p.String() {
					t.Error("print → parse → print changed the program")
				}
			}
			ifs, evalIfs := mnistCountOps(tp, "if"), mnistCountOps(ep, "if")
			if name == "gate" {
				// The forward if and its backward.
				if ifs != 2 || evalIfs != 1 {
					t.Errorf("gate: %d ifs in the training program (want 2), %d in the evaluation program (want 1)", ifs, evalIfs)
				}
				for _, p := range []*ir.Program{tp, ep} {
					if p.Lookup("fetch", "branch") == nil {
						t.Error("gate: no fetch \"branch\"")
					}
				}
			} else if ifs+evalIfs != 0 {
				t.Errorf("%s has %d ifs", name, ifs+evalIfs)
			}
		})
	}
}

func TestMNISTFeeds(t *testing.T) {
	task, err := models.New("mlp")
	if err != nil {
		t.Fatal(err)
	}
	a := memory.New(memory.Options{})
	if _, err := task.TrainFeeds(a, 0, 0); err == nil {
		t.Error("TrainFeeds before Load did not fail")
	}
	if err := task.Load(models.DataConfig{Batch: 128, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	if n := task.StepsPerEpoch(); n != 468 {
		t.Fatalf("StepsPerEpoch = %d, want 60000/128 = 468 (the last batch dropped)", n)
	}
	get := func(epoch, step int) ([]float32, []int64) {
		t.Helper()
		f, err := task.TrainFeeds(a, epoch, step)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Release()
		x, y := f.Tensors["x"], f.Tensors["label"]
		if len(f.Tensors) != 2 || x == nil || y == nil {
			t.Fatalf("feeds %v, want x and label", f.Tensors)
		}
		if x.DType() != tensor.F32 || !slices.Equal(x.Shape(), []int{128, 1, 28, 28}) {
			t.Fatalf("x is %s %v", x.DType(), x.Shape())
		}
		if y.DType() != tensor.I64 || !slices.Equal(y.Shape(), []int{128}) {
			t.Fatalf("label is %s %v", y.DType(), y.Shape())
		}
		for _, l := range y.I64() {
			if l < 0 || l > 9 {
				t.Fatalf("label %d", l)
			}
		}
		return slices.Clone(x.F32()), slices.Clone(y.I64())
	}
	x0, y0 := get(0, 5)
	x1, y1 := get(1, 5) // another epoch caches another order
	x2, y2 := get(0, 5) // and the first one comes back identical
	if !slices.Equal(x0, x2) || !slices.Equal(y0, y2) {
		t.Error("the same (epoch, step) gave different feeds")
	}
	if slices.Equal(x0, x1) && slices.Equal(y0, y1) {
		t.Error("epochs 0 and 1 have the same step 5: not shuffled per epoch")
	}
	var mean float64
	for _, v := range x0 {
		mean += float64(v)
	}
	if mean /= float64(len(x0)); mean < -0.2 || mean > 0.2 {
		t.Errorf("mean of a normalized batch is %.3f", mean)
	}
	for _, bad := range [][2]int{{0, 468}, {0, -1}, {-1, 0}} {
		if _, err := task.TrainFeeds(a, bad[0], bad[1]); err == nil {
			t.Errorf("TrainFeeds(epoch %d, step %d) did not fail", bad[0], bad[1])
		}
	}
	if got := a.Stats().Allocated.Current; got != 0 {
		t.Errorf("%d bytes still allocated after releasing every feed", got)
	}
	if err := task.Load(models.DataConfig{Batch: 64}); err != nil {
		t.Fatal(err)
	}
	if n := task.StepsPerEpoch(); n != 937 {
		t.Errorf("StepsPerEpoch with batch 64 = %d, want 937", n)
	}
	if err := task.Load(models.DataConfig{Batch: 8, DataDir: t.TempDir()}); err == nil {
		t.Error("Load from an empty directory did not fail")
	}
}

// TestMNISTTrainShort trains 30 steps of each model: the loss falls,
// allocated memory is the same after every step, and the evaluation over
// the test set returns an accuracy well above chance.
func TestMNISTTrainShort(t *testing.T) {
	for _, name := range mnistModels {
		t.Run(name, func(t *testing.T) {
			tr := mnistTrainer(t, train.Config{Model: name, Steps: 30, Seed: 1})
			start := time.Now()
			recs := mnistSteps(t, tr, 30)
			perStep := time.Since(start) / 30
			mean := func(rs []train.StepRecord) float64 {
				s := 0.0
				for _, r := range rs {
					s += r.Loss
				}
				return s / float64(len(rs))
			}
			first, last := mean(recs[:5]), mean(recs[25:])
			if !(last < 0.6*first) {
				t.Errorf("mean loss of steps 1-5 %.4f, of steps 26-30 %.4f: did not fall", first, last)
			}
			branches := map[float64]int{}
			for i, r := range recs {
				if r.MemAllocated != recs[0].MemAllocated {
					t.Fatalf("step %d: mem_allocated %d, step 1 had %d", i+1, r.MemAllocated, recs[0].MemAllocated)
				}
				if b, ok := r.Extra["branch"]; ok {
					branches[b]++
				}
			}
			if name == "gate" && (branches[0] == 0 || branches[1] == 0 || len(branches) != 2) {
				t.Errorf("gate: branches taken in 30 steps: %v; want both of 0 and 1", branches)
			}
			start = time.Now()
			m, err := tr.Evaluate(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			evalTime := time.Since(start)
			if acc := m["accuracy"]; !(acc > 0.5 && acc <= 1) {
				t.Errorf("accuracy %v after 30 steps", acc)
			}
			if name == "gate" {
				if b, ok := m["branch"]; !ok || b < 0 || b > 1 {
					t.Errorf("gate: eval branch fraction %v", m)
				}
			}
			if got := tr.Allocator().Stats().Allocated.Current; got != recs[0].MemAllocated {
				t.Errorf("after Evaluate %d bytes allocated, %d after each step", got, recs[0].MemAllocated)
			}
			t.Logf("%s: loss %.4f → %.4f, %v/step, eval %v %v, mem_allocated %d, peak %d",
				name, recs[0].Loss, recs[29].Loss, perStep, evalTime, m, recs[0].MemAllocated, recs[29].PeakAllocated)
		})
	}
}

func TestMNISTMemcheck(t *testing.T) {
	for _, name := range mnistModels {
		t.Run(name, func(t *testing.T) {
			if name == "gate" {
				mnistBothBranches(t, 12)
			}
			rep, err := train.Memcheck(context.Background(), train.Config{Model: name}, 12, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK() {
				t.Fatal(rep.Message)
			}
			t.Log(rep.Message)
		})
	}
}

// mnistBothBranches checks that the first n training batches of seed 0
// at gate's default batch size fall on both sides of its threshold (a
// positive mean of the normalized pixels takes the bright branch).
func mnistBothBranches(t *testing.T, n int) {
	t.Helper()
	task, err := models.New("gate")
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Load(models.DataConfig{Batch: task.Defaults().Batch}); err != nil {
		t.Fatal(err)
	}
	a := memory.New(memory.Options{})
	var bright int
	for s := range n {
		f, err := task.TrainFeeds(a, 0, s)
		if err != nil {
			t.Fatal(err)
		}
		var sum float64
		for _, v := range f.Tensors["x"].F32() {
			sum += float64(v)
		}
		if sum > 0 {
			bright++
		}
		f.Release()
	}
	if bright == 0 || bright == n {
		t.Fatalf("the first %d batches of seed 0 all take one branch (%d bright)", n, bright)
	}
}

func TestMNISTDeterminism(t *testing.T) {
	losses := func(name string, seed int64) []float64 {
		tr := mnistTrainer(t, train.Config{Model: name, Steps: 8, Seed: seed})
		var out []float64
		for _, r := range mnistSteps(t, tr, 8) {
			out = append(out, r.Loss)
		}
		return out
	}
	for _, name := range mnistModels {
		t.Run(name, func(t *testing.T) {
			a, b, c := losses(name, 3), losses(name, 3), losses(name, 4)
			if !slices.Equal(a, b) {
				t.Errorf("seed 3 twice: %v and %v", a, b)
			}
			if slices.Equal(a, c) {
				t.Errorf("seeds 3 and 4 gave the same losses %v", a)
			}
		})
	}
}

// mnistTargets are the accuracies TestMNISTAccuracy requires of each
// model's default run.
var mnistTargets = map[string]float64{"mlp": 0.97, "lenet": 0.985, "gate": 0.95}

// TestMNISTAccuracy trains each model with its defaults (seed 0), as
// `gopir train --model NAME` does, and checks the test accuracy. Set
// GOPIR_LONG=1 to run it; GOPIR_MNIST_MODELS=lenet picks models.
func TestMNISTAccuracy(t *testing.T) {
	if os.Getenv("GOPIR_LONG") != "1" {
		t.Skip("set GOPIR_LONG=1 to train the MNIST models to their target accuracy")
	}
	names := mnistModels
	if s := os.Getenv("GOPIR_MNIST_MODELS"); s != "" {
		names = strings.Split(s, ",")
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			tr := mnistTrainer(t, train.Config{Model: name})
			setup := time.Since(start)
			spe := tr.StepsPerEpoch()
			branches := map[float64]int{}
			var epochTimes []string
			var last train.StepRecord
			for !tr.Done() {
				e0 := time.Now()
				for i := 0; i < spe && !tr.Done(); i++ {
					r, err := tr.Step(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					if b, ok := r.Extra["branch"]; ok {
						branches[b]++
					}
					last = r
				}
				epochTimes = append(epochTimes, fmt.Sprintf("%.1fs (%.1f ms/step)",
					time.Since(e0).Seconds(), float64(time.Since(e0).Milliseconds())/float64(spe)))
			}
			e0 := time.Now()
			m, err := tr.Evaluate(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d steps; setup %.1fs; epochs %v; eval %.1fs; final loss %.4f; mem_allocated %d B, peak %d B; metrics %v",
				name, tr.Total(), setup.Seconds(), epochTimes, time.Since(e0).Seconds(), last.Loss, last.MemAllocated, last.PeakAllocated, m)
			if name == "gate" {
				t.Logf("gate: training batches per branch %v", branches)
				if branches[0] < tr.Total()/5 || branches[1] < tr.Total()/5 {
					t.Errorf("gate: a branch took fewer than a fifth of the steps: %v", branches)
				}
			}
			if acc := m["accuracy"]; acc < mnistTargets[name] {
				t.Errorf("%s: accuracy %.4f, target %.4f", name, acc, mnistTargets[name])
			}
		})
	}
}
