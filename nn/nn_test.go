package nn_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/nn"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// net is a small conv net with every layer kind.
func net(training bool) (*ir.Program, *nn.Module) {
	m := nn.NewModule(ir.F32, training)
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F32, -1, 2, 6, 6)
	h := m.Conv2D(b, "conv", x, 3, 3, nn.ConvOpts{Pad: 1})
	h = ops.Relu(b, m.BatchNorm(b, "bn", h))
	h = ops.Flatten(b, h, 1, -1)
	h = m.Dropout(b, h, 0.5)
	h = m.LayerNorm(b, "ln", m.Linear(b, "fc", h, 4))
	ops.Fetch(b, "y", h)
	p, err := b.Finish()
	if err != nil {
		panic(err)
	}
	return p, m
}

func TestParamsAreDeclaredOnceAndShared(t *testing.T) {
	_, train := net(true)
	_, eval := net(false)
	if len(train.Params()) != len(eval.Params()) {
		t.Fatalf("train declares %d params, eval %d", len(train.Params()), len(eval.Params()))
	}
	want := []string{"conv.w", "conv.b", "bn.scale", "bn.bias", "bn.running_mean", "bn.running_var", "fc.w", "fc.b", "ln.scale", "ln.bias"}
	for i, s := range train.Params() {
		if s.Name != want[i] || eval.Params()[i].Name != want[i] {
			t.Fatalf("param %d is %q, want %q", i, s.Name, want[i])
		}
	}
	if got := len(train.Trainable()); got != 8 {
		t.Errorf("%d trainable params, want 8 (running stats are not trained)", got)
	}
	// conv 3·2·3·3 + 3, bn 4·3, fc 108·4 + 4, ln 2·4 floats.
	if got, want := train.Bytes(), int64(4*(54+3+12+432+4+8)); got != want {
		t.Errorf("Bytes = %d, want %d", got, want)
	}
}

func TestInitializationIsDeterministicAndScaled(t *testing.T) {
	_, m := net(true)
	a := memory.New(memory.Options{})
	values := func(seed int64) map[string][]float32 {
		out := map[string][]float32{}
		err := m.Create(a, seed, func(name string, x *tensor.Tensor) {
			out[name] = append([]float32(nil), x.F32()...)
			x.Release()
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	one, again, other := values(1), values(1), values(2)
	for name, v := range one {
		for i := range v {
			if v[i] != again[name][i] {
				t.Fatalf("%s differs between two creations with the same seed", name)
			}
		}
	}
	if one["fc.w"][0] == other["fc.w"][0] {
		t.Errorf("fc.w is the same for seeds 1 and 2")
	}
	bound := float32(1 / math.Sqrt(108))
	for _, w := range one["fc.w"] {
		if w < -bound || w >= bound {
			t.Fatalf("fc.w element %v outside ±1/√fanIn = %v", w, bound)
		}
	}
	if one["bn.running_var"][0] != 1 || one["bn.running_mean"][0] != 0 || one["ln.scale"][2] != 1 {
		t.Errorf("constant initializers wrong: %v %v %v", one["bn.running_var"], one["bn.running_mean"], one["ln.scale"])
	}
	if got := a.Stats().Allocated.Current; got != 0 {
		t.Errorf("%d bytes left", got)
	}
}

// TestBatchNormUpdatesRunningStatsInPlace runs the training program: the
// running statistics change, in the same tensors, and nothing else is
// allocated between runs.
func TestBatchNormUpdatesRunningStatsInPlace(t *testing.T) {
	prog, m := net(true)
	evalProg, _ := net(false)
	a := memory.New(memory.Options{})
	store := exec.NewStore()
	defer store.Release()
	if err := m.Create(a, 7, store.Set); err != nil {
		t.Fatal(err)
	}
	x, err := exec.Compile(prog, exec.Options{Alloc: a, Store: store, CheckLeaks: true})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := exec.Compile(evalProg, exec.Options{Alloc: a, Store: store, CheckLeaks: true})
	if err != nil {
		t.Fatal(err)
	}
	in, _ := tensor.New(memory.New(memory.Options{}), tensor.F32, 5, 2, 6, 6)
	defer in.Release()
	for i := range in.F32() {
		in.F32()[i] = float32(math.Sin(float64(i)))
	}
	mean, _ := store.Get("bn.running_mean")
	before := append([]float32(nil), mean.F32()...)
	for range 3 {
		res, err := x.Run(context.Background(), map[string]*tensor.Tensor{"x": in})
		if err != nil {
			t.Fatal(err)
		}
		res.Release()
		var held int64 // the store's tensors, each rounded to the 64-byte alignment
		for _, n := range store.Names() {
			v, _ := store.Get(n)
			held += (v.Bytes() + 63) / 64 * 64
		}
		if got := a.Stats().Allocated.Current; got != held {
			t.Fatalf("allocated %d between runs, the store holds %d", got, held)
		}
	}
	after, _ := store.Get("bn.running_mean")
	if after != mean {
		t.Fatal("the running mean was replaced, not updated in place")
	}
	if after.F32()[0] == before[0] {
		t.Errorf("running mean did not move: %v", after.F32())
	}
	res, err := ev.Run(context.Background(), map[string]*tensor.Tensor{"x": in})
	if err != nil {
		t.Fatal(err)
	}
	if y := res["y"]; y.Shape()[0] != 5 || y.Shape()[1] != 4 {
		t.Errorf("eval output shape %v", y.Shape())
	}
	res.Release()
}

// TestNormalInit checks the mean and spread of Normal over many draws.
func TestNormalInit(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]float64, 100000)
	nn.Normal{Mean: 0.5, Std: 0.001}.Fill(r, 0, 0, out)
	var sum, sq float64
	for _, v := range out {
		sum += v
	}
	mean := sum / float64(len(out))
	for _, v := range out {
		sq += (v - mean) * (v - mean)
	}
	std := math.Sqrt(sq / float64(len(out)))
	if math.Abs(mean-0.5) > 1e-5 || math.Abs(std-0.001) > 2e-5 {
		t.Errorf("Normal{0.5, 0.001}: mean %v std %v", mean, std)
	}
	if got := (nn.Normal{Mean: 0, Std: 0.001}).String(); got != "normal(0, 0.001)" {
		t.Errorf("String = %q", got)
	}
}
