package ppyoloe_test

import (
	"context"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/train"
)

// TestPlanMatchesSteps: the planner predicts the peak of every training
// step to the byte, following the step's branches: steps with objects and
// the layout's empty batch (the 8th), the same number Step reports as
// peak_allocated. Every op of the step (the convolutions' scratch included)
// is planned from shapes alone.
func TestPlanMatchesSteps(t *testing.T) {
	var path []bool
	cfg := smallConfig()
	cfg.Conditions = func(_ *ir.Op, c bool) { path = append(path, c) }
	tr, err := train.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	types := feedTypes(smallBatch, smallSize)
	with, without := 0, 0
	for range 9 {
		path = path[:0]
		rec, err := tr.Step(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if rec.Extra["num_gts"] > 0 {
			with++
		} else {
			without++
		}
		plan, err := tr.PlanStep(types, path)
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Assumed) > 0 {
			t.Errorf("step %d: the plan assumed %q", rec.GlobalStep, plan.Assumed)
		}
		if plan.Peak != rec.PeakAllocated {
			t.Errorf("step %d (%v objects, conditions %v): planned peak %d, measured %d", rec.GlobalStep, rec.Extra["num_gts"], path, plan.Peak, rec.PeakAllocated)
		}
	}
	if with == 0 || without == 0 {
		t.Errorf("%d steps with objects, %d without; want both", with, without)
	}
}

// TestPlanMatchesBranches plans the three paths of the loss (objects; a
// box holding no anchor point, so no positive; no object) and compares
// each with a run of the training program on such a batch: the bytes the
// run adds at its peak to what it starts with are the plan's, to the byte.
func TestPlanMatchesBranches(t *testing.T) {
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
	x, err := exec.Compile(prog, exec.Options{Alloc: tr.Allocator(), Store: tr.Store(), Threads: 2,
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
	types := feedTypes(smallBatch, smallSize)
	for _, k := range []struct {
		name  string
		box   [4]float32
		cls   int64
		gts   int
		conds []bool // the forward's ifs, then the backward's
	}{
		{"objects", [4]float32{8, 8, 40, 40}, 2, 1, []bool{true, true, true, true}},
		{"no positive anchor", [4]float32{5, 5, 7, 7}, 0, 1, []bool{true, false, true, false}},
		{"no object", [4]float32{}, -1, 0, []bool{false, false}},
	} {
		feeds := withBoxes(t, a, base.Tensors, k.box, k.cls, k.gts)
		conds = conds[:0]
		before := a.Stats().Allocated.Current
		a.ResetPeak()
		res, err := x.Run(context.Background(), feeds)
		if err != nil {
			t.Fatalf("%s: %v", k.name, err)
		}
		peak := a.Stats().Allocated.Peak
		res.Release()
		for _, f := range feeds {
			f.Release()
		}
		if !equalBools(conds, k.conds) {
			t.Fatalf("%s: conditions %v", k.name, conds)
		}
		plan, err := x.Plan(exec.PlanOptions{Feeds: types, Path: conds})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := peak-before, plan.Peak-plan.Base; got != want || len(plan.Assumed) > 0 {
			t.Errorf("%s (conditions %v): the run added %d bytes at its peak, the plan %d (assumed %q)", k.name, conds, got, want, plan.Assumed)
		}
	}
}

// feedTypes are the training program's feed types at batch n, size×size.
func feedTypes(n, size int) map[string]ir.Type {
	return map[string]ir.Type{
		"image":      ir.TensorOf(ir.F32, n, 3, size, size),
		"gt_boxes":   ir.TensorOf(ir.F32, n, 20, 4),
		"gt_classes": ir.TensorOf(ir.I64, n, 20),
		"num_gts":    ir.TensorOf(ir.I64),
	}
}
