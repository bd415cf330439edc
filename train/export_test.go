package train

import (
	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
)

// SetStep rewinds or advances the trainer to step n, for tests that rerun
// a step from a restored store.
func (t *Trainer) SetStep(n int) { t.step = n }

// StepFeedTypes returns the types of the feeds of step n (0-based), read
// on a scratch allocator.
func (t *Trainer) StepFeedTypes(n int) (map[string]ir.Type, error) {
	a := memory.New(memory.Options{})
	f, err := t.task.TrainFeeds(a, n/t.spe, n%t.spe)
	if err != nil {
		return nil, err
	}
	defer f.Release()
	types := map[string]ir.Type{}
	for name, x := range f.Tensors {
		types[name] = ir.TensorOf(ir.DType(x.DType()), x.Shape()...)
	}
	return types, nil
}

// StepsDone is the number of steps taken.
func (t *Trainer) StepsDone() int { return t.step }

// SaveTo writes the checkpoint to dir now.
func (t *Trainer) SaveTo(dir string) error { return t.save(dir) }

// EvalFitLeftovers plans the evaluation of cfg's run (cfg without a
// memory limit) on replays capped at each of limits, and returns the
// bytes each replay still holds afterwards and the bytes each plan said
// the evaluation needs.
func EvalFitLeftovers(cfg Config, limits []int64) (left, need []int64, err error) {
	t, mod, state, err := prepare(cfg)
	if err != nil {
		return nil, nil, err
	}
	prog, err := t.buildEval()
	if err != nil {
		return nil, nil, err
	}
	opts := exec.Options{Alloc: t.alloc, Store: t.store, Threads: t.cfg.Threads, Seed: t.cfg.Seed}
	for _, limit := range limits {
		ef, err := t.newEvalFit(prog, opts, mod, state, limit)
		if err != nil {
			return nil, nil, err
		}
		n, err := ef.need()
		ef.release()
		if err != nil {
			return nil, nil, err
		}
		left, need = append(left, ef.replay.Stats().Allocated.Current), append(need, n)
	}
	return left, need, nil
}
