package optim

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// Adam is torch.optim.Adam, or torch.optim.AdamW when Decoupled is set.
// At step t (counted from 1):
//
//	g = g + wd·p                  (Adam)      p = p·(1 − lr·wd)   (AdamW)
//	m = β1·m + (1−β1)·g
//	v = β2·v + (1−β2)·g²
//	p = p − lr/(1−β1ᵗ) · m / (√v/√(1−β2ᵗ) + ε)
//
// m and v start at zero and are named NAME@adam.m and NAME@adam.v (for
// AdamW too, so the two share checkpoints). t is the i64 scalar
// parameter StepName, which the program increments before the updates:
// it starts at 0 and holds the number of steps taken. AMSGrad and
// maximize are not supported.
type Adam struct {
	LR           float64 // initial value of the learning-rate parameter
	Beta1, Beta2 float64 // in [0, 1)
	Epsilon      float64
	WeightDecay  float64
	Decoupled    bool   // AdamW
	LRName       string // "" means DefaultLRName
	StepName     string // "" means DefaultStepName
}

// NewAdam returns Adam with PyTorch's defaults: β = (0.9, 0.999),
// ε = 1e-8, no weight decay.
func NewAdam(lr float64) *Adam {
	return &Adam{LR: lr, Beta1: 0.9, Beta2: 0.999, Epsilon: 1e-8}
}

// NewAdamW returns AdamW with PyTorch's defaults for the rest (β = (0.9,
// 0.999), ε = 1e-8); PyTorch's default weight decay is 0.01.
func NewAdamW(lr, weightDecay float64) *Adam {
	a := NewAdam(lr)
	a.WeightDecay, a.Decoupled = weightDecay, true
	return a
}

// Apply implements Optimizer.
func (o Adam) Apply(b *ir.Builder, params, grads []*ir.Value) (State, error) {
	what := "Adam"
	if o.Decoupled {
		what = "AdamW"
	}
	if err := checkHyper(what, "LR", o.LR, "Epsilon", o.Epsilon, "WeightDecay", o.WeightDecay); err != nil {
		return State{}, err
	}
	for _, beta := range []float64{o.Beta1, o.Beta2} {
		if !(beta >= 0 && beta < 1) {
			return State{}, fmt.Errorf("optim: %s: betas (%v, %v) must be in [0, 1)", what, o.Beta1, o.Beta2)
		}
	}
	ts, err := targets(params, grads)
	if err != nil {
		return State{}, err
	}
	lrName := orDefault(o.LRName, DefaultLRName)
	lr, lrSpec := scalarParam(b, lrName, ir.F64, o.LR)
	step, stepSpec := scalarParam(b, orDefault(o.StepName, DefaultStepName), ir.I64, 0)
	st := State{LR: lrName, Specs: []StateSpec{lrSpec, stepSpec}}
	ops.Increment(b, step, 1)
	for _, t := range ts {
		m, mSpec := stateParam(b, t.param, t.name+"@adam.m")
		v, vSpec := stateParam(b, t.param, t.name+"@adam.v")
		st.Specs = append(st.Specs, mSpec, vSpec)
		ops.AdamUpdate(b, t.param, t.grad, m, v, lr, step, o.Beta1, o.Beta2, o.Epsilon, o.WeightDecay, o.Decoupled)
	}
	return finish(b, what, st)
}
