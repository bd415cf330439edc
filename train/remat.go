package train

import (
	"errors"
	"fmt"
	"sort"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/models"
	"github.com/gopir/gopir/nn"
	"github.com/gopir/gopir/optim"
	"github.com/gopir/gopir/remat"
	"github.com/gopir/gopir/tensor"
)

// Fitting a step to the memory limit. The limit caps the allocator, so a
// step fits when its planned peak is within it and when every buffer finds
// room among the holes the earlier ones leave. The second is checked by
// replaying the planned step on an allocator of the same limit, set up as
// the run's will be (the parameters and optimizer state created the same
// way, the first batch's feeds allocated in the same order): allocation is
// deterministic, and each step frees everything it allocates, so the
// replay meets the holes the run will meet.

// stepFit plans the training step of one program for a budget.
type stepFit struct {
	t      *Trainer
	opts   exec.Options
	feeds  map[string]ir.Type
	trips  int
	budget int64
	// replay, when the allocator is capped, is an allocator of that cap
	// holding the parameters, optimizer state and feeds as the run will.
	replay *memory.Allocator
	held   []*tensor.Tensor
}

// fit returns the program to compile for the memory limit: prog itself
// when its step fits or no limit is set, else prog rematerialized to fit
// (package remat), unless Config.NoRemat asks to refuse instead. A
// program the planner cannot size is left as it is: the allocator's limit
// still holds at run time.
func (t *Trainer) fit(prog *ir.Program, opts exec.Options, mod *nn.Module, state optim.State) (*ir.Program, *remat.Result, error) {
	r := t.cfg
	budget := r.budget()
	if budget <= 0 {
		return prog, nil, nil
	}
	natural, err := t.newStepFit(prog, opts, budget).plan(prog)
	var u *exec.UnplannableError
	switch {
	case errors.As(err, &u):
		return prog, nil, nil
	case err != nil:
		return nil, nil, err
	case r.NoRemat:
		return prog, nil, t.refuse(prog, opts, mod, state, natural, budget)
	}
	sf, err := t.replayed(prog, opts, mod, state, budget, r.MemLimit)
	if err == nil {
		if natural.Peak <= budget {
			if p, err := sf.plan(prog); err == nil && p.Peak <= budget {
				sf.release()
				return prog, nil, nil
			}
		}
		var res *remat.Result
		res, err = sf.remat(prog)
		sf.release()
		if err == nil {
			t.phases = rematPhases(res, t.phases)
			return res.Program, res, nil
		}
	}
	var floor *remat.FloorError
	var oom *memory.ResourceExhausted
	if errors.As(err, &floor) || errors.As(err, &oom) {
		return nil, nil, t.floorError(prog, opts, mod, state, natural.Peak, budget)
	}
	return nil, nil, fmt.Errorf("rematerialization: %w", err)
}

// refuse, for Config.NoRemat, returns a *PlanExceedsError when a step of
// prog does not fit in the budget as it is.
func (t *Trainer) refuse(prog *ir.Program, opts exec.Options, mod *nn.Module, state optim.State, natural *exec.Plan, budget int64) error {
	r := t.cfg
	if natural.Peak > budget {
		return &PlanExceedsError{Model: r.Model, Batch: r.Batch, Ranks: t.ranks, Limit: budget, Plan: natural}
	}
	sf, err := t.replayed(prog, opts, mod, state, budget, r.MemLimit)
	if err != nil {
		return err
	}
	defer sf.release()
	p, err := sf.plan(prog)
	if err != nil {
		return err
	}
	if p.Peak > budget {
		return &PlanExceedsError{Model: r.Model, Batch: r.Batch, Ranks: t.ranks, Limit: budget, Plan: p}
	}
	return nil
}

// rematPhases gives the ops of the rematerialized program the phases of
// the ops they copy; an inserted op runs in the phase of the op it was
// inserted before (a recomputation before a backward op in the backward).
func rematPhases(res *remat.Result, old map[*ir.Op]string) map[*ir.Op]string {
	phases := map[*ir.Op]string{}
	ops := res.Program.Body().Ops()
	next := "update"
	for i := len(ops) - 1; i >= 0; i-- {
		if o := res.Origin(ops[i]); o != nil {
			next = old[o]
		}
		phases[ops[i]] = next
	}
	return phases
}

// newStepFit plans steps of prog for the budget without a replay.
func (t *Trainer) newStepFit(prog *ir.Program, opts exec.Options, budget int64) *stepFit {
	feeds, trips := stepFeeds(programFeeds(prog), t.task, t.shard())
	return &stepFit{t: t, opts: opts, feeds: feeds, trips: trips, budget: budget}
}

// replayed plans steps of prog for the budget, and when limit caps the
// allocator, with a replay: it creates the parameters, the optimizer
// state and the first batch's feeds on an allocator of that cap, as the
// run will. It fails with *memory.ResourceExhausted when they do not fit.
func (t *Trainer) replayed(prog *ir.Program, opts exec.Options, mod *nn.Module, state optim.State, budget, limit int64) (*stepFit, error) {
	sf := t.newStepFit(prog, opts, budget)
	if limit <= 0 {
		return sf, nil
	}
	ao := t.alloc.Options()
	ao.Limit = limit
	sf.replay = memory.New(ao)
	store := exec.NewStore()
	put := func(name string, x *tensor.Tensor) { store.Set(name, x) }
	err := mod.Create(sf.replay, t.cfg.Seed, put)
	if err == nil {
		err = state.Create(sf.replay, put)
	}
	for _, n := range store.Names() {
		x, _ := store.Get(n)
		sf.held = append(sf.held, x.Retain())
	}
	store.Release()
	if err != nil {
		sf.release()
		return nil, err
	}
	order, err := feedOrder(t.task)
	if err != nil {
		sf.release()
		return nil, err
	}
	for _, name := range order {
		typ, ok := sf.feeds[name]
		if !ok {
			continue
		}
		x, err := tensor.New(sf.replay, tensor.DType(typ.DType), typ.Dims...)
		if err != nil {
			sf.release()
			return nil, err
		}
		sf.held = append(sf.held, x)
	}
	return sf, nil
}

// feedOrder lists the names of the first training batch's feeds in the
// order the task allocates them.
func feedOrder(task models.Task) ([]string, error) {
	a := memory.New(memory.Options{})
	f, err := task.TrainFeeds(a, 0, 0)
	if err != nil {
		return nil, err
	}
	defer f.Release()
	names := make([]string, 0, len(f.Tensors))
	for n := range f.Tensors {
		names = append(names, n)
	}
	id := func(n string) uint64 {
		if b := f.Tensors[n].Storage().Block(); b != nil {
			return b.ID()
		}
		return 0
	}
	sort.Slice(names, func(i, j int) bool { return id(names[i]) < id(names[j]) })
	return names, nil
}

func (sf *stepFit) release() {
	for _, x := range sf.held {
		x.Release()
	}
	sf.held = nil
}

// plan plans a step of p. A step whose replay finds no room for a buffer
// counts as peaking higher by that buffer's bytes: as far as the limit is
// concerned, it needs them.
func (sf *stepFit) plan(p *ir.Program) (*exec.Plan, error) {
	x, err := exec.Compile(p, sf.opts)
	if err != nil {
		return nil, err
	}
	opts := exec.PlanOptions{Feeds: sf.feeds, FeedsAllocated: true, Trips: sf.trips}
	plan, err := x.Plan(opts)
	if err != nil || plan.Peak > sf.budget {
		return plan, err
	}
	if sf.replay == nil {
		return plan, nil
	}
	opts.Replay = sf.replay
	var oom *memory.ResourceExhausted
	if _, err := x.Plan(opts); errors.As(err, &oom) {
		short := *plan
		short.Peak = max(plan.Peak+oom.Requested, sf.budget+1)
		return &short, nil
	} else if err != nil {
		return nil, err
	}
	return plan, nil
}

// remat fits p to the limit.
func (sf *stepFit) remat(p *ir.Program) (*remat.Result, error) {
	return remat.Fit(p, remat.Options{Budget: sf.budget, Backward: backwardStart(p, sf.t.phases), Plan: sf.plan, Feeds: sf.feeds, Trips: sf.trips})
}

// backwardStart is the first top-level op after the last forward one
// (autodiff puts a loop's trip counter and tapes before the loop, among
// the forward ops).
func backwardStart(p *ir.Program, phases map[*ir.Op]string) *ir.Op {
	var start *ir.Op
	for _, op := range p.Body().Ops() {
		switch {
		case phases[op] == "forward":
			start = nil
		case start == nil:
			start = op
		}
	}
	return start
}

// floorError finds, for a refusal, the lowest peak rematerialization
// plans, and when the budget is the allocator's cap, a cap that works:
// the allocator's holes may ask for more than the planned peak, so the cap
// grows from there by a sixty-fourth until a rematerialized step also
// finds room for every buffer in the replay.
func (t *Trainer) floorError(prog *ir.Program, opts exec.Options, mod *nn.Module, state optim.State, natural, budget int64) error {
	r := t.cfg
	_, err := t.newStepFit(prog, opts, 0).remat(prog)
	var floor *remat.FloorError
	if !errors.As(err, &floor) {
		return fmt.Errorf("rematerialization: no floor: %v", err)
	}
	refusal := &FloorError{Model: r.Model, Batch: r.Batch, Ranks: t.ranks, Budget: budget, Natural: natural, Planned: floor.Floor, Floor: floor.Floor, Capped: budget == r.MemLimit}
	if !refusal.Capped {
		return refusal
	}
	refusal.Floor = growCap(refusal.Floor, func(limit int64) bool {
		sf, err := t.replayed(prog, opts, mod, state, limit, limit)
		if err == nil {
			_, err = sf.remat(prog)
			sf.release()
		}
		return err == nil
	})
	return refusal
}

// growCap returns the first cap, from from and growing by a sixty-fourth
// (at least 64 bytes), at which fits reports that a run finds room among
// the allocator's holes; after 64 tries, the cap it has grown to.
func growCap(from int64, fits func(limit int64) bool) int64 {
	limit := from
	for range 64 {
		if fits(limit) {
			return limit
		}
		limit += max(limit/64, 64)
	}
	return limit
}

// programFeeds lists the feeds of p.
func programFeeds(p *ir.Program) []exec.FeedSpec {
	var out []exec.FeedSpec
	for _, op := range p.Body().Ops() {
		if op.Name() == "data" {
			name, _ := op.Attrs.Str("name")
			out = append(out, exec.FeedSpec{Name: name, Type: op.Result(0).Type()})
		}
	}
	return out
}

// Rematerialize prepares the run cfg describes, without allocating its
// parameters or running anything, and returns the rematerialization its
// budget asks for (nil when a step fits as it is) and the plan of the step
// it would train: what gopir plan and gopir print show.
func Rematerialize(cfg Config) (*remat.Result, *exec.Plan, error) {
	t, _, _, err := prepare(cfg)
	if err != nil {
		return nil, nil, setupError(err)
	}
	plan, err := planStep(t.train, t.task, t.shard(), nil)
	return t.remat, plan, err
}

// FloorError says that no rematerialization fits a training step in the
// budget. Nothing was allocated.
type FloorError struct {
	Model   string
	Batch   int
	Ranks   int // a data-parallel job's ranks, each planned on its shard of Batch
	Budget  int64
	Natural int64 // the planned peak as the program is
	// Planned is the lowest planned peak the rematerializer's search
	// reaches (a greedy search: not a proof that nothing lower exists).
	Planned int64
	// Floor is a budget that works: Planned, or when the budget is the
	// allocator's cap (Capped, --mem-limit), a cap at which every buffer
	// of the rematerialized step also finds room among the holes the
	// others leave (within a sixty-fourth of the smallest, as found).
	Floor  int64
	Capped bool
	// ForEval says that Floor was raised for the final evaluation, which
	// runs with the parameters and optimizer state held, at its smallest
	// batch.
	ForEval bool
}

func (e *FloorError) Error() string {
	msg := fmt.Sprintf("ResourceExhaustedError: a training step of %s at %s needs %s at its peak, and %s at the lowest that recomputing values instead of keeping them reaches",
		e.Model, batchOn(e.Batch, e.Ranks), mb(e.Natural), mb(e.Planned))
	if !e.Capped {
		return msg + fmt.Sprintf(": more than the peak budget of %s; nothing was allocated. The smallest budget that works is %d bytes", mb(e.Budget), e.Floor)
	}
	if e.Floor > e.Planned {
		msg += fmt.Sprintf(", and the allocator's holes ask for up to %s", mb(e.Floor))
	}
	msg += fmt.Sprintf(": more than the memory limit of %s; nothing was allocated. --mem-limit %d works", mb(e.Budget), e.Floor)
	if e.ForEval {
		msg += " (the final evaluation needs that much)"
	}
	return msg
}

// Remat returns the rematerialization the run trains with, or nil when
// its step fits in the memory limit as it is (or remat is off).
func (t *Trainer) Remat() *remat.Result { return t.remat }

// rematLine is the log line of a rematerialized run.
func rematLine(res *remat.Result, limit int64) string {
	return fmt.Sprintf("remat: natural peak %s, budget %s, planned peak %s, recomputed %.3g MFLOP (%.1f%% of the step) in %d ops, %d loops and %d splits over the batch",
		mb(res.Natural), mb(limit), mb(res.Peak), float64(res.RecomputedFlops)/1e6, percent(res.RecomputedFlops, res.StepFlops), len(res.Recomputed), len(res.Checkpointed), len(res.Splits))
}

func percent(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}
