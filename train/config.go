package train

import (
	"fmt"

	"github.com/gopir/gopir/dist"
	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/models"
	"github.com/gopir/gopir/optim"
)

// Config is one training run. Zero values take the task's defaults.
type Config struct {
	Model    string
	Steps    int // total steps; wins over Epochs
	Epochs   int
	Batch    int
	LR       float64
	Seed     int64
	MemLimit int64 // allocator capacity in bytes; 0 is unlimited
	// PeakBudget, when set below MemLimit (or without it), is the most
	// bytes a step's planned peak may reach, without capping the
	// allocator. A step over its budget (PeakBudget, else MemLimit) is
	// rematerialized to fit (package remat).
	PeakBudget int64
	// NoRemat refuses a step over its budget instead of rematerializing.
	NoRemat    bool
	LogEvery   int // log every K steps (and the last one); 0 means 10
	JSON       bool
	Save       string // checkpoint directory written at the end (and on interrupt)
	Resume     string // checkpoint directory to continue from
	CheckLeaks bool
	DataDir    string
	Threads    int
	// ImageSize is the image side for models that take several
	// (models.Resizable); 0 is the model's default.
	ImageSize int
	// DType is the float type of the parameters and arithmetic: ir.F32
	// (the zero value means it) or ir.F64 for the models that build in
	// it (models.Precisions).
	DType ir.DType
	// Progress shows a progress bar on the given terminal; nil hides it.
	Progress interface{ Write([]byte) (int, error) }
	// MemoryLog, if set, receives a record after every instruction of every
	// training and evaluation step (exec.Options.MemoryLog).
	MemoryLog func(exec.MemoryRecord)
	// Conditions, if set, receives every condition the training and
	// evaluation steps evaluate (exec.Options.Conditions).
	Conditions func(op *ir.Op, value bool)
	// Observer, if set, is told when each training step begins and ends.
	Observer StepObserver

	// Comm makes the run one rank of a data-parallel job of Comm.Size()
	// ranks (package dist, docs/distributed.md); nil trains alone. Batch
	// is then the global batch, which Size must divide; each rank trains
	// on its shard of it, gradients are averaged over the ranks in the
	// training program, only rank 0 logs, evaluates and saves, and the
	// logged loss is the global batch's. Every rank must be given the
	// same Config but for Comm. A rank whose New or Run fails must abort
	// the job (Comm.Abort), or the others wait for it forever.
	Comm dist.Comm
	// SyncBN synchronizes batch norm over the ranks (nn.Module.SyncBN);
	// without it each rank normalises with its shard's statistics.
	SyncBN bool
	// CheckReplicas makes every step of a data-parallel run compare a
	// CRC-32C of each rank's parameters and optimizer state (and batch
	// norm running statistics with SyncBN) and fail if they differ.
	CheckReplicas bool
	// BucketBytes is the gradient bucket size (dist.Options).
	BucketBytes int64
	// Ranks is the job size that BuildTraining, Plan and Rematerialize
	// build for when Comm is nil, to print or plan a data-parallel step
	// as each of its ranks runs it (on a shard of Batch); New refuses it
	// without Comm.
	Ranks int
}

// dtype is the run's float type.
func (c Config) dtype() ir.DType {
	if c.DType == ir.InvalidDType {
		return ir.F32
	}
	return c.DType
}

// ranks is the number of ranks of the run and this one's rank.
func (c Config) ranks() (rank, size int) {
	if c.Comm == nil {
		return 0, max(1, c.Ranks)
	}
	return c.Comm.Rank(), c.Comm.Size()
}

// resolved is a Config with the task's defaults filled in.
type resolved struct {
	Config
	defaults models.Defaults
	total    int // steps to run in all
}

func resolve(cfg Config, task models.Task) (resolved, error) {
	d := task.Defaults()
	r := resolved{Config: cfg, defaults: d}
	if r.Batch == 0 {
		r.Batch = d.Batch
	}
	if r.LR == 0 {
		r.LR = d.LR
	}
	if r.LogEvery == 0 {
		r.LogEvery = 10
	}
	switch {
	case r.Batch <= 0:
		return r, fmt.Errorf("--batch %d: want at least 1", r.Batch)
	case r.LR < 0:
		return r, fmt.Errorf("--lr %g: want a positive learning rate", r.LR)
	case r.Steps < 0 || r.Epochs < 0:
		return r, fmt.Errorf("--steps and --epochs must not be negative")
	case r.LogEvery < 0:
		return r, fmt.Errorf("--log-every %d: want at least 1", r.LogEvery)
	case r.PeakBudget < 0:
		return r, fmt.Errorf("a peak budget of %d bytes: want a positive size", r.PeakBudget)
	}
	if _, n := r.ranks(); r.Batch%n != 0 {
		return r, fmt.Errorf("--batch %d: the global batch must be divisible by the %d ranks", r.Batch, n)
	}
	return r, nil
}

// budget is the most bytes a step's planned peak may reach, 0 for no
// budget.
func (r resolved) budget() int64 {
	if r.PeakBudget > 0 && (r.MemLimit <= 0 || r.PeakBudget < r.MemLimit) {
		return r.PeakBudget
	}
	return r.MemLimit
}

// optimizer returns the optimizer and schedule the run uses.
func (r resolved) optimizer() (optim.Optimizer, optim.Schedule, error) {
	d := r.defaults
	var opt optim.Optimizer
	switch d.Optimizer {
	case "", "adam":
		a := optim.NewAdam(r.LR)
		a.WeightDecay = d.WeightDecay
		opt = a
	case "adamw":
		opt = optim.NewAdamW(r.LR, d.WeightDecay)
	case "sgd":
		opt = &optim.SGD{LR: r.LR, WeightDecay: d.WeightDecay}
	case "momentum":
		opt = &optim.SGD{LR: r.LR, Momentum: 0.9, WeightDecay: d.WeightDecay}
	default:
		return nil, nil, fmt.Errorf("unknown optimizer %q", d.Optimizer)
	}
	var sched optim.Schedule
	switch d.Schedule {
	case "", "constant":
		sched = optim.Constant(r.LR)
	case "cosine":
		sched = optim.Cosine{Base: r.LR, Min: r.LR / 100, TotalSteps: max(1, r.total-d.WarmupSteps)}
	case "step":
		sched = optim.StepDecay{Base: r.LR, Gamma: 0.1, StepSize: max(1, r.total/3)}
	default:
		return nil, nil, fmt.Errorf("unknown schedule %q", d.Schedule)
	}
	if d.WarmupSteps > 0 {
		sched = optim.Warmup{Steps: d.WarmupSteps, Then: sched}
	}
	return opt, sched, nil
}
