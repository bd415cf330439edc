package bench

import (
	"context"
	"fmt"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/models"
	"github.com/gopir/gopir/optimize"
	"github.com/gopir/gopir/tensor"
	"github.com/gopir/gopir/train"
)

// DetModel is the detector of bench/run -det (issue 17): ppyoloe_s at its
// default 320×320, trained at batch DetBatch with Stepper like the others.
const (
	DetModel = "ppyoloe_s"
	DetBatch = 8
)

// StepPeak runs one training step like Step and returns the allocator's
// peak allocated bytes during it: the parameters, the optimizer state, the
// batch and everything the step allocates, as train's peak_allocated.
func (s *Stepper) StepPeak() (int64, error) {
	a := s.tr.Allocator()
	a.ResetPeak()
	if err := s.Step(); err != nil {
		return 0, err
	}
	return a.Stats().Allocated.Peak, nil
}

// DetInference runs the deployed evaluation program of DetModel (every
// RepVGG block and batch norm folded, models.Deployable) from its initial
// parameters on batches of the first image of the training batch that
// Stepper uses, for the inference rows of bench/run -det. With optimized,
// it is compiled as gopir run compiles inference programs (package
// optimize: bias and SiLU fused into the convolutions' epilogues, the
// distribution bins' softmax in float32) and run through exec's serving
// path with its weights packed once.
type DetInference struct {
	alloc  *memory.Allocator
	store  *exec.Store
	exe    *exec.Executable
	res    exec.Results              // Run's results map, kept from run to run
	feeds  map[string]*tensor.Tensor // Run's feeds map, kept likewise
	images map[int]*tensor.Tensor    // by batch size
}

// NewDetInference prepares the deployed program with the given kernel
// thread count and batches of the given sizes.
func NewDetInference(threads int, batches []int, optimized bool) (*DetInference, error) {
	return newDetInference(train.Config{Model: DetModel, Batch: DetBatch}, threads, batches, optimized)
}

// newDetInference is NewDetInference for the model and image size of cfg,
// optimized by the passes only names (all of them when none) if
// optimized.
func newDetInference(cfg train.Config, threads int, batches []int, optimized bool, only ...string) (*DetInference, error) {
	a := memory.New(memory.Options{})
	d := &DetInference{alloc: a, store: exec.NewStore(), res: exec.Results{}, feeds: map[string]*tensor.Tensor{}, images: map[int]*tensor.Tensor{}}
	if err := d.setup(cfg, threads, batches, optimized, only); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

func (d *DetInference) setup(cfg train.Config, threads int, batches []int, optimized bool, only []string) error {
	task, err := train.LoadTask(cfg)
	if err != nil {
		return err
	}
	dep, ok := task.(models.Deployable)
	if !ok {
		return fmt.Errorf("%s has no inference form", DetModel)
	}
	params, err := train.InitialParameters(cfg, d.alloc)
	if err != nil {
		return err
	}
	folded, err := dep.Reparameterize(d.alloc, params)
	for _, t := range params {
		t.Release()
	}
	if err != nil {
		return err
	}
	for n, t := range folded {
		d.store.Set(n, t)
	}
	prog, err := train.BuildInference(cfg, true)
	if err != nil {
		return err
	}
	opts := exec.Options{Alloc: d.alloc, Store: d.store, Threads: threads}
	if !optimized {
		if d.exe, err = exec.Compile(prog, opts); err != nil {
			return err
		}
	} else {
		opts.PackCache = InferencePackCache
		if d.exe, _, err = optimize.Compile(prog, d.store, opts, only...); err != nil {
			return err
		}
		// The optimized store holds what the optimized program reads,
		// sharing the tensors it keeps; the original is not needed.
		d.store.Release()
		d.store = d.exe.Store()
	}
	feeds, err := task.TrainFeeds(d.alloc, 0, 0)
	if err != nil {
		return err
	}
	defer feeds.Release()
	img := feeds.Tensors["image"]
	per := img.Len() / img.Shape()[0]
	for _, b := range batches {
		shape := append([]int{b}, img.Shape()[1:]...)
		t, err := tensor.New(d.alloc, tensor.F32, shape...)
		if err != nil {
			return err
		}
		for k := range b {
			copy(t.F32()[k*per:(k+1)*per], img.F32()[:per])
		}
		d.images[b] = t
	}
	return nil
}

// Run runs the program on the batch of size b and releases its results.
func (d *DetInference) Run(b int) error {
	img, ok := d.images[b]
	if !ok {
		return fmt.Errorf("%s inference: no batch of %d", DetModel, b)
	}
	d.feeds["image"] = img
	if err := d.exe.RunInto(context.Background(), d.feeds, d.res); err != nil {
		return err
	}
	d.res.Release()
	return nil
}

// Close releases the parameters, their packed copies and the batches.
func (d *DetInference) Close() {
	for _, t := range d.images {
		t.Release()
	}
	if d.exe != nil {
		d.exe.ReleasePacked()
	}
	d.store.Release()
}
