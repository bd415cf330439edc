package train

import (
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
