package train

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/dist"
	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/models"
	"github.com/gopir/gopir/nn"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/optim"
	"github.com/gopir/gopir/remat"
	"github.com/gopir/gopir/tensor"
)

// Trainer runs one training job.
type Trainer struct {
	cfg   resolved
	task  models.Task
	alloc *memory.Allocator
	store *exec.Store
	train *exec.Executable
	eval  *exec.Executable
	sched optim.Schedule
	lr    *tensor.Tensor // the learning-rate parameter in the store
	extra []string       // per-step fetches besides the loss, sorted
	spe   int            // steps per epoch
	step  int            // steps done
	// phases names the phase of each top-level op of the training
	// program: forward, backward or update.
	phases map[*ir.Op]string
	// remat is the rematerialization the training program went through,
	// or nil.
	remat *remat.Result
	// evalBatch is, when the memory limit shrank the evaluation batch,
	// the task's default and the batch that fits.
	evalBatch [2]int

	// A data-parallel run (Config.Comm): this rank, the job's size, and
	// the store names whose values every rank must hold alike (for
	// Config.CheckReplicas).
	comm        dist.Comm
	rank, ranks int
	replicated  []string
}

// Phase returns the phase of a top-level op of the training program
// ("forward", "backward" or "update"), or "".
func (t *Trainer) Phase(op *ir.Op) string { return t.phases[op] }

// StepObserver watches training steps: a memory timeline or a trace
// records them this way (Config.Observer).
type StepObserver interface {
	// BeginStep is called right before a step's run: its feeds are
	// allocated and the allocator's peak is reset.
	BeginStep(t *Trainer, step int)
	// EndStep is called when the step is over, its results and feeds
	// released: with its record, or with the error that ended it.
	EndStep(t *Trainer, rec StepRecord, err error)
}

// ErrInterrupted is returned by Run when its context is cancelled; the
// checkpoint, if one was asked for, has been written.
var ErrInterrupted = errors.New("training interrupted")

// New prepares a run: it loads the task's data, builds and compiles the
// training and evaluation programs, and creates the parameters and the
// optimizer state (or loads them from cfg.Resume).
func New(cfg Config) (*Trainer, error) {
	t, err := newTrainer(cfg)
	return t, setupError(err)
}

func newTrainer(cfg Config) (*Trainer, error) {
	if cfg.Comm == nil && cfg.Ranks > 1 {
		return nil, fmt.Errorf("%d ranks without a communicator: Config.Ranks alone builds and plans a data-parallel step, it does not train", cfg.Ranks)
	}
	t, mod, state, err := prepare(cfg)
	if err != nil {
		return nil, err
	}
	r := t.cfg
	if err := mod.Create(t.alloc, r.Seed, t.store.Set); err != nil {
		t.Close()
		return nil, err
	}
	if err := state.Create(t.alloc, t.store.Set); err != nil {
		t.Close()
		return nil, err
	}
	t.lr, _ = t.store.Get(state.LR)
	for _, p := range mod.Params() {
		if p.Trainable || r.SyncBN {
			t.replicated = append(t.replicated, p.Name)
		}
	}
	for _, sp := range state.Specs {
		t.replicated = append(t.replicated, sp.Name)
	}
	sort.Strings(t.replicated)
	if t.comm != nil {
		err = t.startReplicas(r.Resume)
	} else if r.Resume != "" {
		err = t.restore(r.Resume)
	}
	if err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// Plan plans one training step of the run cfg describes (see PlanStep)
// without allocating its parameters or running anything; with backward
// false, one step of the evaluation program instead.
func Plan(cfg Config, backward bool) (*exec.Plan, error) {
	t, _, _, err := prepare(cfg)
	if err != nil {
		return nil, setupError(err)
	}
	x, batch := t.train, t.shard()
	if !backward {
		x, batch = t.eval, t.cfg.Batch
	}
	return planStep(x, t.task, batch, nil)
}

// prepare loads the task's data and builds and compiles the training and
// evaluation programs: everything but the parameters and the optimizer
// state, which the returned module and state create.
func prepare(cfg Config) (*Trainer, *nn.Module, optim.State, error) {
	name := cfg.Model
	if name == "" {
		name = "tinydet"
	}
	cfg.Model = name
	task, err := newTask(cfg)
	if err != nil {
		return nil, nil, optim.State{}, err
	}
	if rank, _ := cfg.ranks(); cfg.Save != "" && rank == 0 {
		// Before training: a run must not end in a save that cannot work.
		if err := checkSaveDir(cfg.Save); err != nil {
			return nil, nil, optim.State{}, fmt.Errorf("--save: %w", err)
		}
	}
	r, err := resolve(cfg, task)
	if err != nil {
		return nil, nil, optim.State{}, err
	}
	t := &Trainer{cfg: r, task: task, comm: cfg.Comm}
	t.rank, t.ranks = cfg.ranks()
	if err := task.Load(models.DataConfig{Batch: r.Batch, Seed: r.Seed, DataDir: r.DataDir, Rank: t.rank, Ranks: t.ranks}); err != nil {
		return nil, nil, optim.State{}, err
	}
	t.spe = task.StepsPerEpoch()
	if t.spe <= 0 {
		return nil, nil, optim.State{}, fmt.Errorf("model %s: no training batches", name)
	}
	switch {
	case r.Steps > 0:
		t.cfg.total = r.Steps
	case r.Epochs > 0:
		t.cfg.total = r.Epochs * t.spe
	case r.defaults.Steps > 0:
		t.cfg.total = r.defaults.Steps
	default:
		t.cfg.total = max(1, r.defaults.Epochs) * t.spe
	}
	opt, sched, err := t.cfg.optimizer()
	if err != nil {
		return nil, nil, optim.State{}, err
	}
	t.sched = sched
	t.alloc = memory.New(memory.Options{Limit: r.MemLimit})
	t.store = exec.NewStore()

	trainProg, mod, state, err := t.buildTrain(opt)
	if err != nil {
		return nil, nil, optim.State{}, fmt.Errorf("model %s: %w", name, err)
	}
	evalProg, err := t.buildEval()
	if err != nil {
		return nil, nil, optim.State{}, fmt.Errorf("model %s: %w", name, err)
	}
	opts := exec.Options{Alloc: t.alloc, Store: t.store, Threads: r.Threads, Seed: r.Seed, CheckLeaks: r.CheckLeaks, MemoryLog: r.MemoryLog, Conditions: r.Conditions}
	evalOpts := opts
	if t.comm != nil {
		opts.Comm = t.comm
		opts.Seed = rankSeed(r.Seed, t.rank)
	}
	if trainProg, t.remat, err = t.fit(trainProg, opts, mod, state); err != nil {
		// The limit a refusal names must fit the evaluation too.
		var floor *FloorError
		if errors.As(err, &floor) && floor.Capped {
			if w := t.evalFloor(evalProg, evalOpts, mod, state, floor.Floor); w > floor.Floor {
				floor.Floor, floor.ForEval = w, true
			}
		}
		return nil, nil, optim.State{}, err
	}
	if err := t.fitEval(evalProg, evalOpts, mod, state); err != nil {
		return nil, nil, optim.State{}, err
	}
	if t.train, err = exec.Compile(trainProg, opts); err != nil {
		return nil, nil, optim.State{}, fmt.Errorf("model %s: training program: %w", name, err)
	}
	if t.eval, err = exec.Compile(evalProg, evalOpts); err != nil {
		return nil, nil, optim.State{}, fmt.Errorf("model %s: evaluation program: %w", name, err)
	}
	return t, mod, state, nil
}

// BuildTraining returns the task's training program (forward, loss,
// backward and optimizer update) as New compiles it, for printing.
func BuildTraining(cfg Config) (*ir.Program, error) {
	task, err := newTask(cfg)
	if err != nil {
		return nil, err
	}
	r, err := resolve(cfg, task)
	if err != nil {
		return nil, err
	}
	t := &Trainer{cfg: r, task: task}
	t.rank, t.ranks = cfg.ranks()
	opt, _, err := r.optimizer()
	if err != nil {
		return nil, err
	}
	p, _, _, err := t.buildTrain(opt)
	return p, err
}

// BuildEvaluation returns the task's evaluation (forward-only) program.
func BuildEvaluation(model string) (*ir.Program, error) {
	return BuildInference(Config{Model: model}, false)
}

// BuildInference returns the evaluation program of cfg's model at cfg's
// image size; with deploy, its inference form (models.Deployable).
func BuildInference(cfg Config, deploy bool) (*ir.Program, error) {
	task, err := newTask(cfg)
	if err != nil {
		return nil, err
	}
	if deploy {
		d, ok := task.(models.Deployable)
		if !ok {
			return nil, fmt.Errorf("model %s has no inference form (--deploy)", cfg.Model)
		}
		d.SetDeploy(true)
	}
	return (&Trainer{cfg: resolved{Config: cfg}, task: task}).buildEval()
}

// LoadTask returns cfg's model with its data loaded as New loads it (the
// model's default batch when cfg has none), for tools that need its feeds
// without training it.
func LoadTask(cfg Config) (models.Task, error) {
	task, err := newTask(cfg)
	if err != nil {
		return nil, err
	}
	r, err := resolve(cfg, task)
	if err != nil {
		return nil, err
	}
	if err := task.Load(models.DataConfig{Batch: r.Batch, Seed: r.Seed, DataDir: r.DataDir}); err != nil {
		return nil, err
	}
	return task, nil
}

// InitialParameters returns the parameters a run of cfg starts from (the
// model's, batch norm statistics included; no optimizer state), by name,
// allocated from a, as New creates them.
func InitialParameters(cfg Config, a *memory.Allocator) (map[string]*tensor.Tensor, error) {
	task, err := newTask(cfg)
	if err != nil {
		return nil, err
	}
	mod := nn.NewModule(cfg.dtype(), true)
	if _, err := task.Build(ir.NewBuilder(ir.NewProgram()), mod); err != nil {
		return nil, err
	}
	out := map[string]*tensor.Tensor{}
	err = mod.Create(a, cfg.Seed, func(name string, t *tensor.Tensor) { out[name] = t })
	if err != nil {
		for _, t := range out {
			t.Release()
		}
		return nil, err
	}
	return out, nil
}

// newTask returns cfg's model, configured by configure.
func newTask(cfg Config) (models.Task, error) {
	task, err := models.New(cfg.Model)
	if err != nil {
		return nil, err
	}
	if err := configure(task, cfg); err != nil {
		return nil, err
	}
	return task, nil
}

// configure applies cfg's options of the model itself (the image size) to
// task.
func configure(task models.Task, cfg Config) error {
	if dt := cfg.dtype(); !dt.IsFloat() {
		return fmt.Errorf("--dtype %s: want f32 or f64", dt)
	} else if !models.SupportsDType(task, dt) {
		return fmt.Errorf("--dtype %s: model %s builds in f32 only", dt, task.Name())
	}
	if cfg.ImageSize == 0 {
		return nil
	}
	r, ok := task.(models.Resizable)
	if !ok {
		return fmt.Errorf("--image-size %d: model %s takes images of one size", cfg.ImageSize, task.Name())
	}
	if err := r.SetImageSize(cfg.ImageSize); err != nil {
		return fmt.Errorf("--image-size: %w", err)
	}
	return nil
}

func (t *Trainer) buildTrain(opt optim.Optimizer) (*ir.Program, *nn.Module, optim.State, error) {
	b := ir.NewBuilder(ir.NewProgram())
	mod := nn.NewModule(t.cfg.dtype(), true)
	t.phases = map[*ir.Op]string{}
	// phase names the top-level ops built since the last call.
	phase := func(name string) {
		for _, op := range b.Block().Ops() {
			if _, ok := t.phases[op]; !ok {
				t.phases[op] = name
			}
		}
	}
	mod.Replicas, mod.SyncBN = t.ranks, t.cfg.SyncBN
	if fb, ok := t.task.(models.FixedBatch); ok {
		fb.SetBatch(t.cfg.Batch / max(t.ranks, 1)) // each rank's shard
	}
	outs, err := t.task.Build(b, mod)
	if err != nil {
		return nil, nil, optim.State{}, err
	}
	if outs.Loss == nil {
		return nil, nil, optim.State{}, errors.New("the training program has no loss")
	}
	phase("forward")
	params := mod.Trainable()
	grads, err := autodiff.Backward(b, outs.Loss, params)
	if err != nil {
		return nil, nil, optim.State{}, err
	}
	loss := outs.Loss
	if t.ranks > 1 {
		// The loss of the global batch, for the log: its sum is started
		// where the forward pass made it and travels during the backward.
		top := b.Program().Body()
		at := len(top.Ops())
		if d := loss.Def(); d != nil && d.Block() == top {
			at = top.IndexOf(d) + 1
		}
		sum := ops.AllReduceStart(b.At(top, at), loss)
		// The mean gradient over the ranks, as DDP: clipping and the
		// updates then see the same values on every rank.
		if grads, _, err = dist.ReduceGradients(b, params, grads, dist.Options{BucketBytes: t.cfg.BucketBytes}); err != nil {
			return nil, nil, optim.State{}, err
		}
		loss = ops.AllReduceWait(b, sum, []ir.Type{loss.Type()}, true)[0]
	}
	if c := t.cfg.defaults.ClipNorm; c > 0 {
		grads, _ = optim.ClipByGlobalNorm(b, grads, c)
	}
	phase("backward")
	state, err := opt.Apply(b, params, grads)
	if err != nil {
		return nil, nil, optim.State{}, err
	}
	if t.ranks > 1 {
		// Each update waits only for its own bucket's sum.
		if err := dist.OverlapUpdates(b.Program().Body()); err != nil {
			return nil, nil, optim.State{}, err
		}
	}
	phase("update")
	ops.Fetch(b, "loss", loss)
	t.extra = t.extra[:0]
	for name, v := range outs.Fetches {
		ops.Fetch(b, name, v)
		t.extra = append(t.extra, name)
	}
	sort.Strings(t.extra)
	p, err := b.Finish()
	return p, mod, state, err
}

func (t *Trainer) buildEval() (*ir.Program, error) {
	b := ir.NewBuilder(ir.NewProgram())
	outs, err := t.task.Build(b, nn.NewModule(t.cfg.dtype(), false))
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(outs.Fetches))
	for n := range outs.Fetches {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ops.Fetch(b, n, outs.Fetches[n])
	}
	return b.Finish()
}

// Close releases the parameters and optimizer state.
func (t *Trainer) Close() {
	if t.store != nil {
		t.store.Release()
	}
}

// Allocator returns the allocator every buffer of the run comes from.
func (t *Trainer) Allocator() *memory.Allocator { return t.alloc }

// Store returns the parameters and optimizer state.
func (t *Trainer) Store() *exec.Store { return t.store }

// StepRecord is one training step as logged.
type StepRecord struct {
	Epoch         int                `json:"epoch"`
	Step          int                `json:"step"` // within the epoch, from 1
	GlobalStep    int                `json:"-"`    // from 1
	Loss          float64            `json:"loss"`
	MemAllocated  int64              `json:"mem_allocated"`
	MemReserved   int64              `json:"mem_reserved"`
	PeakAllocated int64              `json:"peak_allocated"`
	Extra         map[string]float64 `json:"-"`
}

// Step runs the next training step and returns its record. Allocated
// bytes are read after the step's feeds and fetches are released.
func (t *Trainer) Step(ctx context.Context) (StepRecord, error) {
	epoch, s := t.step/t.spe, t.step%t.spe
	// The learning rate is a store value: a step that fails or is
	// cancelled puts the old one back, so the store is untouched.
	oldLR := t.lr.Float64At(0)
	if err := optim.SetScalar(t.lr, t.sched.LR(t.step)); err != nil {
		return StepRecord{}, err
	}
	fail := func(err error) (StepRecord, error) {
		optim.SetScalar(t.lr, oldLR)
		return StepRecord{}, err
	}
	t.alloc.SetTag(memory.Tag{Op: "feeds", Value: t.cfg.Model, Step: int64(t.step)})
	feeds, err := t.task.TrainFeeds(t.alloc, epoch, s)
	if err != nil {
		return fail(err)
	}
	t.alloc.ResetPeak()
	t.train.SetRuns(int64(t.step))
	if t.comm != nil {
		// A rank must not stop in the middle of a step the others take:
		// Run (through Step) stops every rank together between steps.
		ctx = context.WithoutCancel(ctx)
	}
	obs := t.cfg.Observer
	if obs != nil {
		obs.BeginStep(t, t.step)
	}
	res, err := t.train.Run(ctx, feeds.Tensors)
	if err != nil {
		feeds.Release()
		if obs != nil {
			obs.EndStep(t, StepRecord{}, err)
		}
		return fail(err)
	}
	rec := StepRecord{Epoch: epoch, Step: s + 1, GlobalStep: t.step + 1, Loss: res["loss"].Float64At(0), Extra: map[string]float64{}}
	for k, v := range feeds.Info {
		rec.Extra[k] = v
	}
	for _, n := range t.extra {
		rec.Extra[n] = res[n].Float64At(0)
	}
	res.Release()
	feeds.Release()
	st := t.alloc.Stats()
	rec.MemAllocated, rec.MemReserved, rec.PeakAllocated = st.Allocated.Current, st.Reserved.Current, st.Allocated.Peak
	if obs != nil {
		obs.EndStep(t, rec, nil)
	}
	t.step++
	if t.comm != nil && t.cfg.CheckReplicas {
		if err := t.checkReplicas(); err != nil {
			return rec, err
		}
	}
	return rec, nil
}

// Done reports whether every step has run.
func (t *Trainer) Done() bool { return t.step >= t.cfg.total }

// Total is the number of steps of the run; StepsPerEpoch the steps of one
// epoch.
func (t *Trainer) Total() int         { return t.cfg.total }
func (t *Trainer) StepsPerEpoch() int { return t.spe }

// EvalBatch returns the batch Evaluate runs (the task's default unless
// the memory limit shrank it), or 0 for a task that does not say
// (models.EvalBatcher).
func (t *Trainer) EvalBatch() int {
	if eb, ok := t.task.(models.EvalBatcher); ok {
		return eb.EvalBatch()
	}
	return 0
}

// Evaluate runs the evaluation program over the task's test set.
func (t *Trainer) Evaluate(ctx context.Context) (map[string]float64, error) {
	return t.task.Evaluate(t.alloc, func(feeds map[string]*tensor.Tensor) (exec.Results, error) {
		return t.eval.Run(ctx, feeds)
	})
}
