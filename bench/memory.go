package bench

import (
	"context"
	"fmt"

	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
	"github.com/gopir/gopir/train"
)

// MemRow is the memory of one training step of a model.
type MemRow struct {
	Model string
	Step  int // 0-based global step measured, after Step warm-up steps

	// Peak is the allocator's peak allocated bytes during the step, as
	// train.Trainer.Step reports it: the store, the step's feeds (made
	// before the peak is reset) and everything the run allocates.
	Peak int64
	// Bound is the liveness lower bound of the same step: Persistent plus
	// the largest sum of live intermediate bytes (TraceRun's Bound).
	Bound int64
	// RegionBound is Persistent plus TraceRun's RegionBound.
	RegionBound int64
	// WorkspaceBound is Persistent plus TraceRun's WorkspaceBound: the
	// region-rule bound when the kernels' scratch memory counts too.
	WorkspaceBound int64
	// Static is Persistent plus StaticBound, or -1 for programs with
	// control flow; it must equal Bound.
	Static int64
	// Persistent is StoreRounded plus the feeds' rounded bytes.
	Persistent int64
	// FeedBytes is the rounded bytes of the step's feeds.
	FeedBytes int64

	// Steady is the allocated bytes after the step, its feeds and fetches
	// released.
	Steady int64
	// StoreBytes is the exact byte size of the parameters and optimizer
	// state (exec.Store.Bytes); StoreRounded the same with each tensor
	// rounded up to the allocator's alignment, which is what the
	// allocator counts.
	StoreBytes, StoreRounded int64
	StoreTensors             int

	Instrs int // instructions the step executed (dynamic count)
}

// Memory trains model for warmup steps with train.Trainer, then measures
// the next step: its peak and steady-state allocated bytes, and its
// liveness lower bound from a reference run (TraceRun) of the same
// training program on the same batch, over a copy of the parameters and
// optimizer state taken just before the step.
func Memory(model string, warmup, threads int) (MemRow, error) {
	cfg := train.Config{Model: model, Batch: Batch[model], Threads: threads}
	if Batch[model] != 0 {
		cfg.LR = LR
	}
	tr, err := train.New(cfg)
	if err != nil {
		return MemRow{}, err
	}
	defer tr.Close()
	ctx := context.Background()
	for range warmup {
		if _, err := tr.Step(ctx); err != nil {
			return MemRow{}, err
		}
	}
	row := MemRow{Model: model, Step: warmup}
	align := tr.Allocator().Options().Alignment
	if align == 0 {
		align = memory.DefaultAlignment
	}
	round := func(n int64) int64 { return (n + align - 1) / align * align }

	// The reference run, on its own allocator.
	ref := memory.New(memory.Options{})
	params := map[string]*tensor.Tensor{}
	defer func() {
		for _, x := range params {
			x.Release()
		}
	}()
	store := tr.Store()
	for _, name := range store.Names() {
		x, _ := store.Get(name)
		c, err := tensor.New(ref, x.DType(), x.Shape()...)
		if err != nil {
			return MemRow{}, err
		}
		copy(c.Raw(), x.Raw())
		params[name] = c
		row.StoreRounded += round(x.Bytes())
		row.StoreTensors++
	}
	row.StoreBytes = store.Bytes()
	task, err := loadTask(model, cfg.Batch, cfg.Seed)
	if err != nil {
		return MemRow{}, err
	}
	spe := task.StepsPerEpoch()
	feeds, err := task.TrainFeeds(ref, warmup/spe, warmup%spe)
	if err != nil {
		return MemRow{}, err
	}
	defer feeds.Release()
	shapes := map[string][]int{}
	for name, x := range feeds.Tensors {
		row.FeedBytes += round(x.Bytes())
		shapes[name] = x.Shape()
	}
	row.Persistent = row.StoreRounded + row.FeedBytes
	prog, err := train.BuildTraining(cfg)
	if err != nil {
		return MemRow{}, err
	}
	trace, err := TraceRun(prog, ref, feeds.Tensors, params, threads, cfg.Seed, int64(warmup))
	if err != nil {
		return MemRow{}, err
	}
	row.Bound = row.Persistent + trace.Bound
	row.RegionBound = row.Persistent + trace.RegionBound
	row.WorkspaceBound = row.Persistent + trace.WorkspaceBound
	row.Instrs = trace.Instrs
	row.Static = -1
	if s, err := StaticBound(prog, shapes, align); err == nil {
		row.Static = row.Persistent + s
	}
	if got := ref.Stats().Allocated.Current; got != row.StoreRounded+row.FeedBytes {
		return MemRow{}, fmt.Errorf("bench: %s: the reference run left %d bytes, want %d", model, got, row.StoreRounded+row.FeedBytes)
	}

	rec, err := tr.Step(ctx)
	if err != nil {
		return MemRow{}, err
	}
	row.Peak, row.Steady = rec.PeakAllocated, rec.MemAllocated
	return row, nil
}
