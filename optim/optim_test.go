package optim_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/optim"
	"github.com/gopir/gopir/tensor"
)

func TestApplyState(t *testing.T) {
	b := ir.NewBuilder(ir.NewProgram())
	w := ops.Parameter(b, "fc1.w", ir.F32, 3, 2)
	bias := ops.Parameter(b, "fc1.b", ir.F32, 2)
	gw, gb := ops.Full(b, ir.F32, 1, 3, 2), ops.Full(b, ir.F32, 1, 2)

	st, err := optim.NewAdam(0.01).Apply(b, []*ir.Value{w, bias}, []*ir.Value{gw, gb})
	if err != nil {
		t.Fatal(err)
	}
	want := []optim.StateSpec{
		{Name: "optim.lr", Type: ir.Scalar(ir.F64), Init: 0.01},
		{Name: "optim.step", Type: ir.Scalar(ir.I64)},
		{Name: "fc1.w@adam.m", Type: ir.TensorOf(ir.F32, 3, 2)},
		{Name: "fc1.w@adam.v", Type: ir.TensorOf(ir.F32, 3, 2)},
		{Name: "fc1.b@adam.m", Type: ir.TensorOf(ir.F32, 2)},
		{Name: "fc1.b@adam.v", Type: ir.TensorOf(ir.F32, 2)},
	}
	checkSpecs(t, st, "optim.lr", want)
	if got := st.Bytes(); got != 8+8+4*(6+6+2+2) {
		t.Errorf("State.Bytes = %d", got)
	}

	// SGD with momentum, a nil gradient (left alone) and custom names.
	sgd := optim.SGD{LR: 0.1, Momentum: 0.9, LRName: "lr.sgd"}
	st, err = sgd.Apply(b, []*ir.Value{w, bias}, []*ir.Value{gw, nil})
	if err != nil {
		t.Fatal(err)
	}
	checkSpecs(t, st, "lr.sgd", []optim.StateSpec{
		{Name: "lr.sgd", Type: ir.Scalar(ir.F64), Init: 0.1},
		{Name: "fc1.w@sgd.velocity", Type: ir.TensorOf(ir.F32, 3, 2)},
	})
	// Plain SGD keeps no state but the learning rate.
	st, err = optim.NewSGD(0.5).Apply(b, []*ir.Value{w}, []*ir.Value{gw})
	if err != nil {
		t.Fatal(err)
	}
	checkSpecs(t, st, "optim.lr", []optim.StateSpec{{Name: "optim.lr", Type: ir.Scalar(ir.F64), Init: 0.5}})
	if _, err := b.Finish(); err != nil {
		t.Fatal(err)
	}
	if a := optim.NewAdamW(1e-3, 0.01); !a.Decoupled || a.WeightDecay != 0.01 || a.Beta1 != 0.9 || a.Beta2 != 0.999 || a.Epsilon != 1e-8 {
		t.Errorf("NewAdamW = %+v", a)
	}
}

func checkSpecs(t *testing.T, st optim.State, lr string, want []optim.StateSpec) {
	t.Helper()
	if st.LR != lr {
		t.Errorf("State.LR = %q, want %q", st.LR, lr)
	}
	if len(st.Specs) != len(want) {
		t.Fatalf("specs %+v, want %+v", st.Specs, want)
	}
	for i, sp := range st.Specs {
		if sp.Name != want[i].Name || !sp.Type.Equal(want[i].Type) || sp.Init != want[i].Init {
			t.Errorf("spec %d = %+v, want %+v", i, sp, want[i])
		}
	}
}

func TestApplyErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		opt  optim.Optimizer
		args func(b *ir.Builder) (params, grads []*ir.Value)
		want string
	}{
		{"not a parameter", optim.NewSGD(0.1), func(b *ir.Builder) ([]*ir.Value, []*ir.Value) {
			x := ops.Data(b, "x", ir.F32, 2)
			return []*ir.Value{x}, []*ir.Value{x}
		}, `parameter 0 is not the result of a "parameter" op`},
		{"counts", optim.NewSGD(0.1), func(b *ir.Builder) ([]*ir.Value, []*ir.Value) {
			return []*ir.Value{ops.Parameter(b, "w", ir.F32, 2)}, nil
		}, "1 parameters and 0 gradients"},
		{"twice", optim.NewAdam(0.1), func(b *ir.Builder) ([]*ir.Value, []*ir.Value) {
			w := ops.Parameter(b, "w", ir.F32, 2)
			g := ops.Full(b, ir.F32, 0, 2)
			return []*ir.Value{w, ops.Parameter(b, "w", ir.F32, 2)}, []*ir.Value{g, g}
		}, `parameter "w" is listed twice`},
		{"integer", optim.NewSGD(0.1), func(b *ir.Builder) ([]*ir.Value, []*ir.Value) {
			w := ops.Parameter(b, "n", ir.I64, 2)
			return []*ir.Value{w}, []*ir.Value{w}
		}, "must be a static f32 or f64 tensor"},
		{"gradient shape", optim.NewSGD(0.1), func(b *ir.Builder) ([]*ir.Value, []*ir.Value) {
			return []*ir.Value{ops.Parameter(b, "w", ir.F32, 2)}, []*ir.Value{ops.Full(b, ir.F32, 0, 3)}
		}, "must have the shape of param"},
		{"negative lr", optim.NewSGD(-1), nil, "LR is -1"},
		{"nesterov", optim.SGD{LR: 0.1, Nesterov: true}, nil, "Nesterov momentum needs Momentum > 0"},
		{"beta", optim.Adam{LR: 0.1, Beta1: 1, Beta2: 0.9}, nil, "betas (1, 0.9) must be in [0, 1)"},
		{"eps", optim.Adam{LR: 0.1, Beta1: 0.9, Beta2: 0.9, Epsilon: math.NaN()}, nil, "Epsilon is NaN"},
	} {
		b := ir.NewBuilder(ir.NewProgram())
		var params, grads []*ir.Value
		if c.args != nil {
			params, grads = c.args(b)
		}
		_, err := c.opt.Apply(b, params, grads)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

func TestClipByGlobalNorm(t *testing.T) {
	// Mixed dtypes and a nil gradient: the norm is computed in f64.
	b := ir.NewBuilder(ir.NewProgram())
	g1 := ops.Data(b, "g1", ir.F32, 3)
	g2 := ops.Data(b, "g2", ir.F64, 2, 2)
	for _, maxNorm := range []float64{0.5, 100} {
		clipped, norm := optim.ClipByGlobalNorm(b, []*ir.Value{g1, nil, g2}, maxNorm)
		if clipped[1] != nil || !clipped[0].Type().Equal(g1.Type()) || !clipped[2].Type().Equal(g2.Type()) || norm.Type().DType != ir.F64 {
			t.Fatalf("clipped %v, norm %v", clipped, norm)
		}
		sfx := map[bool]string{true: "small", false: "big"}[maxNorm < 1]
		ops.Fetch(b, "g1."+sfx, clipped[0])
		ops.Fetch(b, "g2."+sfx, clipped[2])
		ops.Fetch(b, "norm."+sfx, norm)
	}
	prog, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	x, err := exec.Compile(prog, exec.Options{CheckLeaks: true})
	if err != nil {
		t.Fatal(err)
	}
	d1 := []float32{1, -2, 0.5}
	d2 := []float64{0.25, -1, 3, 0}
	t1, _ := tensor.FromF32(host, d1, 3)
	t2, _ := tensor.FromF64(host, d2, 2, 2)
	defer t1.Release()
	defer t2.Release()
	res, err := x.Run(context.Background(), map[string]*tensor.Tensor{"g1": t1, "g2": t2})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	want := math.Sqrt(1 + 4 + 0.25 + 0.0625 + 1 + 9)
	for sfx, maxNorm := range map[string]float64{"small": 0.5, "big": 100} {
		if got := res["norm."+sfx].F64()[0]; math.Abs(got-want) > 1e-6 {
			t.Errorf("norm = %v, want %v", got, want)
		}
		scale := math.Min(maxNorm/(want+1e-6), 1)
		for i, v := range res["g1."+sfx].F32() {
			if math.Abs(float64(v)-float64(d1[i])*scale) > 1e-6 {
				t.Errorf("%s: g1[%d] = %v, want %v", sfx, i, v, float64(d1[i])*scale)
			}
		}
		for i, v := range res["g2."+sfx].F64() {
			if math.Abs(v-d2[i]*scale) > 1e-7 {
				t.Errorf("%s: g2[%d] = %v, want %v", sfx, i, v, d2[i]*scale)
			}
		}
	}

	b = ir.NewBuilder(ir.NewProgram())
	optim.ClipByGlobalNorm(b, []*ir.Value{ops.Data(b, "g", ir.F32, 2)}, -1)
	if err := b.Err(); err == nil || !strings.Contains(err.Error(), "maxNorm is -1") {
		t.Errorf("negative maxNorm: %v", err)
	}
}

func TestStateCreateAndSetScalar(t *testing.T) {
	a := memory.New(memory.Options{})
	st := optim.State{LR: "lr", Specs: []optim.StateSpec{
		{Name: "lr", Type: ir.Scalar(ir.F64), Init: 0.5},
		{Name: "m", Type: ir.TensorOf(ir.F32, 2, 3), Init: 0},
		{Name: "c", Type: ir.TensorOf(ir.I64, 2), Init: 7},
	}}
	store := exec.NewStore()
	if err := st.Create(a, store.Set); err != nil {
		t.Fatal(err)
	}
	lr, _ := store.Get("lr")
	m, _ := store.Get("m")
	c, _ := store.Get("c")
	if lr.F64()[0] != 0.5 || m.Len() != 6 || m.F32()[5] != 0 || c.I64()[1] != 7 {
		t.Fatalf("created %v %v %v", lr, m, c)
	}
	if err := optim.SetScalar(lr, 0.125); err != nil || lr.F64()[0] != 0.125 {
		t.Fatalf("SetScalar: %v, %v", err, lr.F64()[0])
	}
	if err := optim.SetScalar(m, 1); err == nil {
		t.Error("SetScalar on 6 elements succeeded")
	}
	store.Release()
	if got := a.Stats().Allocated.Current; got != 0 {
		t.Errorf("%d bytes left", got)
	}
	bad := optim.State{Specs: []optim.StateSpec{{Name: "d", Type: ir.TensorOf(ir.F32, -1)}}}
	if err := bad.Create(a, func(string, *tensor.Tensor) { t.Error("put called") }); err == nil {
		t.Error("a dynamic state type was created")
	}
}

// TestMinimizeTwoOptimizers trains w with SGD and u with Adam in one
// program, each with its own learning-rate parameter, and checks both
// against hand-written updates of loss = Σ(w − 1)² + Σ(u + 2)².
func TestMinimizeTwoOptimizers(t *testing.T) {
	b := ir.NewBuilder(ir.NewProgram())
	w := ops.Parameter(b, "w", ir.F64, 2)
	u := ops.Parameter(b, "u", ir.F64, 2)
	dw := ops.Subtract(b, w, ops.Full(b, ir.F64, 1, 2))
	du := ops.Add(b, u, ops.Full(b, ir.F64, 2, 2))
	loss := ops.Add(b, ops.ReduceSum(b, ops.Multiply(b, dw, dw), nil, false), ops.ReduceSum(b, ops.Multiply(b, du, du), nil, false))
	ops.Fetch(b, "loss", loss)
	grads, err := autodiff.Backward(b, loss, []*ir.Value{w, u})
	if err != nil {
		t.Fatal(err)
	}
	st1, err := optim.SGD{LR: 0.1, LRName: "lr.w"}.Apply(b, []*ir.Value{w}, grads[:1])
	if err != nil {
		t.Fatal(err)
	}
	adam := optim.NewAdam(0.05)
	adam.LRName = "lr.u"
	st2, err := adam.Apply(b, []*ir.Value{u}, grads[1:])
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
	for name, v := range map[string][]float64{"w": {0, 3}, "u": {1, -1}} {
		x, _ := tensor.FromF64(a, v, 2)
		store.Set(name, x)
	}
	for _, st := range []optim.State{st1, st2} {
		if err := st.Create(a, store.Set); err != nil {
			t.Fatal(err)
		}
	}
	x, err := exec.Compile(prog, exec.Options{Alloc: a, Store: store, CheckLeaks: true})
	if err != nil {
		t.Fatal(err)
	}
	refW, refU := []float64{0, 3}, []float64{1, -1}
	m, v := make([]float64, 2), make([]float64, 2)
	for step := 1; step <= 5; step++ {
		res, err := x.Run(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		res.Release()
		for i := range 2 {
			refW[i] -= 0.1 * 2 * (refW[i] - 1)
			g := 2 * (refU[i] + 2)
			m[i] = 0.9*m[i] + 0.1*g
			v[i] = 0.999*v[i] + 0.001*g*g
			refU[i] -= 0.05 * (m[i] / (1 - math.Pow(0.9, float64(step)))) / (math.Sqrt(v[i]/(1-math.Pow(0.999, float64(step)))) + 1e-8)
		}
	}
	gw, _ := store.Get("w")
	gu, _ := store.Get("u")
	for i := range 2 {
		if math.Abs(gw.F64()[i]-refW[i]) > 1e-12 || math.Abs(gu.F64()[i]-refU[i]) > 1e-12 {
			t.Fatalf("w %v want %v; u %v want %v", gw.F64(), refW, gu.F64(), refU)
		}
	}
	if s, _ := store.Get("optim.step"); s.I64()[0] != 5 {
		t.Errorf("optim.step = %d", s.I64()[0])
	}

	// Minimize is Backward followed by Apply.
	b = ir.NewBuilder(ir.NewProgram())
	p := ops.Parameter(b, "p", ir.F64, 3)
	st, err := optim.Minimize(b, optim.NewSGD(0.1), ops.ReduceSum(b, ops.Multiply(b, p, p), nil, false), []*ir.Value{p})
	if err != nil || st.LR != optim.DefaultLRName {
		t.Fatalf("Minimize: %+v, %v", st, err)
	}
	if _, err := b.Finish(); err != nil {
		t.Fatal(err)
	}
}
