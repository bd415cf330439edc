package models_test

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/models"
	"github.com/gopir/gopir/train"
)

func init() { models.Register("rnn_dynamic_batch", models.RNNDynamicBatchForTest) }

// rnnRun trains model for steps steps and returns each step's record.
func rnnRun(t *testing.T, cfg train.Config) (*train.Trainer, []train.StepRecord) {
	t.Helper()
	tr, err := train.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	var recs []train.StepRecord
	for !tr.Done() {
		rec, err := tr.Step(context.Background())
		if err != nil {
			t.Fatalf("step %d: %v", len(recs)+1, err)
		}
		recs = append(recs, rec)
	}
	return tr, recs
}

func rnnMeanLoss(recs []train.StepRecord) float64 {
	s := 0.0
	for _, r := range recs {
		s += r.Loss
	}
	return s / float64(len(recs))
}

func TestRNNBuildsAndVerifiesBothPrograms(t *testing.T) {
	count := func(p *ir.Program, name string) int {
		n := 0
		p.Walk(func(op *ir.Op) bool {
			if op.Name() == name {
				n++
			}
			return true
		})
		return n
	}
	tp, err := train.BuildTraining(train.Config{Model: "rnn"})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := train.BuildEvaluation("rnn")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*ir.Program{tp, ep} {
		if err := ir.Verify(p); err != nil {
			t.Fatal(err)
		}
		// The text form parses back to the same text.
		q, err := ir.Parse("rnn.pir", []byte(p.String()))
		if err != nil {
			t.Fatal(err)
		}
		if q.String() != p.String() {
			t.Error("print → parse → print is not a fixed point")
		}
	}
	// Forward and backward loops, with stacks between them, in training;
	// one loop and no stacks in evaluation.
	if n := count(tp, "while"); n != 2 {
		t.Errorf("training program has %d while ops, want 2", n)
	}
	if count(tp, "stack_push") == 0 || count(tp, "stack_pop") != count(tp, "stack_push") {
		t.Errorf("training program: %d pushes, %d pops", count(tp, "stack_push"), count(tp, "stack_pop"))
	}
	if n, s := count(ep, "while"), count(ep, "stack_new"); n != 1 || s != 0 {
		t.Errorf("evaluation program has %d while ops and %d stacks, want 1 and 0", n, s)
	}
	for _, want := range []string{`{name:"x", shape:[-1,32,8], dtype:f32}`, `{name:"T", shape:[], dtype:i64}`, `{name:"label", shape:[32], dtype:i64}`} {
		if !strings.Contains(tp.String(), want) {
			t.Errorf("training program lacks the feed %s", want)
		}
	}
	if !strings.Contains(ep.String(), `{name:"x", shape:[-1,-1,8], dtype:f32}`) {
		t.Error("evaluation program lacks x with dynamic T and B")
	}
}

func TestRNNLossFallsAndAccuracyRises(t *testing.T) {
	tr, err := train.New(train.Config{Model: "rnn", Steps: 120, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	before, err := tr.Evaluate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var recs []train.StepRecord
	for !tr.Done() {
		rec, err := tr.Step(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	after, err := tr.Evaluate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	first, last := rnnMeanLoss(recs[:10]), rnnMeanLoss(recs[len(recs)-10:])
	if !(last < first/2) {
		t.Errorf("mean loss of the first 10 steps %.4f, of the last 10 %.4f: did not halve", first, last)
	}
	if a := before["accuracy"]; a < 0.15 || a > 0.55 {
		t.Errorf("untrained accuracy %.4f, want about chance (1/3)", a)
	}
	if a := after["accuracy"]; a < 0.6 {
		t.Errorf("accuracy after %d steps %.4f, want at least 0.6", len(recs), a)
	}
	t.Logf("loss %.4f → %.4f, accuracy %.4f → %.4f in %d steps", first, last, before["accuracy"], after["accuracy"], len(recs))
}

// TestRNNMemcheck: allocated bytes after every step are identical although
// the trip count (and, with a dynamic batch, B) changes from step to step:
// the stacks are freed completely.
func TestRNNMemcheck(t *testing.T) {
	for _, model := range []string{"rnn", "rnn_dynamic_batch"} {
		t.Run(model, func(t *testing.T) {
			rep, err := train.Memcheck(context.Background(), train.Config{Model: model, Seed: 2}, 30, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK() {
				t.Fatal(rep.Message)
			}
			// The same steps again, to see that T and the peak did move.
			_, recs := rnnRun(t, train.Config{Model: model, Seed: 2, Steps: 30, CheckLeaks: true})
			lens, peaks := map[float64]bool{}, map[int64]bool{}
			for i, r := range recs {
				lens[r.Extra["seq_len"]] = true
				peaks[r.PeakAllocated] = true
				if r.MemAllocated != rep.Baseline {
					t.Errorf("step %d: allocated %d, memcheck baseline %d", i+1, r.MemAllocated, rep.Baseline)
				}
				if r.PeakAllocated <= r.MemAllocated {
					t.Errorf("step %d: peak %d not above allocated %d", i+1, r.PeakAllocated, r.MemAllocated)
				}
			}
			if len(lens) < 5 || len(peaks) < 5 {
				t.Errorf("30 steps saw %d lengths and %d peaks, want several", len(lens), len(peaks))
			}
			t.Logf("%s: allocated %d bytes after each of 30 steps, %d lengths, %d distinct peaks", model, rep.Baseline, len(lens), len(peaks))
		})
	}
}

func TestRNNDeterministic(t *testing.T) {
	run := func(seed int64) ([]float64, float64) {
		tr, recs := rnnRun(t, train.Config{Model: "rnn", Steps: 25, Seed: seed})
		m, err := tr.Evaluate(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var ls []float64
		for _, r := range recs {
			ls = append(ls, r.Loss)
		}
		return ls, m["accuracy"]
	}
	a, accA := run(7)
	b, accB := run(7)
	c, _ := run(8)
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			t.Fatalf("step %d: loss %v then %v with the same seed", i+1, a[i], b[i])
		}
	}
	if accA != accB {
		t.Errorf("accuracy %v then %v with the same seed", accA, accB)
	}
	same := true
	for i := range a {
		same = same && a[i] == c[i]
	}
	if same {
		t.Error("seeds 7 and 8 gave the same losses")
	}
}

func TestRNNBatchLargerThanEveryBucket(t *testing.T) {
	_, err := train.New(train.Config{Model: "rnn", Batch: 5000})
	if err == nil || !strings.Contains(err.Error(), "larger than every length bucket") {
		t.Fatalf("err = %v", err)
	}
	// Without the static batch, one batch per length is fine.
	tr, err := train.New(train.Config{Model: "rnn_dynamic_batch", Batch: 5000, Steps: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if tr.StepsPerEpoch() != 13 {
		t.Errorf("%d steps per epoch, want 13 (lengths 4..16)", tr.StepsPerEpoch())
	}
}

// TestRNNLong trains with the defaults and reports the held-out accuracy
// and the time (GOPIR_LONG=1).
func TestRNNLong(t *testing.T) {
	if os.Getenv("GOPIR_LONG") == "" {
		t.Skip("set GOPIR_LONG=1 to train rnn with its defaults")
	}
	start := time.Now()
	tr, recs := rnnRun(t, train.Config{Model: "rnn", Seed: 1})
	trainTime := time.Since(start)
	m, err := tr.Evaluate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	total := time.Since(start)
	var peak int64
	for _, r := range recs {
		peak = max(peak, r.PeakAllocated)
	}
	t.Logf("rnn defaults: %d steps, loss %.4f (first 10) → %.4f (last 10), held-out accuracy %.4f; train %v (%.2f ms/step), total %v; mem_allocated %d bytes, largest step peak %d bytes",
		len(recs), rnnMeanLoss(recs[:10]), rnnMeanLoss(recs[len(recs)-10:]), m["accuracy"],
		trainTime.Round(time.Millisecond), float64(trainTime.Microseconds())/1000/float64(len(recs)), total.Round(time.Millisecond),
		recs[len(recs)-1].MemAllocated, peak)
	if m["accuracy"] < 0.8 {
		t.Errorf("held-out accuracy %.4f, want at least 0.8", m["accuracy"])
	}
}
