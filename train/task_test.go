package train_test

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/models"
	"github.com/gopir/gopir/nn"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// regress is a small task for the trainer's tests: y = tanh(x·W1)·W2 with
// an if on the batch that picks an extra penalty, dropout (so the random
// streams matter for resuming), and a synthetic linear target.
type regress struct {
	batch int
	seed  int64
	leaky bool
}

func init() {
	models.Register("test_regress", func() models.Task { return &regress{} })
	models.Register("test_leaky", func() models.Task { return &regress{leaky: true} })
	ops.Register(&ops.Def{Name: "test_keep", NoGrad: true,
		Infer: func(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) { return []ir.Type{in[0]}, nil },
		Bind: func(*ir.Op) (ops.Kernel, error) {
			return func(c *ops.Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
				kept = append(kept, in[0].Retain()) // the injected leak
				return []*tensor.Tensor{in[0].Retain()}, nil
			}, nil
		}})
}

var kept []*tensor.Tensor

func (r *regress) Name() string { return "test_regress" }

func (r *regress) Defaults() models.Defaults {
	return models.Defaults{Steps: 30, Batch: 16, LR: 0.01, Optimizer: "adam", Schedule: "cosine", WarmupSteps: 3, ClipNorm: 5}
}

func (r *regress) Build(b *ir.Builder, m *nn.Module) (models.Outputs, error) {
	x := ops.Data(b, "x", ir.F32, -1, 8)
	h := ops.Tanh(b, m.Linear(b, "fc1", x, 16))
	h = m.Dropout(b, h, 0.1)
	y := m.Linear(b, "fc2", h, 1)
	if !m.Training {
		return models.Outputs{Fetches: map[string]*ir.Value{"y": y}}, nil
	}
	if r.leaky {
		y = b.Op1("test_keep", nil, y)
	}
	t := ops.Data(b, "t", ir.F32, -1, 1)
	d := ops.Subtract(b, y, t)
	mse := ops.ReduceMean(b, ops.Multiply(b, d, d), nil, false)
	pos := ops.GreaterThan(b, ops.ReduceSum(b, t, nil, false), ops.Full(b, ir.F32, 0))
	loss := b.If(pos, func(b *ir.Builder) []*ir.Value {
		return []*ir.Value{ops.Add(b, mse, ops.Scale(b, ops.ReduceMean(b, ops.Square(b, h), nil, false), 0.01, 0))}
	}, func(b *ir.Builder) []*ir.Value { return []*ir.Value{mse} })
	return models.Outputs{Loss: loss[0], Fetches: map[string]*ir.Value{"positive": ops.Cast(b, pos, ir.F32)}}, nil
}

func (r *regress) Load(cfg models.DataConfig) error {
	r.batch, r.seed = cfg.Batch, cfg.Seed
	return nil
}

func (r *regress) StepsPerEpoch() int { return 8 }

// batch returns deterministic data for (epoch, step).
func (r *regress) batchData(epoch, step int) ([]float32, []float32) {
	rng := rand.New(rand.NewPCG(uint64(r.seed), uint64(epoch*1000+step)))
	x := make([]float32, r.batch*8)
	t := make([]float32, r.batch)
	for i := range r.batch {
		s := 0.0
		for j := range 8 {
			v := rng.Float64()*2 - 1
			x[i*8+j] = float32(v)
			s += v * float64(j-3) / 4
		}
		t[i] = float32(math.Sin(s))
	}
	return x, t
}

func (r *regress) TrainFeeds(a *memory.Allocator, epoch, step int) (models.Feeds, error) {
	x, t := r.batchData(epoch, step)
	xt, err := tensor.FromF32(a, x, r.batch, 8)
	if err != nil {
		return models.Feeds{}, err
	}
	tt, err := tensor.FromF32(a, t, r.batch, 1)
	if err != nil {
		xt.Release()
		return models.Feeds{}, err
	}
	return models.Feeds{Tensors: map[string]*tensor.Tensor{"x": xt, "t": tt}}, nil
}

func (r *regress) Evaluate(a *memory.Allocator, run models.Runner) (map[string]float64, error) {
	x, t := r.batchData(99, 0)
	xt, err := tensor.FromF32(a, x, r.batch, 8)
	if err != nil {
		return nil, err
	}
	defer xt.Release()
	res, err := run(map[string]*tensor.Tensor{"x": xt})
	if err != nil {
		return nil, err
	}
	defer res.Release()
	var se float64
	for i, y := range res["y"].F32() {
		se += float64((y - t[i]) * (y - t[i]))
	}
	return map[string]float64{"mse": se / float64(len(t))}, nil
}

var _ = fmt.Sprint
var _ exec.Results
