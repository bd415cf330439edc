package bench

import (
	"errors"
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/remat"
	"github.com/gopir/gopir/train"
)

// NewRematStepper prepares model's training step rematerialized to a peak
// budget (train.Config.PeakBudget; 0 for none) on the largest batch of the
// first epoch (rnn's longest sequences), and returns the rematerialization
// (nil when the step fits as it is). The step's peak is what its
// allocator reports after Step (the parameters, optimizer state and batch
// included).
func NewRematStepper(model string, threads int, budget int64) (*Stepper, *remat.Result, error) {
	cfg := config(model, threads)
	cfg.LR, cfg.PeakBudget = LR, budget
	tr, err := train.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	res := tr.Remat()
	var prog *ir.Program
	if res != nil {
		prog = res.Program
	} else if prog, err = train.BuildTraining(cfg); err != nil {
		tr.Close()
		return nil, nil, err
	}
	s := &Stepper{Model: model, tr: tr}
	if err := s.compile(prog, threads); err != nil {
		tr.Close()
		return nil, nil, err
	}
	task, err := loadTask(model, cfg.Batch, cfg.Seed)
	if err != nil {
		tr.Close()
		return nil, nil, err
	}
	// The largest batch: the one whose feeds take the most bytes.
	scratch := memory.New(memory.Options{})
	best, most := 0, int64(-1)
	for s := range task.StepsPerEpoch() {
		f, err := task.TrainFeeds(scratch, 0, s)
		if err != nil {
			tr.Close()
			return nil, nil, err
		}
		var n int64
		for _, x := range f.Tensors {
			n += x.Bytes()
		}
		f.Release()
		if n > most {
			best, most = s, n
		}
	}
	feeds, err := task.TrainFeeds(tr.Allocator(), 0, best)
	if err != nil {
		tr.Close()
		return nil, nil, err
	}
	s.feeds = feeds
	return s, res, nil
}

// Peak returns the peak allocated bytes of the last Step, the
// parameters, optimizer state and batch included.
func (s *Stepper) Peak() int64 { return s.tr.Allocator().Stats().Allocated.Peak }

// RematFloor is the smallest peak budget rematerialization fits model's
// step into, and the step's natural planned peak.
func RematFloor(model string, threads int) (floor, natural int64, err error) {
	cfg := config(model, threads)
	cfg.LR, cfg.PeakBudget = LR, 1
	_, err = train.New(cfg)
	var fe *train.FloorError
	if !errors.As(err, &fe) {
		return 0, 0, fmt.Errorf("%s: a budget of one byte: %v, want a refusal", model, err)
	}
	return fe.Floor, fe.Natural, nil
}
