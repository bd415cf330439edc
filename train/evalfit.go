package train

import (
	"errors"
	"fmt"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/models"
	"github.com/gopir/gopir/nn"
	"github.com/gopir/gopir/optim"
	"github.com/gopir/gopir/tensor"
)

// Fitting the final evaluation to the memory limit. The evaluation runs
// after training, with the parameters and the optimizer state still held,
// on the allocator the steps ran on: a run that trained within the cap
// must not run out of memory there. Before anything is allocated, the
// evaluation program is planned and replayed on an allocator of the cap
// holding what the run will hold then, and fed the first test batch as the
// task's Evaluate allocates it (its labels included). A task whose metrics
// do not depend on the batch (models.EvalBatcher) gets the largest batch,
// up to its default, that fits; otherwise, or when not even one sample
// fits, the run is refused.

// errPlanned stops a task's Evaluate after its first batch was planned.
var errPlanned = errors.New("evaluation planned")

// evalFit plans the evaluation on a replay of the allocator at evaluation
// time.
type evalFit struct {
	t      *Trainer
	x      *exec.Executable
	replay *memory.Allocator
	store  *exec.Store
	limit  int64
}

// fitEval sets the evaluation batch for the memory limit, or refuses with
// an *EvalExceedsError. Without a limit, or for a program the planner
// cannot size, nothing changes.
func (t *Trainer) fitEval(prog *ir.Program, opts exec.Options, mod *nn.Module, state optim.State) error {
	limit := t.cfg.MemLimit
	if limit <= 0 {
		return nil
	}
	ef, err := t.newEvalFit(prog, opts, mod, state, limit)
	if err != nil {
		return err
	}
	defer ef.release()
	need, err := ef.need()
	var u *exec.UnplannableError
	switch {
	case errors.As(err, &u):
		return nil
	case err != nil:
		return err
	case need <= limit:
		return nil
	}
	eb, ok := t.task.(models.EvalBatcher)
	if !ok {
		return t.evalRefusal(prog, opts, mod, state, 0, need)
	}
	def := eb.EvalBatch()
	fits := func(n int) (int64, error) {
		eb.SetEvalBatch(n)
		return ef.need()
	}
	if need, err = fits(1); err != nil || need > limit {
		eb.SetEvalBatch(def)
		if err != nil {
			return err
		}
		return t.evalRefusal(prog, opts, mod, state, 1, need)
	}
	// The largest batch that fits: lo fits, hi does not.
	lo, hi := 1, def
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		n, err := fits(mid)
		if err != nil {
			eb.SetEvalBatch(def)
			return err
		}
		if n <= limit {
			lo = mid
		} else {
			hi = mid
		}
	}
	eb.SetEvalBatch(lo)
	t.evalBatch = [2]int{def, lo}
	return nil
}

// newEvalFit compiles prog for planning against a replay allocator of
// limit holding the parameters and optimizer state, created as New
// creates them.
func (t *Trainer) newEvalFit(prog *ir.Program, opts exec.Options, mod *nn.Module, state optim.State, limit int64) (*evalFit, error) {
	ao := t.alloc.Options()
	ao.Limit = limit
	ef := &evalFit{t: t, replay: memory.New(ao), store: exec.NewStore(), limit: limit}
	err := mod.Create(ef.replay, t.cfg.Seed, ef.store.Set)
	if err == nil {
		err = state.Create(ef.replay, ef.store.Set)
	}
	if err == nil {
		opts.Alloc, opts.Store = ef.replay, ef.store
		opts.MemoryLog, opts.Conditions = nil, nil // nothing runs
		ef.x, err = exec.Compile(prog, opts)
	}
	if err != nil {
		ef.release()
		return nil, err
	}
	return ef, nil
}

func (ef *evalFit) release() { ef.store.Release() }

// need returns the bytes the evaluation needs at its peak with the task's
// current evaluation batch: the planned peak, plus what Evaluate holds
// besides the feeds (the labels), and when the replay finds no room for a
// buffer, more than the limit.
func (ef *evalFit) need() (int64, error) {
	var need int64
	run := func(feeds map[string]*tensor.Tensor) (exec.Results, error) {
		types := map[string]ir.Type{}
		batch := 0
		for name, x := range feeds {
			types[name] = ir.TensorOf(ir.DType(x.DType()), x.Shape()...)
		}
		trips := 0
		if h, ok := ef.t.task.(models.PlanHinter); ok {
			// The test set's longest batch, not the first.
			if eb, ok := ef.t.task.(models.EvalBatcher); ok {
				batch = eb.EvalBatch()
			}
			var hint map[string][]int
			hint, trips = h.PlanHint(batch)
			for name, dims := range hint {
				if t, ok := types[name]; ok && batch > 0 {
					types[name] = ir.TensorOf(t.DType, dims...)
				}
			}
		}
		opts := exec.PlanOptions{Feeds: types, FeedsAllocated: true, Trips: trips}
		plan, err := ef.x.Plan(opts)
		if err != nil {
			return nil, err
		}
		// Evaluate's other buffers (the labels) stay allocated through
		// the run.
		need = plan.Peak + max(0, ef.replay.Stats().Allocated.Current-plan.Base)
		if need > ef.limit {
			return nil, errPlanned
		}
		opts.Replay = ef.replay
		var oom *memory.ResourceExhausted
		if _, err := ef.x.Plan(opts); errors.As(err, &oom) {
			need = max(need+oom.Requested, ef.limit+1)
		} else if err != nil {
			return nil, err
		}
		return nil, errPlanned
	}
	_, err := ef.t.task.Evaluate(ef.replay, run)
	var oom *memory.ResourceExhausted
	switch {
	case errors.Is(err, errPlanned):
		return need, nil
	case errors.As(err, &oom):
		// The test batch itself finds no room.
		return max(ef.replay.Stats().Allocated.Current+oom.Requested, ef.limit+1), nil
	case err != nil:
		return 0, fmt.Errorf("planning the evaluation: %w", err)
	}
	return 0, errors.New("planning the evaluation: the task evaluated nothing")
}

// evalRefusal returns the *EvalExceedsError of an evaluation at batch
// (0: the task's only batch) that needs need bytes.
func (t *Trainer) evalRefusal(prog *ir.Program, opts exec.Options, mod *nn.Module, state optim.State, batch int, need int64) error {
	return &EvalExceedsError{Model: t.cfg.Model, Batch: batch, Limit: t.cfg.MemLimit, Need: need,
		Works: t.evalFloor(prog, opts, mod, state, need)}
}

// evalFloor returns a cap at which the evaluation fits at its smallest
// batch: from, growing by a sixty-fourth, the first at which the replay
// also finds room for every buffer.
func (t *Trainer) evalFloor(prog *ir.Program, opts exec.Options, mod *nn.Module, state optim.State, from int64) int64 {
	return growCap(from, func(limit int64) bool { return t.evalFitsAt(prog, opts, mod, state, limit) })
}

// evalFitsAt reports whether the evaluation fits a cap of limit at its
// smallest batch (or one the planner cannot size).
func (t *Trainer) evalFitsAt(prog *ir.Program, opts exec.Options, mod *nn.Module, state optim.State, limit int64) bool {
	ef, err := t.newEvalFit(prog, opts, mod, state, limit)
	if err != nil {
		return false
	}
	defer ef.release()
	if eb, ok := t.task.(models.EvalBatcher); ok {
		def := eb.EvalBatch()
		eb.SetEvalBatch(1)
		defer eb.SetEvalBatch(def)
	}
	n, err := ef.need()
	var u *exec.UnplannableError
	return errors.As(err, &u) || err == nil && n <= limit
}

// EvalExceedsError says that the final evaluation does not fit the memory
// limit, with the parameters and optimizer state held, at its smallest
// batch. Nothing was allocated.
type EvalExceedsError struct {
	Model string
	Batch int // the batch planned: 1, or 0 for a task whose evaluation batch is fixed
	Limit int64
	Need  int64 // the planned peak, with what the allocator's holes ask for
	Works int64 // a --mem-limit at which it fits
}

func (e *EvalExceedsError) Error() string {
	at := fmt.Sprintf("at batch %d", e.Batch)
	if e.Batch == 0 {
		at = "at its fixed batch (its metrics depend on the batch)"
	}
	return fmt.Sprintf("ResourceExhaustedError: the evaluation of %s %s needs %s at its peak with the parameters and optimizer state held: more than the memory limit of %s; nothing was allocated. --mem-limit %d works",
		e.Model, at, mb(e.Need), mb(e.Limit), e.Works)
}
