package train_test

import (
	"context"
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/gopir/gopir/train"
)

// evalAfter trains cfg for steps steps, then evaluates, and returns the
// evaluation batch, the metrics, the allocator's peak during the
// evaluation and whether allocated bytes came back to where they were.
func evalAfter(t *testing.T, cfg train.Config, steps int) (int, map[string]float64, int64) {
	t.Helper()
	cfg.Steps = steps
	tr, err := train.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	for !tr.Done() {
		if _, err := tr.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	a := tr.Allocator()
	before := a.Stats().Allocated.Current
	a.ResetPeak()
	m, err := tr.Evaluate(context.Background())
	if err != nil {
		t.Fatalf("evaluation at --mem-limit %d, batch %d: %v", cfg.MemLimit, tr.EvalBatch(), err)
	}
	st := a.Stats()
	if st.Allocated.Current != before {
		t.Fatalf("allocated %d bytes after the evaluation, %d before", st.Allocated.Current, before)
	}
	return tr.EvalBatch(), m, st.Allocated.Peak
}

// Under a memory limit near the step's floor, the evaluation after
// training shrinks its batch to fit instead of running out of memory,
// and the metrics are those of the default batch to the bit (the
// evaluation programs are per sample, and the trained parameters are the
// same: rematerialization trains bit for bit). Without a limit the batch
// is the task's default.
func TestEvalFitsTheMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		model string
		def   int
		long  bool // 8 to 18 s on 2 cores (the floor search): GOPIR_LONG=1 only
	}{{"lenet", 500, false}, {"tinydet", 64, true}, {"rnn", 256, false}} {
		t.Run(tc.model, func(t *testing.T) {
			if tc.long && os.Getenv("GOPIR_LONG") == "" {
				t.Skip("GOPIR_LONG=1 runs it")
			}
			cfg := train.Config{Model: tc.model, Seed: 3, Threads: 2}
			batch, want, _ := evalAfter(t, cfg, 3)
			if batch != tc.def {
				t.Fatalf("without a limit the evaluation batch is %d, want the default %d", batch, tc.def)
			}
			c := cfg
			c.MemLimit = 1
			_, err := train.New(c)
			var floor *train.FloorError
			if !errors.As(err, &floor) {
				t.Fatalf("a limit of 1 byte: %v, want a FloorError", err)
			}
			c.MemLimit = floor.Floor
			batch, got, peak := evalAfter(t, c, 3)
			if batch < 1 || batch >= tc.def {
				t.Fatalf("at --mem-limit %d the evaluation batch is %d, want 1..%d", c.MemLimit, batch, tc.def-1)
			}
			if peak > c.MemLimit {
				t.Fatalf("the evaluation peaked at %d bytes, over the limit %d", peak, c.MemLimit)
			}
			if len(got) != len(want) {
				t.Fatalf("metrics %v at batch %d, %v at %d", got, batch, want, tc.def)
			}
			for k, w := range want {
				if math.Float64bits(got[k]) != math.Float64bits(w) {
					t.Errorf("%s: %v at batch %d, %v at the default %d", k, got[k], batch, w, tc.def)
				}
			}
		})
	}
}

// gate's evaluation cannot shrink (its if takes one branch per batch, so
// its metrics depend on the batch): under a limit its step fits but its
// evaluation does not, New refuses before allocating with a limit that
// works, which then trains and evaluates; a step refusal's limit is
// raised for the evaluation too.
func TestEvalRefusedBeforeTraining(t *testing.T) {
	cfg := train.Config{Model: "gate", Seed: 3, Threads: 2, MemLimit: 1}
	_, err := train.New(cfg)
	var floor *train.FloorError
	if !errors.As(err, &floor) || !floor.ForEval || !strings.Contains(err.Error(), "(the final evaluation needs that much)") {
		t.Fatalf("a limit of 1 byte: %v, want a FloorError raised for the evaluation", err)
	}
	var refusal *train.EvalExceedsError
	for lim := floor.Floor - floor.Floor/64; refusal == nil && lim > floor.Floor*7/8; lim -= floor.Floor / 64 {
		cfg.MemLimit = lim
		_, err = train.New(cfg)
		var f *train.FloorError
		if !errors.As(err, &refusal) && !errors.As(err, &f) {
			t.Fatalf("at --mem-limit %d: %v, want a refusal", lim, err)
		}
	}
	if refusal == nil {
		t.Fatalf("no limit under %d refuses the evaluation alone", floor.Floor)
	}
	msg := err.Error()
	if !strings.Contains(msg, "the evaluation of gate at its fixed batch") || !strings.Contains(msg, "nothing was allocated") || refusal.Works <= cfg.MemLimit {
		t.Fatalf("at --mem-limit %d: %v (works %d)", cfg.MemLimit, err, refusal.Works)
	}
	cfg.MemLimit = refusal.Works
	if _, _, peak := evalAfter(t, cfg, 2); peak > cfg.MemLimit {
		t.Fatalf("the evaluation peaked at %d bytes, over the limit %d", peak, cfg.MemLimit)
	}
}

// Planning the evaluation, again and again, under caps it fits and caps
// it does not (down to one its test batch finds no room in), leaves
// nothing allocated on the replay.
func TestEvalFitLeavesNothing(t *testing.T) {
	limits := []int64{1 << 30, 1546039, 1 << 20, 800 << 10, 1 << 30, 1546039}
	left, need, err := train.EvalFitLeftovers(train.Config{Model: "lenet", Seed: 3, Threads: 2}, limits)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range left {
		if l != 0 {
			t.Errorf("after planning under %d bytes, the replay holds %d", limits[i], l)
		}
	}
	if need[0] > limits[0] || need[1] <= limits[1] || need[2] <= limits[2] || need[3] <= limits[3] || need[4] != need[0] || need[5] != need[1] {
		t.Errorf("the evaluation at batch 500 needs %v under %v", need, limits)
	}
}
