package models

import (
	"fmt"
	"sort"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/nn"
	"github.com/gopir/gopir/tensor"
)

// Task is a model with its data and metric.
type Task interface {
	// Name is the task's name on the command line.
	Name() string
	// Defaults are the settings `gopir train --model NAME` uses when no
	// flag overrides them; they must finish within a few minutes on 2
	// cores.
	Defaults() Defaults
	// Build appends the model to b. With m.Training it returns the scalar
	// loss, plus any values to log per step (e.g. "num_gts"); otherwise the
	// outputs Evaluate reads.
	Build(b *ir.Builder, m *nn.Module) (Outputs, error)
	// Load prepares the datasets; called once before training.
	Load(cfg DataConfig) error
	// StepsPerEpoch is the number of training batches in one epoch.
	StepsPerEpoch() int
	// TrainFeeds returns the feeds of training step step (0-based) of
	// epoch epoch, allocated from a. The same (epoch, step) always gives
	// the same feeds, which is what makes a resumed run repeat the
	// original bit for bit.
	TrainFeeds(a *memory.Allocator, epoch, step int) (Feeds, error)
	// Evaluate runs the evaluation program over the test set through run
	// and returns the task's metrics ("accuracy" for classifiers, "map50"
	// for detection).
	Evaluate(a *memory.Allocator, run Runner) (map[string]float64, error)
}

// PlanHinter is implemented by tasks whose training feeds have dynamic
// dims other than the batch (the first dim), or loops whose trip counts
// come from the data: the shapes and trip count of their largest step,
// for planning its memory (exec.Plan) before any data is loaded.
type PlanHinter interface {
	PlanHint(batch int) (shapes map[string][]int, trips int)
}

// Resizable is implemented by tasks whose square images can be of several
// sizes (gopir train --image-size). SetImageSize is called before Load and
// Build and reports a size the model cannot take.
type Resizable interface {
	SetImageSize(side int) error
}

// FixedBatch is implemented by tasks whose training program is built for
// one batch size: with every shape static, no gradient has to keep an
// operand alive just to learn its shape at run time (an elementwise op's
// operands broadcast along a dynamic batch dim otherwise). SetBatch is
// called before Build of the training program.
type FixedBatch interface {
	SetBatch(n int)
}

// Deployable is implemented by tasks whose evaluation network has a
// cheaper inference form with the same outputs (gopir print --deploy):
// RepVGG branches and batch norms folded into convolutions.
type Deployable interface {
	// SetDeploy makes Build append the inference form (evaluation only).
	SetDeploy(on bool)
	// Reparameterize computes the inference form's parameters, by name,
	// from the training form's (the evaluation program's parameters); the
	// caller owns the results.
	Reparameterize(a *memory.Allocator, params map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error)
}

// Runner runs the evaluation program on feeds; the caller of Runner
// releases the results.
type Runner func(feeds map[string]*tensor.Tensor) (exec.Results, error)

// Outputs are what Build returns.
type Outputs struct {
	// Loss is the scalar training loss (training programs only).
	Loss *ir.Value
	// Fetches are extra values by name: logged per training step, or read
	// by Evaluate.
	Fetches map[string]*ir.Value
}

// Feeds are one step's inputs.
type Feeds struct {
	Tensors map[string]*tensor.Tensor
	// Info holds numbers about the batch to log with the step (e.g.
	// "num_gts").
	Info map[string]float64
}

// Release releases every tensor of the feeds.
func (f Feeds) Release() {
	for _, t := range f.Tensors {
		t.Release()
	}
}

// DataConfig is what a task needs to load its data.
type DataConfig struct {
	// Batch is the global batch size: the order of each epoch, and so
	// the trajectory of a run, depends on it and on Seed, not on Ranks.
	Batch   int
	Seed    int64
	DataDir string // MNIST files; "" finds them in the Go module cache
	// Rank and Ranks shard the data for data-parallel training: with
	// Ranks > 1, TrainFeeds returns rank Rank's shard of each global
	// batch, the Rank-th of Ranks consecutive, equal slices of it (see
	// Shard). Ranks 0 means 1.
	Rank, Ranks int
}

// Shard returns rank's part of the batch idx split over ranks: the
// rank-th of ranks consecutive slices whose sizes differ by at most one
// (equal when ranks divides len(idx)). The shards of one batch are
// disjoint and together the batch, in order. A shard must not be empty.
func Shard(idx []int, rank, ranks int) ([]int, error) {
	if ranks <= 1 {
		return idx, nil
	}
	if rank < 0 || rank >= ranks {
		return nil, fmt.Errorf("rank %d of %d", rank, ranks)
	}
	if len(idx) < ranks {
		return nil, fmt.Errorf("a batch of %d cannot be split over %d ranks", len(idx), ranks)
	}
	lo, hi := rank*len(idx)/ranks, (rank+1)*len(idx)/ranks
	return idx[lo:hi], nil
}

// Defaults are a task's default training settings.
type Defaults struct {
	Epochs, Steps int // Steps, if set, wins over Epochs
	Batch         int
	LR            float64
	Optimizer     string // "adam", "adamw", "sgd", "momentum"
	WeightDecay   float64
	ClipNorm      float64 // 0: no clipping
	Schedule      string  // "constant", "cosine", "step"
	WarmupSteps   int
}

var registry = map[string]func() Task{}

// Register makes a task available by name; call it from init.
func Register(name string, newTask func() Task) {
	if _, dup := registry[name]; dup {
		panic("models: " + name + " registered twice")
	}
	registry[name] = newTask
}

// New returns a fresh task by name.
func New(name string) (Task, error) {
	f, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown model %q (models: %v)", name, Names())
	}
	return f(), nil
}

// Names lists the registered tasks, sorted.
func Names() []string {
	var out []string
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
