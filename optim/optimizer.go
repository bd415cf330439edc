package optim

import (
	"fmt"
	"math"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Default names of the shared scalars an optimizer reads.
const (
	DefaultLRName   = "optim.lr"   // learning rate, f64 scalar
	DefaultStepName = "optim.step" // Adam's step counter, i64 scalar
)

// Optimizer appends the update of parameters from their gradients.
type Optimizer interface {
	// Apply appends to b one in-place update per parameter, after the
	// backward pass (at the top level, after autodiff.Backward), and
	// returns the persistable state the program now reads besides the
	// parameters. params[i] must be the result of a "parameter" op and
	// grads[i] its gradient; a nil gradient leaves its parameter alone.
	Apply(b *ir.Builder, params, grads []*ir.Value) (State, error)
}

// StateSpec describes one persistable value an optimizer reads.
type StateSpec struct {
	Name string
	Type ir.Type // static
	Init float64 // every element's initial value
}

// State lists what an optimizer added to the program: the name of the
// learning-rate parameter, which the training loop sets before each step,
// and every persistable value the update reads besides the parameters
// (the learning rate included), to be created in the store once.
type State struct {
	LR    string
	Specs []StateSpec
}

// Bytes is the size of the state's tensors.
func (s State) Bytes() int64 {
	var n int64
	for _, sp := range s.Specs {
		n += int64(sp.Type.NumElements()) * int64(sp.Type.DType.Size())
	}
	return n
}

// Create allocates each value of the state from a, filled with its
// initial value, and hands it to put, which takes it over: with an
// exec.Store, st.Create(alloc, store.Set). Call it once, before the first
// step; the program then updates these tensors in place.
func (s State) Create(a *memory.Allocator, put func(name string, t *tensor.Tensor)) error {
	for _, sp := range s.Specs {
		t, err := sp.New(a)
		if err != nil {
			return err
		}
		put(sp.Name, t)
	}
	return nil
}

// New returns a tensor of the spec's type filled with its initial value.
func (sp StateSpec) New(a *memory.Allocator) (*tensor.Tensor, error) {
	if !sp.Type.IsStatic() || sp.Type.IsStack() {
		return nil, fmt.Errorf("optim: state %q has type %s; it must be a static tensor", sp.Name, sp.Type)
	}
	t, err := tensor.Zeros(a, tensor.DType(sp.Type.DType), sp.Type.Dims...)
	if err != nil {
		return nil, fmt.Errorf("optim: state %q: %w", sp.Name, err)
	}
	if sp.Init != 0 {
		for i := range t.Len() {
			optSet(t, i, sp.Init)
		}
	}
	return t, nil
}

// SetScalar writes v into the one-element tensor t (f32, f64, i32 or
// i64), e.g. the learning rate before each step.
func SetScalar(t *tensor.Tensor, v float64) error {
	if t.Len() != 1 {
		return fmt.Errorf("optim: SetScalar on a tensor of %d elements", t.Len())
	}
	if !optSet(t, 0, v) {
		return fmt.Errorf("optim: SetScalar on a %s tensor", t.DType())
	}
	t.Storage().Touch() // for whatever was derived from it (exec's pack cache)
	return nil
}

func optSet(t *tensor.Tensor, i int, v float64) bool {
	switch t.DType() {
	case tensor.F32:
		t.F32()[i] = float32(v)
	case tensor.F64:
		t.F64()[i] = v
	case tensor.I32:
		t.I32()[i] = int32(v)
	case tensor.I64:
		t.I64()[i] = int64(v)
	default:
		return false
	}
	return true
}

// Minimize appends the gradient of loss with respect to params
// (autodiff.Backward) and opt's update, and returns opt's state.
func Minimize(b *ir.Builder, opt Optimizer, loss *ir.Value, params []*ir.Value) (State, error) {
	grads, err := autodiff.Backward(b, loss, params)
	if err != nil {
		return State{}, err
	}
	return opt.Apply(b, params, grads)
}

// target is one parameter to update.
type target struct {
	name  string
	param *ir.Value
	grad  *ir.Value
}

// targets checks Apply's arguments and pairs them, dropping nil gradients.
func targets(params, grads []*ir.Value) ([]target, error) {
	if len(params) != len(grads) {
		return nil, fmt.Errorf("optim: %d parameters and %d gradients", len(params), len(grads))
	}
	seen := map[string]bool{}
	var out []target
	for i, p := range params {
		if p == nil || p.Def() == nil || p.Def().Name() != "parameter" {
			return nil, fmt.Errorf("optim: parameter %d is not the result of a \"parameter\" op; optimizers update store values in place", i)
		}
		name, err := p.Def().Attrs.Str("name")
		if err != nil {
			return nil, fmt.Errorf("optim: parameter %d: %w", i, err)
		}
		if seen[name] {
			return nil, fmt.Errorf("optim: parameter %q is listed twice", name)
		}
		seen[name] = true
		t := p.Type()
		if !t.DType.IsFloat() || !t.IsStatic() {
			return nil, fmt.Errorf("optim: parameter %q has type %s; it must be a static f32 or f64 tensor", name, t)
		}
		if grads[i] != nil {
			out = append(out, target{name, p, grads[i]})
		}
	}
	return out, nil
}

// scalarParam appends a read of the scalar parameter name and returns it
// with its spec.
func scalarParam(b *ir.Builder, name string, dt ir.DType, init float64) (*ir.Value, StateSpec) {
	return ops.Parameter(b, name, dt), StateSpec{Name: name, Type: ir.Scalar(dt), Init: init}
}

// stateParam appends a read of per-parameter state: name, shaped like p.
func stateParam(b *ir.Builder, p *ir.Value, name string) (*ir.Value, StateSpec) {
	t := p.Type()
	return ops.Parameter(b, name, t.DType, t.Dims...), StateSpec{Name: name, Type: t}
}

func orDefault(name, def string) string {
	if name == "" {
		return def
	}
	return name
}

// finish reports the builder's first error, if any.
func finish(b *ir.Builder, what string, st State) (State, error) {
	if err := b.Err(); err != nil {
		return State{}, fmt.Errorf("optim: %s: %w", what, err)
	}
	return st, nil
}

// checkHyper returns an error naming the first hyperparameter that is
// negative, NaN or infinite.
func checkHyper(what string, kv ...any) error {
	for i := 0; i < len(kv); i += 2 {
		v := kv[i+1].(float64)
		if !(v >= 0) || math.IsInf(v, 1) {
			return fmt.Errorf("optim: %s: %s is %v; it must be finite and >= 0", what, kv[i], v)
		}
	}
	return nil
}
