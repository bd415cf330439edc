package nn

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// ParamSpec describes one parameter: its name in the store, its type and
// how it starts.
type ParamSpec struct {
	Name          string
	Type          ir.Type
	Init          Init
	FanIn, FanOut int
	// Trainable is false for state that is not learned by gradient, such as
	// batch norm's running statistics.
	Trainable bool
}

// Module collects the parameters of a model while its program is built.
type Module struct {
	// DType is the dtype of new parameters and of the layers' arithmetic.
	DType ir.DType
	// Training selects batch statistics, dropout and running-statistic
	// updates; false builds the evaluation program.
	Training bool
	// Replicas is the number of ranks of the data-parallel job the
	// training program runs in (package dist); 0 and 1 mean one
	// process. Each rank builds the program for its shard of the batch.
	Replicas int
	// SyncBN makes BatchNorm, when training with several Replicas, use
	// the statistics of the whole batch over every rank (synchronized
	// batch norm) instead of its own shard's.
	SyncBN bool

	specs  []ParamSpec
	values map[string]*ir.Value
}

// NewModule returns an empty module.
func NewModule(dt ir.DType, training bool) *Module {
	return &Module{DType: dt, Training: training, values: map[string]*ir.Value{}}
}

func init() { ir.MarkHelperPackage("github.com/gopir/gopir/nn") }

// Param declares a parameter and returns its value in the program. A
// second declaration of a name returns the same value if the shape
// agrees (weight sharing) and fails the builder otherwise.
func (m *Module) Param(b *ir.Builder, name string, init Init, trainable bool, fanIn, fanOut int, shape ...int) *ir.Value {
	t := ir.TensorOf(m.DType, shape...)
	if v, ok := m.values[name]; ok {
		if !v.Type().Equal(t) {
			b.Fail(fmt.Errorf("parameter %q declared as %s and as %s", name, v.Type(), t))
		}
		return v
	}
	v := ops.Parameter(b, name, m.DType, shape...)
	m.values[name] = v
	m.specs = append(m.specs, ParamSpec{Name: name, Type: t, Init: init, FanIn: fanIn, FanOut: fanOut, Trainable: trainable})
	return v
}

// Params lists every parameter declared so far, in order.
func (m *Module) Params() []ParamSpec { return m.specs }

// Trainable returns the trainable parameters' values, in order, for
// autodiff and the optimizer.
func (m *Module) Trainable() []*ir.Value {
	var out []*ir.Value
	for _, s := range m.specs {
		if s.Trainable {
			out = append(out, m.values[s.Name])
		}
	}
	return out
}

// Bytes is the total size of the parameters.
func (m *Module) Bytes() int64 {
	var n int64
	for _, s := range m.specs {
		n += int64(s.Type.NumElements() * s.Type.DType.Size())
	}
	return n
}

// Create allocates every parameter from a, initialized from seed, and
// hands it to put, which takes it over (e.g. exec.Store.Set). Each
// parameter draws from its own stream keyed by seed and its name, so adding
// a layer does not change the others.
func (m *Module) Create(a *memory.Allocator, seed int64, put func(name string, t *tensor.Tensor)) error {
	for _, s := range m.specs {
		t, err := s.New(a, seed)
		if err != nil {
			return err
		}
		put(s.Name, t)
	}
	return nil
}

// New returns the initial value of the parameter.
func (s ParamSpec) New(a *memory.Allocator, seed int64) (*tensor.Tensor, error) {
	h := fnv.New64a()
	h.Write([]byte(s.Name))
	r := rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
	vals := make([]float64, s.Type.NumElements())
	s.Init.Fill(r, s.FanIn, s.FanOut, vals)
	t, err := tensor.New(a, tensor.DType(s.Type.DType), s.Type.Dims...)
	if err != nil {
		return nil, fmt.Errorf("parameter %q: %w", s.Name, err)
	}
	switch t.DType() {
	case tensor.F32:
		for i, v := range vals {
			t.F32()[i] = float32(v)
		}
	case tensor.F64:
		copy(t.F64(), vals)
	default:
		t.Release()
		return nil, fmt.Errorf("parameter %q: dtype %s is not a float", s.Name, s.Type.DType)
	}
	return t, nil
}
