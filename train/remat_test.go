package train_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/train"
)

// rematSteps is how many steps the rematerialization tests train: a short
// run in plain go test, 200 with GOPIR_LONG=1.
func rematSteps() int {
	if os.Getenv("GOPIR_LONG") != "" {
		return 200
	}
	return 12
}

// trainSteps trains n steps of cfg and returns the losses and the peaks.
func trainSteps(t *testing.T, cfg train.Config, n int) (losses []float64, peaks []int64) {
	losses, peaks, _ = trainRemat(t, cfg, n)
	return losses, peaks
}

// trainRemat is trainSteps that also returns the planned peak of the
// rematerialized step when it splits the batch (0 otherwise: a step
// whose loops run for as many trips as its data says is planned for the
// trips the trainer expects).
func trainRemat(t *testing.T, cfg train.Config, n int) (losses []float64, peaks []int64, planned int64) {
	t.Helper()
	cfg.Steps = n
	tr, err := train.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if res := tr.Remat(); res != nil && len(res.Splits) > 0 {
		planned = res.Peak
	}
	for !tr.Done() {
		rec, err := tr.Step(context.Background())
		if err != nil {
			t.Fatalf("step %d: %v", len(losses), err)
		}
		losses, peaks = append(losses, rec.Loss), append(peaks, rec.PeakAllocated)
	}
	return losses, peaks, planned
}

// planExact reports whether the planner predicts the first training step
// of cfg to the byte (it does not for a model whose kernels still allocate
// scratch of their own: TestPlanMatchesTrainingSteps).
func planExact(t *testing.T, cfg train.Config) (bool, string) {
	t.Helper()
	var path []bool
	cfg.Conditions = func(_ *ir.Op, c bool) { path = append(path, c) }
	tr, err := train.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	types, err := tr.StepFeedTypes(0)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := tr.Step(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	plan, err := tr.PlanStep(types, path)
	if err != nil {
		t.Fatal(err)
	}
	return plan.Peak == rec.PeakAllocated, fmt.Sprintf("planned %d, measured %d", plan.Peak, rec.PeakAllocated)
}

// floorOf returns the smallest peak budget the rematerializer can fit a
// step of cfg into, from the refusal of a hopeless one.
func floorOf(t *testing.T, cfg train.Config) *train.FloorError {
	t.Helper()
	cfg.PeakBudget = 1
	_, err := train.New(cfg)
	var floor *train.FloorError
	if !errors.As(err, &floor) {
		t.Fatalf("a limit of 1 byte: %v, want a FloorError", err)
	}
	return floor
}

// For lenet, gate, tinydet and rnn, at 70% and 50% of the natural step
// peak and at the smallest budget that works: a budget under the floor is
// refused before anything is allocated, naming the floor; any other trains
// with every step's measured peak within the budget and exactly the losses
// of training without one, and where the planner is exact for the step,
// a step split over the batch (lenet's) peaks where it was planned to.
func TestRematTrainsBitForBit(t *testing.T) {
	n := rematSteps()
	for _, model := range []string{"lenet", "gate", "tinydet", "rnn"} {
		t.Run(model, func(t *testing.T) {
			cfg := train.Config{Model: model, Seed: 5, Threads: 2}
			want, _ := trainSteps(t, cfg, n)
			exact, why := planExact(t, cfg)
			if !exact {
				t.Logf("the planner is not exact for %s's step (%s): the peaks are not held to the budget, the losses still are to the bit", model, why)
			}
			floor := floorOf(t, cfg)
			budgets := map[string]int64{"floor": floor.Floor}
			for _, frac := range []float64{0.7, 0.5} {
				budgets[fmt.Sprintf("%.0f%%", 100*frac)] = int64(frac * float64(floor.Natural))
			}
			for name, budget := range budgets {
				c := cfg
				c.PeakBudget = budget
				if budget < floor.Floor {
					_, err := train.New(c)
					var fe *train.FloorError
					if !errors.As(err, &fe) || fe.Floor != floor.Floor {
						t.Errorf("%s (%d bytes, under the floor %d): %v, want a FloorError naming the floor", name, budget, floor.Floor, err)
					}
					continue
				}
				losses, peaks, planned := trainRemat(t, c, n)
				if exact && planned > 0 && peaks[0] != planned {
					t.Errorf("%s: the rematerialized step was planned to peak at %d bytes and peaked at %d", name, planned, peaks[0])
				}
				for i, l := range losses {
					if math.Float64bits(l) != math.Float64bits(want[i]) {
						t.Fatalf("%s: step %d loss %v, %v without a limit", name, i, l, want[i])
					}
					if exact && peaks[i] > budget {
						t.Fatalf("%s: step %d peaked at %d bytes, over the budget of %d", name, i, peaks[i], budget)
					}
				}
				t.Logf("%s: budget %d (%.1f%% of %d): %d steps bit for bit", name, budget, 100*float64(budget)/float64(floor.Natural), floor.Natural, n)
			}
		})
	}
}

// Under a memory limit (the allocator's cap) at the smallest that works,
// training rematerializes, checks every step for leaks, stays within the
// cap and computes the unconstrained losses; a limit under it is refused
// before allocating, naming it; with NoRemat the plan over the limit is
// refused as before.
func TestRematUnderTheMemoryLimit(t *testing.T) {
	const n = 6
	for _, model := range []string{"lenet", "gate", "tinydet", "rnn"} {
		t.Run(model, func(t *testing.T) {
			cfg := train.Config{Model: model, Seed: 5, Threads: 2}
			if exact, why := planExact(t, cfg); !exact {
				t.Skipf("the planner is not exact for %s's step (%s; TestPlanMatchesTrainingSteps): a cap fitted to the plan is not one the step fits", model, why)
			}
			want, _ := trainSteps(t, cfg, n)
			c := cfg
			c.MemLimit = 1
			_, err := train.New(c)
			var floor *train.FloorError
			if !errors.As(err, &floor) || !floor.Capped || !strings.Contains(err.Error(), fmt.Sprintf("--mem-limit %d", floor.Floor)) {
				t.Fatalf("a limit of 1 byte: %v, want a FloorError naming the smallest --mem-limit", err)
			}
			c.MemLimit, c.CheckLeaks = floor.Floor, true
			losses, peaks := trainSteps(t, c, n)
			for i := range losses {
				if math.Float64bits(losses[i]) != math.Float64bits(want[i]) || peaks[i] > floor.Floor {
					t.Fatalf("step %d under --mem-limit %d: loss %v (%v without), peak %d", i, floor.Floor, losses[i], want[i], peaks[i])
				}
			}
			c.NoRemat = true
			if floor.Floor < floor.Natural {
				_, err := train.New(c)
				var over *train.PlanExceedsError
				if !errors.As(err, &over) {
					t.Fatalf("NoRemat under the natural peak: %v, want a PlanExceedsError", err)
				}
			}
		})
	}
}
