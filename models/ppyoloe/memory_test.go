package ppyoloe_test

import (
	"context"
	"errors"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/models"
	"github.com/gopir/gopir/models/ppyoloe"
	"github.com/gopir/gopir/tensor"
	"github.com/gopir/gopir/train"
)

// Unit tests train at 64×64 (84 anchors), batch 2: the same program as at
// 320, in a fraction of the time.
const (
	smallSize  = 64
	smallBatch = 2
)

func smallConfig() train.Config {
	return train.Config{Model: ppyoloe.Name, ImageSize: smallSize, Batch: smallBatch, Threads: 2}
}

// TestMemcheck: 17 steps take the no-object branch at steps 8 and 16 (the
// layout's empty batches), and allocated memory never moves.
func TestMemcheck(t *testing.T) {
	rep, err := train.Memcheck(context.Background(), smallConfig(), 17, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatal(rep.Message)
	}
	if len(rep.Allocated) != 17 {
		t.Fatalf("%d steps recorded", len(rep.Allocated))
	}
}

// TestBranchesMemory runs the training step on three kinds of batch, in
// turn, several times: with objects (both ifs taken), with one box too
// small to hold an anchor point (the outer if taken, the inner not: no
// positive anchor), and without objects (the outer if not taken); then a
// run that is cancelled. Every run leaves the allocator where the first
// left it, and the conditions say each path was the one intended.
func TestBranchesMemory(t *testing.T) {
	cfg := smallConfig()
	tr, err := train.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	prog, err := train.BuildTraining(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var conds []bool
	x, err := exec.Compile(prog, exec.Options{Alloc: tr.Allocator(), Store: tr.Store(), Threads: 2, CheckLeaks: true,
		Conditions: func(op *ir.Op, v bool) { conds = append(conds, v) }})
	if err != nil {
		t.Fatal(err)
	}
	a := tr.Allocator()
	task, err := train.LoadTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	base, err := task.TrainFeeds(a, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer base.Release()
	if base.Info["num_gts"] == 0 {
		t.Fatal("batch 0 has no object")
	}
	// a 2-pixel box between the anchor points of every level
	tiny := withBoxes(t, a, base.Tensors, [4]float32{5, 5, 7, 7}, 0, 1)
	defer models.Feeds{Tensors: tiny}.Release()
	empty := withBoxes(t, a, base.Tensors, [4]float32{}, -1, 0)
	defer models.Feeds{Tensors: empty}.Release()

	kinds := []struct {
		name  string
		feeds map[string]*tensor.Tensor
		conds []bool // outer if, inner if (when the outer is taken)
	}{
		{"objects", base.Tensors, []bool{true, true}},
		{"no positive anchor", tiny, []bool{true, false}},
		{"no object", empty, []bool{false}},
	}
	var baseline int64 = -1
	for round := range 3 {
		for _, k := range kinds {
			conds = conds[:0]
			res, err := x.Run(context.Background(), k.feeds)
			if err != nil {
				t.Fatalf("%s: %v", k.name, err)
			}
			if got := res["positives"].Float64At(0); (got > 0) != (k.name == "objects") {
				t.Errorf("%s: %v positive anchors", k.name, got)
			}
			res.Release()
			// the backward's ifs take the forward's branches again
			if want := append(k.conds, k.conds...); !equalBools(conds, want) {
				t.Errorf("%s: conditions %v, want %v", k.name, conds, want)
			}
			now := a.Stats().Allocated.Current
			if baseline < 0 {
				baseline = now
			}
			if now != baseline {
				t.Errorf("round %d, %s: %d bytes allocated after the step, %d after the first", round, k.name, now, baseline)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := x.Run(ctx, base.Tensors); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run: %v", err)
	}
	if now := a.Stats().Allocated.Current; now != baseline {
		t.Errorf("after a cancelled run: %d bytes allocated, %d before", now, baseline)
	}
}

// withBoxes copies feeds with every image's boxes replaced by one box of
// class cls (−1: none) and num_gts set to gts.
func withBoxes(t *testing.T, a *memory.Allocator, feeds map[string]*tensor.Tensor, box [4]float32, cls int64, gts int) map[string]*tensor.Tensor {
	t.Helper()
	out := map[string]*tensor.Tensor{}
	for n, x := range feeds {
		out[n] = x.Retain()
	}
	b := feeds["gt_boxes"].Shape()
	nb, err := tensor.Zeros(a, tensor.F32, b...)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := tensor.New(a, tensor.I64, b[0], b[1])
	if err != nil {
		t.Fatal(err)
	}
	for i := range nc.I64() {
		nc.I64()[i] = -1
	}
	if cls >= 0 {
		copy(nb.F32(), box[:]) // image 0, slot 0
		nc.I64()[0] = cls
	}
	n, err := tensor.Scalar(a, tensor.I64, float64(gts))
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]*tensor.Tensor{"gt_boxes": nb, "gt_classes": nc, "num_gts": n} {
		out[name].Release()
		out[name] = v
	}
	return out
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
