package train_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/gopir/gopir/dist"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/train"
)

// The planner predicts the peak of every zoo model's training step to the
// byte, following the step's path: the same number Step reports as
// peak_allocated.
func TestPlanMatchesTrainingSteps(t *testing.T) {
	for _, tc := range []struct {
		model string
		batch int
	}{{"mlp", 16}, {"lenet", 8}, {"gate", 16}, {"rnn", 0}, {"tinydet", 4}} {
		t.Run(tc.model, func(t *testing.T) {
			tr, _ := trainPlanned(t, train.Config{Model: tc.model, Batch: tc.batch, Seed: 3}, 3)
			tr.Close()
		})
	}
}

// trainPlanned trains steps steps of cfg and checks that the planner
// predicts each step's peak, following its path, to the byte. It returns
// the trainer, for the caller to inspect and close, and its records.
func trainPlanned(t *testing.T, cfg train.Config, steps int) (*train.Trainer, []train.StepRecord) {
	t.Helper()
	var path []bool
	cfg.Conditions = func(_ *ir.Op, c bool) { path = append(path, c) }
	tr, err := train.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var recs []train.StepRecord
	for step := range steps {
		types, err := tr.StepFeedTypes(step)
		if err != nil {
			tr.Close()
			t.Fatal(err)
		}
		path = path[:0]
		rec, err := tr.Step(context.Background())
		if err != nil {
			tr.Close()
			t.Fatal(err)
		}
		plan, err := tr.PlanStep(types, path)
		if err != nil {
			tr.Close()
			t.Fatal(err)
		}
		if plan.Peak != rec.PeakAllocated {
			t.Errorf("%s step %d: planned peak %d, measured %d (base %d, %d conditions)", cfg.Model, step, plan.Peak, rec.PeakAllocated, plan.Base, len(path))
		}
		recs = append(recs, rec)
	}
	return tr, recs
}

// TestPlanMatchesDataParallelSteps: a data-parallel step's collectives
// (the gradient buckets, the loss's all-reduce, tinydet's counts and the
// synchronized batch norms) are planned like any op, so the planner
// predicts each rank's peak to the byte too, and train.Plan with
// Config.Ranks (what gopir plan --ranks runs) gives that number.
func TestPlanMatchesDataParallelSteps(t *testing.T) {
	for _, tc := range []train.Config{
		{Model: "mlp", Batch: 16},
		{Model: "lenet", Batch: 8},
		{Model: "tinydet", Batch: 4, SyncBN: true},
		{Model: "tinydet", Batch: 4, BucketBytes: -1},
	} {
		t.Run(fmt.Sprintf("%s/sync-bn=%v/buckets=%d", tc.Model, tc.SyncBN, tc.BucketBytes), func(t *testing.T) {
			const n = 2
			tc.Seed, tc.Threads = 3, 1
			static := tc
			static.Ranks = n
			plan, err := train.Plan(static, true)
			if err != nil {
				t.Fatal(err)
			}
			comms := dist.Local(n)
			errs := make([]error, n)
			peaks := make([][]int64, n)
			var wg sync.WaitGroup
			for r := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[r] = func() error {
						var path []bool
						cfg := tc
						cfg.Comm = comms[r]
						cfg.Conditions = func(_ *ir.Op, c bool) { path = append(path, c) }
						tr, err := train.New(cfg)
						if err != nil {
							return err
						}
						defer tr.Close()
						for step := range 3 {
							types, err := tr.StepFeedTypes(step)
							if err != nil {
								return err
							}
							path = path[:0]
							rec, err := tr.Step(context.Background())
							if err != nil {
								return err
							}
							p, err := tr.PlanStep(types, path)
							if err != nil {
								return err
							}
							if p.Peak != rec.PeakAllocated {
								return fmt.Errorf("rank %d step %d: planned peak %d, measured %d", r, step, p.Peak, rec.PeakAllocated)
							}
							peaks[r] = append(peaks[r], rec.PeakAllocated)
						}
						return nil
					}()
					if errs[r] != nil {
						comms[r].Abort(1, errs[r])
					}
				}()
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			// Without a recorded path the plan takes the higher branch of
			// each if: never below a step.
			for r := range n {
				for i, pk := range peaks[r] {
					if pk > plan.Peak {
						t.Errorf("rank %d step %d: measured peak %d above train.Plan's %d", r, i, pk, plan.Peak)
					}
				}
			}
			if tc.Model != "tinydet" && plan.Peak != peaks[0][0] {
				t.Errorf("train.Plan with Ranks: %d, a rank's step %d", plan.Peak, peaks[0][0])
			}
		})
	}
}
