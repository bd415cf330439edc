package optim

import (
	"errors"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// SGD is stochastic gradient descent as torch.optim.SGD (dampening 0):
//
//	d = g + wd·p
//	v = μ·v + d                   (with momentum μ > 0; v starts at 0)
//	d = d + μ·v if Nesterov, else d = v
//	p = p − lr·d
//
// Without momentum it appends sgd_update and keeps no state; with
// momentum, momentum_update and one velocity per parameter, named
// NAME@sgd.velocity.
type SGD struct {
	LR          float64 // initial value of the learning-rate parameter
	Momentum    float64
	Nesterov    bool // needs Momentum > 0
	WeightDecay float64
	LRName      string // "" means DefaultLRName
}

// NewSGD returns plain SGD with learning rate lr.
func NewSGD(lr float64) *SGD { return &SGD{LR: lr} }

// Apply implements Optimizer.
func (o SGD) Apply(b *ir.Builder, params, grads []*ir.Value) (State, error) {
	if err := checkHyper("SGD", "LR", o.LR, "Momentum", o.Momentum, "WeightDecay", o.WeightDecay); err != nil {
		return State{}, err
	}
	if o.Nesterov && o.Momentum == 0 {
		return State{}, errors.New("optim: SGD: Nesterov momentum needs Momentum > 0")
	}
	ts, err := targets(params, grads)
	if err != nil {
		return State{}, err
	}
	lrName := orDefault(o.LRName, DefaultLRName)
	lr, lrSpec := scalarParam(b, lrName, ir.F64, o.LR)
	st := State{LR: lrName, Specs: []StateSpec{lrSpec}}
	for _, t := range ts {
		if o.Momentum == 0 {
			ops.SGDUpdate(b, t.param, t.grad, lr, o.WeightDecay)
			continue
		}
		v, spec := stateParam(b, t.param, t.name+"@sgd.velocity")
		st.Specs = append(st.Specs, spec)
		ops.MomentumUpdate(b, t.param, t.grad, v, lr, o.Momentum, o.Nesterov, o.WeightDecay)
	}
	return finish(b, "SGD", st)
}
