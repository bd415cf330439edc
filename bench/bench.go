// Package bench measures gopir side by side with PyTorch, GoMLX and
// OpenBLAS (issue 8). bench/run drives it; docs/benchmarks.md explains the
// numbers.
//
// Here live the gopir halves of the comparisons:
//
//   - Stepper runs one model's training program (forward, backward, Adam)
//     exactly as package train builds it, on a fixed batch, for the
//     ms-per-step benchmark (BenchmarkStep in step_test.go);
//   - Memory measures one training step's peak and steady-state allocated
//     bytes through train.Trainer and computes, independently of package
//     exec, the liveness lower bound of that step (trace.go, static.go).
package bench

import (
	"context"
	"fmt"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/models"
	"github.com/gopir/gopir/tensor"
	"github.com/gopir/gopir/train"
)

// LR is the learning rate of every benchmark step (PyTorch and GoMLX use
// the same); it changes no cost.
const LR = 1e-3

// Batch is the batch size each benchmarked model trains with, as issue 8
// fixes them (the same for PyTorch and GoMLX).
var Batch = map[string]int{"mlp": 128, "lenet": 64, DetModel: DetBatch}

// config is the training configuration of model for the benchmarks.
func config(model string, threads int) train.Config {
	return train.Config{Model: model, Batch: Batch[model], LR: LR, Threads: threads}
}

// Stepper runs model's training step on one fixed batch: the training
// program of train.BuildTraining, compiled like train.New compiles it,
// over the parameters and Adam state of a train.Trainer.
type Stepper struct {
	Model string
	tr    *train.Trainer
	exe   *exec.Executable
	feeds models.Feeds
	path  *[]bool // while non-nil, the step's conditions are appended here
}

// compile compiles prog, a step of s's trainer, into s.exe, its
// conditions reported to RecordPath.
func (s *Stepper) compile(prog *ir.Program, threads int) error {
	exe, err := exec.Compile(prog, exec.Options{Alloc: s.tr.Allocator(), Store: s.tr.Store(), Threads: threads,
		Conditions: func(_ *ir.Op, c bool) {
			if s.path != nil {
				*s.path = append(*s.path, c)
			}
		}})
	s.exe = exe
	return err
}

// RecordPath runs one step and returns the values of its conditions in
// the order they were taken: the path train.Trainer.PlanStep follows to
// plan that step (its loops' trips and its branches).
func (s *Stepper) RecordPath() ([]bool, error) {
	var path []bool
	s.path = &path
	defer func() { s.path = nil }()
	return path, s.Step()
}

// NewStepper prepares model's step with the given kernel thread count.
func NewStepper(model string, threads int) (*Stepper, error) {
	cfg := config(model, threads)
	tr, err := train.New(cfg)
	if err != nil {
		return nil, err
	}
	prog, err := train.BuildTraining(cfg)
	if err != nil {
		tr.Close()
		return nil, err
	}
	s := &Stepper{Model: model, tr: tr}
	if err := s.compile(prog, threads); err != nil {
		tr.Close()
		return nil, err
	}
	task, err := loadTask(model, cfg.Batch, cfg.Seed)
	if err != nil {
		tr.Close()
		return nil, err
	}
	feeds, err := task.TrainFeeds(tr.Allocator(), 0, 0)
	if err != nil {
		tr.Close()
		return nil, err
	}
	s.feeds = feeds
	return s, nil
}

// loadTask returns model's task with its data loaded as train.New loads it.
func loadTask(model string, batch int, seed int64) (models.Task, error) {
	task, err := models.New(model)
	if err != nil {
		return nil, err
	}
	if batch == 0 {
		batch = task.Defaults().Batch
	}
	if err := task.Load(models.DataConfig{Batch: batch, Seed: seed}); err != nil {
		return nil, err
	}
	return task, nil
}

// Step runs one training step and releases its results.
func (s *Stepper) Step() error {
	res, err := s.exe.Run(context.Background(), s.feeds.Tensors)
	if err != nil {
		return fmt.Errorf("%s: %w", s.Model, err)
	}
	res.Release()
	return nil
}

// Feeds returns the fixed batch.
func (s *Stepper) Feeds() map[string]*tensor.Tensor { return s.feeds.Tensors }

// Close releases the batch, the parameters and the optimizer state.
func (s *Stepper) Close() {
	s.feeds.Release()
	s.tr.Close()
}
