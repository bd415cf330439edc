package models_test

import (
	"context"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/models"
	"github.com/gopir/gopir/tensor"
	"github.com/gopir/gopir/train"
)

// TestGateBranchesOverEpoch runs gate's evaluation program (the forward
// pass, with the trainer's freshly initialized parameters) on every
// training batch of epoch 0 at the default batch size, and checks that its
// "branch" fetch follows the batch's mean pixel and that both branches are
// taken regularly.
func TestGateBranchesOverEpoch(t *testing.T) {
	tr := mnistTrainer(t, train.Config{Model: "gate", Seed: 0})
	ep, err := train.BuildEvaluation("gate")
	if err != nil {
		t.Fatal(err)
	}
	ex, err := exec.Compile(ep, exec.Options{Alloc: tr.Allocator(), Store: tr.Store(), CheckLeaks: true})
	if err != nil {
		t.Fatal(err)
	}
	task, err := models.New("gate")
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Load(models.DataConfig{Batch: task.Defaults().Batch, Seed: 0}); err != nil {
		t.Fatal(err)
	}
	steps := task.StepsPerEpoch()
	taken := [2]int{}
	longestRun, run, prev := 0, 0, -1.0
	for s := range steps {
		f, err := task.TrainFeeds(tr.Allocator(), 0, s)
		if err != nil {
			t.Fatal(err)
		}
		var sum float64
		for _, v := range f.Tensors["x"].F32() {
			sum += float64(v)
		}
		mean := sum / float64(f.Tensors["x"].Len())
		res, err := ex.Run(context.Background(), map[string]*tensor.Tensor{"x": f.Tensors["x"]})
		f.Release()
		if err != nil {
			t.Fatal(err)
		}
		br := res["branch"].Float64At(0)
		res.Release()
		if want := mean > 0; (br == 1) != want || (br != 0 && br != 1) {
			t.Fatalf("step %d: batch mean %.5f, branch %v", s, mean, br)
		}
		taken[int(br)]++
		if br == prev {
			run++
		} else {
			run, prev = 1, br
		}
		longestRun = max(longestRun, run)
	}
	t.Logf("epoch 0, %d batches: bright branch %d, dim branch %d; longest run of one branch %d", steps, taken[1], taken[0], longestRun)
	for b, n := range taken {
		if n < steps/4 {
			t.Errorf("branch %d taken %d times in %d steps", b, n, steps)
		}
	}
	if longestRun > 20 {
		t.Errorf("one branch was taken %d steps in a row", longestRun)
	}
}
