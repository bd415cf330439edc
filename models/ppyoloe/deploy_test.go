package ppyoloe

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/models"
	"github.com/gopir/gopir/nn"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// evalProgram builds the evaluation program, training form or deployed.
func evalProgram(t *testing.T, size int, deploy bool) (*ir.Program, *nn.Module) {
	t.Helper()
	d := &task{size: size, deploy: deploy}
	b := ir.NewBuilder(ir.NewProgram())
	m := nn.NewModule(ir.F32, false)
	out, err := d.Build(b, m)
	if err != nil {
		t.Fatal(err)
	}
	for n, v := range out.Fetches {
		ops.Fetch(b, n, v)
	}
	prog, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return prog, m
}

// TestDeployMatchesTraining: the deployed network (RepVGG blocks and batch
// norms folded) gives the training form's evaluation outputs to 1e-5 of
// their scale, on the portable weights (every batch norm with statistics
// and affine parameters away from the identity) and a real batch.
func TestDeployMatchesTraining(t *testing.T) {
	const size = 96
	a := memory.New(memory.Options{})
	trainProg, m := evalProgram(t, size, false)
	deployProg, dm := evalProgram(t, size, true)
	if len(dm.Params()) >= len(m.Params()) {
		t.Fatalf("deployed form has %d parameters, training form %d", len(dm.Params()), len(m.Params()))
	}
	params := map[string]*tensor.Tensor{}
	for name, w := range portableWeights(m.Params()) {
		var dims []int
		for _, s := range m.Params() {
			if s.Name == name {
				dims = s.Type.Dims
			}
		}
		x, err := tensor.FromF32(a, w, dims...)
		if err != nil {
			t.Fatal(err)
		}
		params[name] = x
	}
	d := &task{size: size}
	folded, err := d.Reparameterize(a, params)
	if err != nil {
		t.Fatal(err)
	}
	run := func(prog *ir.Program, ps map[string]*tensor.Tensor, img *tensor.Tensor) exec.Results {
		st := exec.NewStore()
		for n, x := range ps {
			st.Set(n, x.Retain())
		}
		defer st.Release()
		x, err := exec.Compile(prog, exec.Options{Alloc: a, Store: st, Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		res, err := x.Run(context.Background(), map[string]*tensor.Tensor{"image": img})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	d.batch = 0
	if err := d.Load(models.DataConfig{Batch: 2}); err != nil {
		t.Fatal(err)
	}
	feeds, err := d.TrainFeeds(a, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := run(trainProg, params, feeds.Tensors["image"])
	got := run(deployProg, folded, feeds.Tensors["image"])
	for _, n := range []string{"scores", "boxes"} {
		var worst, scale float64
		for i, w := range want[n].F32() {
			scale = max(scale, math.Abs(float64(w)))
			worst = max(worst, math.Abs(float64(got[n].F32()[i]-w)))
		}
		t.Logf("%s: largest difference %.3g (scale %.3g)", n, worst, scale)
		if worst > 1e-5*max(scale, 1) {
			t.Errorf("%s: deployed differs by %.3g, scale %.3g", n, worst, scale)
		}
	}
	want.Release()
	got.Release()
	feeds.Release()
	for _, x := range folded {
		x.Release()
	}
	// A missing parameter is an error naming it, and leaks nothing.
	params["neck.fpn_routes.0.bn.running_var"].Release()
	delete(params, "neck.fpn_routes.0.bn.running_var")
	if _, err := d.Reparameterize(a, params); err == nil || !strings.Contains(err.Error(), "neck.fpn_routes.0.bn.running_var missing") {
		t.Errorf("missing parameter: %v", err)
	}
	for _, x := range params {
		x.Release()
	}
	if n := a.Stats().Allocated.Current; n != 0 {
		t.Errorf("%d bytes left allocated", n)
	}
}
