package optim_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/optim"
	"github.com/gopir/gopir/tensor"
)

// Trajectories recorded by tools/golden_optim.py with PyTorch 1.13: the
// same model, data, initial parameters, optimizer, clipping and schedule
// run here through autodiff + optim + exec must give the same learning
// rates, losses, gradient norms and final parameters.

type goldenTensor struct {
	Shape []int     `json:"shape"`
	Data  []float64 `json:"data"`
}

type goldenRun struct {
	Name      string `json:"name"`
	Optimizer struct {
		Kind        string    `json:"kind"`
		LR          float64   `json:"lr"`
		Momentum    float64   `json:"momentum"`
		Nesterov    bool      `json:"nesterov"`
		WeightDecay float64   `json:"weight_decay"`
		Betas       []float64 `json:"betas"`
		Eps         float64   `json:"eps"`
	} `json:"optimizer"`
	Clip     float64                 `json:"clip"`
	Schedule goldenSched             `json:"schedule"`
	X        goldenTensor            `json:"x"`
	Y        goldenTensor            `json:"y"`
	Init     map[string]goldenTensor `json:"init"`
	LRs      []float64               `json:"lrs"`
	Losses   []float64               `json:"losses"`
	Norms    []float64               `json:"norms"`
	Final    map[string]goldenTensor `json:"final"`
}

// goldenSched describes a PyTorch scheduler configuration.
type goldenSched struct {
	Kind     string  `json:"kind"`
	StepSize int     `json:"step_size"`
	Gamma    float64 `json:"gamma"`
	Warmup   int     `json:"warmup"`
	Start    float64 `json:"start"`
	Total    int     `json:"total"`
	Min      float64 `json:"min"`
}

var goldenParams = []struct {
	name  string
	shape []int
}{{"fc1.w", []int{4, 8}}, {"fc1.b", []int{8}}, {"fc2.w", []int{8, 3}}, {"fc2.b", []int{3}}}

// goldenModel is the model of tools/golden_optim.py:
// loss = mean((tanh(x·W1 + b1)·W2 + b2 − y)²).
func goldenModel(b *ir.Builder) (loss *ir.Value, params []*ir.Value) {
	x := ops.Data(b, "x", ir.F64, 16, 4)
	y := ops.Data(b, "y", ir.F64, 16, 3)
	for _, p := range goldenParams {
		params = append(params, ops.Parameter(b, p.name, ir.F64, p.shape...))
	}
	h := ops.Tanh(b, ops.Add(b, ops.Matmul(b, x, params[0], false, false), params[1]))
	d := ops.Subtract(b, ops.Add(b, ops.Matmul(b, h, params[2], false, false), params[3]), y)
	loss = ops.Multiply(b, ops.ReduceSum(b, ops.Multiply(b, d, d), nil, false), ops.Full(b, ir.F64, 1.0/48))
	return loss, params
}

func (g *goldenRun) optimizer(t *testing.T) optim.Optimizer {
	o := g.Optimizer
	switch o.Kind {
	case "sgd":
		return optim.SGD{LR: o.LR, Momentum: o.Momentum, Nesterov: o.Nesterov, WeightDecay: o.WeightDecay}
	case "adam", "adamw":
		return optim.Adam{LR: o.LR, Beta1: o.Betas[0], Beta2: o.Betas[1], Epsilon: o.Eps,
			WeightDecay: o.WeightDecay, Decoupled: o.Kind == "adamw"}
	}
	t.Fatalf("unknown optimizer %q", o.Kind)
	return nil
}

func (g *goldenRun) schedule(t *testing.T) optim.Schedule {
	return goldenSchedule(t, g.Schedule, g.Optimizer.LR)
}

// goldenSchedule builds the schedule described by s, from base rate lr.
func goldenSchedule(t *testing.T, s goldenSched, lr float64) optim.Schedule {
	switch s.Kind {
	case "constant":
		return optim.Constant(lr)
	case "step":
		return optim.StepDecay{Base: lr, Gamma: s.Gamma, StepSize: s.StepSize}
	case "cosine":
		return optim.Cosine{Base: lr, Min: s.Min, TotalSteps: s.Total}
	case "warmup_cosine":
		return optim.Warmup{Steps: s.Warmup, Start: s.Start, Then: optim.Cosine{Base: lr, Min: s.Min, TotalSteps: s.Total}}
	case "warmup_step":
		return optim.Warmup{Steps: s.Warmup, Start: s.Start, Then: optim.StepDecay{Base: lr, Gamma: s.Gamma, StepSize: s.StepSize}}
	}
	t.Fatalf("unknown schedule %q", s.Kind)
	return nil
}

func loadGolden(t *testing.T) []*goldenRun {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	var runs []*goldenRun
	for _, f := range files {
		if filepath.Base(f) == "schedules.json" {
			continue
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		g := &goldenRun{}
		if err := json.Unmarshal(raw, g); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		runs = append(runs, g)
	}
	return runs
}

func fromGolden(t testing.TB, a *memory.Allocator, g goldenTensor) *tensor.Tensor {
	t.Helper()
	x, err := tensor.FromF64(a, g.Data, g.Shape...)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// near compares with an absolute-plus-relative tolerance.
func near(got, want, tol float64) bool {
	return math.Abs(got-want) <= tol*(1+math.Abs(want))
}

func TestGoldenTrajectories(t *testing.T) {
	const tol = 1e-9
	want := map[string]bool{"sgd": true, "sgd_momentum": true, "sgd_nesterov_wd": true, "adam": true, "adam_wd": true,
		"adamw": true, "adam_clip": true, "sgd_steplr": true, "adam_warmup_cosine": true}
	for _, g := range loadGolden(t) {
		delete(want, g.Name)
		t.Run(g.Name, func(t *testing.T) {
			b := ir.NewBuilder(ir.NewProgram())
			loss, params := goldenModel(b)
			ops.Fetch(b, "loss", loss)
			grads, err := autodiff.Backward(b, loss, params)
			if err != nil {
				t.Fatal(err)
			}
			if g.Clip > 0 {
				var norm *ir.Value
				grads, norm = optim.ClipByGlobalNorm(b, grads, g.Clip)
				ops.Fetch(b, "norm", norm)
			}
			state, err := g.optimizer(t).Apply(b, params, grads)
			if err != nil {
				t.Fatal(err)
			}
			prog, err := b.Finish()
			if err != nil {
				t.Fatal(err)
			}

			a := memory.New(memory.Options{})
			store := exec.NewStore()
			defer store.Release()
			for _, p := range goldenParams {
				store.Set(p.name, fromGolden(t, a, g.Init[p.name]))
			}
			if err := state.Create(a, store.Set); err != nil {
				t.Fatal(err)
			}
			x, err := exec.Compile(prog, exec.Options{Alloc: a, Store: store, CheckLeaks: true})
			if err != nil {
				t.Fatal(err)
			}
			feeds := map[string]*tensor.Tensor{"x": fromGolden(t, host, g.X), "y": fromGolden(t, host, g.Y)}
			defer feeds["x"].Release()
			defer feeds["y"].Release()
			lrT, _ := store.Get(state.LR)
			sched := g.schedule(t)
			base := a.Stats().Allocated.Current
			for step := range g.Losses {
				lr := sched.LR(step)
				if !near(lr, g.LRs[step], 1e-12) {
					t.Errorf("step %d: schedule gives lr %.17g, PyTorch used %.17g", step, lr, g.LRs[step])
				}
				if err := optim.SetScalar(lrT, lr); err != nil {
					t.Fatal(err)
				}
				res, err := x.Run(context.Background(), feeds)
				if err != nil {
					t.Fatal(err)
				}
				if got := res["loss"].F64()[0]; !near(got, g.Losses[step], tol) {
					t.Errorf("step %d: loss %.17g, PyTorch %.17g", step, got, g.Losses[step])
				}
				if g.Clip > 0 {
					if got := res["norm"].F64()[0]; !near(got, g.Norms[step], tol) {
						t.Errorf("step %d: gradient norm %.17g, PyTorch %.17g", step, got, g.Norms[step])
					}
				}
				res.Release()
				if got := a.Stats().Allocated.Current; got != base {
					t.Fatalf("step %d: %d bytes allocated after the step, %d before", step, got, base)
				}
			}
			for _, p := range goldenParams {
				got, _ := store.Get(p.name)
				w := g.Final[p.name].Data
				for i, v := range got.F64() {
					if !near(v, w[i], tol) {
						t.Fatalf("%s[%d] after %d steps = %.17g, PyTorch %.17g", p.name, i, len(g.Losses), v, w[i])
					}
				}
			}
		})
	}
	for name := range want {
		t.Errorf("golden run %q is missing from testdata", name)
	}
}

var host = memory.New(memory.Options{})
