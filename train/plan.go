package train

import (
	"fmt"
	"strings"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/models"
)

// PlanStep plans the memory of one training step without running it
// (exec.Plan): with the given feed types, or else the batch's largest
// (every dynamic dim the batch size, or what the task's
// models.PlanHinter says), allocated beside the parameters and optimizer
// state as Step does; an "if" takes the branch that peaks higher unless
// path (conditions recorded from a run, Config.Conditions) says which.
func (t *Trainer) PlanStep(feeds map[string]ir.Type, path []bool) (*exec.Plan, error) {
	if feeds != nil {
		return t.train.Plan(exec.PlanOptions{Feeds: feeds, FeedsAllocated: true, Path: path})
	}
	return planStep(t.train, t.task, t.shard(), path)
}

// shard is the batch each rank trains on: the global batch divided by
// the number of ranks (resolve checks that it divides).
func (t *Trainer) shard() int { return t.cfg.Batch / max(1, t.ranks) }

func planStep(x *exec.Executable, task models.Task, batch int, path []bool) (*exec.Plan, error) {
	feeds, trips := stepFeeds(x.Feeds(), task, batch)
	return x.Plan(exec.PlanOptions{Feeds: feeds, FeedsAllocated: true, Path: path, Trips: trips})
}

// stepFeeds gives the types of a step's feeds, the batch's largest (every
// dynamic dim the batch size, or what the task's models.PlanHinter says),
// and the trips of its loops.
func stepFeeds(specs []exec.FeedSpec, task models.Task, batch int) (map[string]ir.Type, int) {
	feeds := map[string]ir.Type{}
	var hint map[string][]int
	trips := 0
	if h, ok := task.(models.PlanHinter); ok {
		hint, trips = h.PlanHint(batch)
	}
	for _, f := range specs {
		if dims, ok := hint[f.Name]; ok {
			feeds[f.Name] = ir.TensorOf(f.Type.DType, dims...)
			continue
		}
		t := ir.TensorOf(f.Type.DType, f.Type.Dims...)
		for i, d := range t.Dims {
			if d == ir.Dynamic {
				t.Dims[i] = batch
			}
		}
		feeds[f.Name] = t
	}
	return feeds, trips
}

// PlanExceedsError says that the planned peak of a training step is above
// the memory limit: the run cannot fit, and nothing was allocated.
type PlanExceedsError struct {
	Model string
	Batch int
	Ranks int // a data-parallel job's ranks, each planned on its shard of Batch
	Limit int64
	Plan  *exec.Plan
}

func (e *PlanExceedsError) Error() string {
	var top []string
	for i, b := range e.Plan.AtPeak {
		if i == 3 {
			break
		}
		top = append(top, fmt.Sprintf("%s %q %s (%s)", b.Op, b.Value, mb(b.Bytes), b.Pos))
	}
	return fmt.Sprintf("ResourceExhaustedError: a training step of %s at %s needs %s at its peak (parameters, optimizer state and the batch: %s), more than the memory limit of %s; nothing was allocated. Largest buffers at the peak: %s",
		e.Model, batchOn(e.Batch, e.Ranks), mb(e.Plan.Peak), mb(e.Plan.Base), mb(e.Limit), strings.Join(top, "; "))
}

// batchOn says the batch a step trains on: the global batch, and in a
// data-parallel job the shard each rank holds (the memory is per rank).
func batchOn(batch, ranks int) string {
	if ranks > 1 {
		return fmt.Sprintf("batch %d (%d on each of %d ranks)", batch, batch/ranks, ranks)
	}
	return fmt.Sprintf("batch %d", batch)
}

func mb(n int64) string { return fmt.Sprintf("%.6fMB", float64(n)/(1<<20)) }
