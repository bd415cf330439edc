package train_test

import (
	"context"
	"testing"

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
			var path []bool
			tr, err := train.New(train.Config{Model: tc.model, Batch: tc.batch, Seed: 3,
				Conditions: func(_ *ir.Op, c bool) { path = append(path, c) }})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			for step := range 3 {
				types, err := tr.StepFeedTypes(step)
				if err != nil {
					t.Fatal(err)
				}
				path = path[:0]
				rec, err := tr.Step(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				plan, err := tr.PlanStep(types, path)
				if err != nil {
					t.Fatal(err)
				}
				if plan.Peak != rec.PeakAllocated {
					t.Errorf("step %d: planned peak %d, measured %d (base %d, %d conditions)", step, plan.Peak, rec.PeakAllocated, plan.Base, len(path))
				}
			}
		})
	}
}
