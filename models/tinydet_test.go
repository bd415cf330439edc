package models_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/models"
	"github.com/gopir/gopir/train"
)

// tinydetLogLine is one line of the JSON log.
type tinydetLogLine struct {
	Epoch         int                `json:"epoch"`
	Step          int                `json:"step"`
	Loss          float64            `json:"loss"`
	MemAllocated  int64              `json:"mem_allocated"`
	MemReserved   int64              `json:"mem_reserved"`
	PeakAllocated int64              `json:"peak_allocated"`
	NumGTs        *float64           `json:"num_gts"`
	Positives     *float64           `json:"positives"`
	Eval          map[string]float64 `json:"eval"`
}

// tinydetJSONRun trains cfg with JSON logging of every step and returns the
// step lines, the summary and the wall time.
func tinydetJSONRun(t *testing.T, cfg train.Config) ([]tinydetLogLine, train.Summary, time.Duration) {
	t.Helper()
	cfg.Model, cfg.JSON, cfg.LogEvery = "tinydet", true, 1
	start := time.Now()
	tr, err := train.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var out bytes.Buffer
	sum, err := tr.Run(context.Background(), &out)
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	var steps []tinydetLogLine
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var rec tinydetLogLine
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if rec.Eval != nil {
			continue
		}
		steps = append(steps, rec)
	}
	if len(steps) != sum.Steps {
		t.Fatalf("%d step lines for %d steps", len(steps), sum.Steps)
	}
	return steps, sum, elapsed
}

var tinydetShort struct {
	once  sync.Once
	steps []tinydetLogLine
	sum   train.Summary
}

// tinydetShortRun is a 40-step run of the default configuration (seed 0),
// shared by the tests that read its log.
func tinydetShortRun(t *testing.T) ([]tinydetLogLine, train.Summary) {
	t.Helper()
	tinydetShort.once.Do(func() {
		tinydetShort.steps, tinydetShort.sum, _ = tinydetJSONRun(t, train.Config{Steps: 40})
	})
	if tinydetShort.steps == nil {
		t.Fatal("the shared 40-step run failed")
	}
	return tinydetShort.steps, tinydetShort.sum
}

func TestDetBuild(t *testing.T) {
	task, err := models.New("tinydet")
	if err != nil {
		t.Fatal(err)
	}
	d := task.Defaults()
	if d.Steps <= 0 || d.Batch <= 0 || d.LR <= 0 {
		t.Errorf("defaults %+v", d)
	}
	p, err := train.BuildTraining(train.Config{Model: "tinydet"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ir.Verify(p); err != nil {
		t.Fatal(err)
	}
	// The loss's `if` is a top-level op whose condition comes from the
	// num_gts feed through ops, and its backward is another `if`.
	var ifs int
	var fromNumGTs bool
	for _, op := range p.Body().Ops() {
		if op.Name() != "if" {
			continue
		}
		ifs++
		cmp := op.Operand(0).Def()
		if cmp != nil && cmp.Name() == "greater_than" {
			if in := cmp.Operand(0).Def(); in != nil && in.Name() == "data" {
				if n, _ := in.Attrs.Str("name"); n == "num_gts" {
					fromNumGTs = true
				}
			}
		}
	}
	if !fromNumGTs || ifs < 2 {
		t.Errorf("training program: %d top-level if ops, condition from num_gts: %v; want the forward and backward ifs on num_gts > 0", ifs, fromNumGTs)
	}
	e, err := train.BuildEvaluation("tinydet")
	if err != nil {
		t.Fatal(err)
	}
	if err := ir.Verify(e); err != nil {
		t.Fatal(err)
	}
	fetches := map[string]bool{}
	e.Walk(func(op *ir.Op) bool {
		if op.Name() == "if" {
			t.Error("the evaluation program has an if")
		}
		if op.Name() == "fetch" {
			n, _ := op.Attrs.Str("name")
			fetches[n] = true
		}
		return true
	})
	for _, n := range []string{"box", "obj", "cls"} {
		if !fetches[n] {
			t.Errorf("the evaluation program does not fetch %q", n)
		}
	}
	if testing.Verbose() {
		t.Logf("training program: %d values; evaluation program: %d values", p.NumValues(), e.NumValues())
	}
}

// TestDetFlatMemory is the acceptance check of the project: a run with
// JSON logging takes both branches of `if num_gts > 0` and shows the same
// mem_allocated after every step from step 1 on.
func TestDetFlatMemory(t *testing.T) {
	steps, _ := tinydetShortRun(t)
	var with, without int
	for i, s := range steps {
		if s.NumGTs == nil || s.Positives == nil {
			t.Fatalf("step %d: num_gts or positives missing from the log", i+1)
		}
		if *s.NumGTs > 0 {
			with++
			if *s.Positives <= 0 {
				t.Errorf("step %d: %v boxes but no positive cell", i+1, *s.NumGTs)
			}
		} else {
			without++
			if *s.Positives != 0 {
				t.Errorf("step %d: no box but %v positive cells", i+1, *s.Positives)
			}
		}
		if s.MemAllocated != steps[0].MemAllocated {
			t.Errorf("step %d (num_gts %v): mem_allocated %d, step 1 had %d", i+1, *s.NumGTs, s.MemAllocated, steps[0].MemAllocated)
		}
		if s.MemAllocated <= 0 || s.MemReserved < s.MemAllocated || s.PeakAllocated < s.MemAllocated {
			t.Errorf("step %d: allocated %d, reserved %d, peak %d", i+1, s.MemAllocated, s.MemReserved, s.PeakAllocated)
		}
	}
	// The layout puts an empty batch every 8th step: both branches run
	// within the first 8 steps.
	if n := steps[7].NumGTs; *n != 0 {
		t.Errorf("step 8 has %v boxes; the layout makes it empty", *n)
	}
	if with == 0 || without < 4 {
		t.Errorf("%d steps with boxes, %d without; want both branches several times", with, without)
	}
	t.Logf("40 steps: %d with boxes, %d without; mem_allocated %d bytes after every step", with, without, steps[0].MemAllocated)
}

func TestDetLossFalls(t *testing.T) {
	steps, sum := tinydetShortRun(t)
	mean := func(ss []tinydetLogLine) float64 {
		var s float64
		var n int
		for _, r := range ss {
			if *r.NumGTs > 0 {
				s += r.Loss
				n++
			}
		}
		return s / float64(n)
	}
	first, last := mean(steps[:7]), mean(steps[len(steps)-7:])
	for _, s := range steps {
		if math.IsNaN(s.Loss) || math.IsInf(s.Loss, 0) {
			t.Fatalf("step %d: loss %v", s.Step, s.Loss)
		}
	}
	if !(last < 0.6*first) {
		t.Errorf("mean loss of batches with boxes: %.4f over the first 7 steps, %.4f over the last 7; want a clear fall", first, last)
	}
	m, ok := sum.Metrics["map50"]
	if !ok || m < 0 || m > 1 {
		t.Errorf("evaluation metrics %v; want map50 in [0, 1]", sum.Metrics)
	}
	t.Logf("loss %.4f -> %.4f; map50 after 40 steps %.4f", first, last, m)
}

func TestDetMemcheck(t *testing.T) {
	// 17 steps take the else branch at steps 8 and 16.
	rep, err := train.Memcheck(context.Background(), train.Config{Model: "tinydet"}, 17, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatal(rep.Message)
	}
	for i, a := range rep.Allocated {
		if a != rep.Baseline {
			t.Errorf("step %d: %d bytes, baseline %d", i+1, a, rep.Baseline)
		}
	}
}

func TestDetDeterminism(t *testing.T) {
	run := func() ([]float64, float64) {
		tr, err := train.New(train.Config{Model: "tinydet", Steps: 9, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		var losses []float64
		for !tr.Done() {
			rec, err := tr.Step(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			losses = append(losses, rec.Loss)
		}
		m, err := tr.Evaluate(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return losses, m["map50"]
	}
	a, ma := run()
	b, mb := run()
	for i := range a {
		if a[i] != b[i] {
			t.Errorf("step %d: loss %v then %v", i+1, a[i], b[i])
		}
	}
	if ma != mb {
		t.Errorf("map50 %v then %v", ma, mb)
	}
}

// TestDetLongDefault (GOPIR_LONG=1) runs the default configuration for
// seeds 0, 1 and 2, and the 300-step JSON run, and reports mAP, time and
// memory.
func TestDetLongDefault(t *testing.T) {
	if os.Getenv("GOPIR_LONG") == "" {
		t.Skip("set GOPIR_LONG=1 to run the default tinydet training (about a minute per seed)")
	}
	check := func(name string, cfg train.Config, minMAP float64) {
		steps, sum, elapsed := tinydetJSONRun(t, cfg)
		var empty int
		flat := true
		for _, s := range steps {
			if *s.NumGTs == 0 {
				empty++
			}
			if s.MemAllocated != steps[0].MemAllocated {
				flat = false
				t.Errorf("%s: step %d: mem_allocated %d, step 1 had %d", name, s.Step, s.MemAllocated, steps[0].MemAllocated)
			}
		}
		m := sum.Metrics["map50"]
		t.Logf("%s: %d steps in %.1fs (%.1f ms/step incl. setup and eval), map50 %.4f, steps with num_gts == 0: %d (%.3f), mem_allocated %d bytes after every step: %v, mem_reserved %d, peak_allocated %d, final loss %.4f",
			name, len(steps), elapsed.Seconds(), 1000*elapsed.Seconds()/float64(len(steps)), m, empty, float64(empty)/float64(len(steps)),
			steps[0].MemAllocated, flat, steps[len(steps)-1].MemReserved, steps[len(steps)-1].PeakAllocated, steps[len(steps)-1].Loss)
		if m < minMAP {
			t.Errorf("%s: map50 %.4f, want at least %.2f", name, m, minMAP)
		}
		if elapsed > 3*time.Minute {
			t.Errorf("%s: took %v, want at most 3 minutes", name, elapsed)
		}
	}
	check("default seed 0", train.Config{}, 0.5)
	check("default seed 1", train.Config{Seed: 1}, 0.5)
	check("default seed 2", train.Config{Seed: 2}, 0.5)
	check("--steps 300", train.Config{Steps: 300}, 0.5)
}
