package ops_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Tests of the in-place update family (ops/optim.go): each op against a
// naive reference written from PyTorch's description, the absence of any
// allocation, determinism across thread counts, type errors, the verifier
// rule on written operands, and a run through the executor on a store.

// optVals copies a float tensor into float64s.
func optVals(x *tensor.Tensor) []float64 {
	out := make([]float64, x.Len())
	for i := range out {
		out[i] = x.Float64At(i)
	}
	return out
}

// optScalar returns a rank-0 tensor on host.
func optScalar(t testing.TB, dt tensor.DType, v float64) *tensor.Tensor {
	t.Helper()
	x, err := tensor.Scalar(host, dt, v)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// optRound rounds v to dt's precision.
func optRound(dt tensor.DType, v float64) float64 {
	if dt == tensor.F32 {
		return float64(float32(v))
	}
	return v
}

// optTol is the relative tolerance against the float64 references.
func optTol(dt tensor.DType) float64 {
	if dt == tensor.F32 {
		return 1e-5
	}
	return 1e-14
}

// optRunNoAlloc runs the op on a fresh allocator and checks that it
// returns no results and allocates nothing at all.
func optRunNoAlloc(t *testing.T, name string, attrs ir.Attrs, in ...*tensor.Tensor) {
	t.Helper()
	a := memory.New(memory.Options{})
	outs := mustRun(t, a, name, attrs, in...)
	if len(outs) != 0 {
		t.Fatalf("%s returned %d results, want none", name, len(outs))
	}
	if st := a.Stats(); st.Allocs != 0 || st.Allocated.Peak != 0 || st.Reserved.Peak != 0 {
		t.Fatalf("%s allocated: %+v", name, st)
	}
}

func optSame(t *testing.T, what string, got *tensor.Tensor, want []float64) {
	t.Helper()
	closeEnough(t, what, got, want, got.Shape(), optTol(got.DType()))
}

func TestOptSGDUpdate(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, dt := range []tensor.DType{tensor.F32, tensor.F64} {
		for _, wd := range []float64{0, 0.1} {
			for _, lrDT := range []tensor.DType{tensor.F32, tensor.F64} {
				p := randTensor(t, host, r, dt, 3, 5)
				g := randTensor(t, host, r, dt, 3, 5)
				lr := optScalar(t, lrDT, 0.25)
				want := optVals(p)
				for i, gi := range optVals(g) {
					want[i] = optRound(dt, want[i]-0.25*(gi+wd*want[i]))
				}
				gBefore := optVals(g)
				optRunNoAlloc(t, "sgd_update", ir.A("weight_decay", wd), p, g, lr)
				optSame(t, "param", p, want)
				optSame(t, "grad (unchanged)", g, gBefore)
				release(p, g, lr)
			}
		}
	}
}

// optMomentumRef follows torch.optim.SGD step by step: the buffer starts
// as a clone of the first direction, then buf = μ·buf + d.
type optMomentumRef struct {
	p, buf           []float64
	mu, wd, lr       float64
	nesterov, primed bool
}

func (s *optMomentumRef) step(g []float64) {
	for i := range s.p {
		d := g[i] + s.wd*s.p[i]
		if !s.primed {
			s.buf[i] = d
		} else {
			s.buf[i] = s.mu*s.buf[i] + d
		}
		if s.nesterov {
			d += s.mu * s.buf[i]
		} else {
			d = s.buf[i]
		}
		s.p[i] -= s.lr * d
	}
	s.primed = true
}

func TestOptMomentumUpdate(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, dt := range []tensor.DType{tensor.F32, tensor.F64} {
		for _, nesterov := range []bool{false, true} {
			for _, wd := range []float64{0, 0.05} {
				p := randTensor(t, host, r, dt, 4, 3)
				v, _ := tensor.Zeros(host, dt, 4, 3)
				lr := optScalar(t, tensor.F64, 0.1)
				ref := &optMomentumRef{p: optVals(p), buf: make([]float64, 12), mu: 0.9, wd: wd, lr: 0.1, nesterov: nesterov}
				attrs := ir.A("momentum", 0.9, "nesterov", nesterov, "weight_decay", wd)
				for range 4 {
					g := randTensor(t, host, r, dt, 4, 3)
					ref.step(optVals(g))
					optRunNoAlloc(t, "momentum_update", attrs, p, g, v, lr)
					g.Release()
				}
				optSame(t, "param", p, ref.p)
				optSame(t, "velocity", v, ref.buf)
				release(p, v, lr)
			}
		}
	}
}

// optAdamRef follows torch.optim.Adam / AdamW.
type optAdamRef struct {
	p, m, v             []float64
	lr, b1, b2, eps, wd float64
	decoupled           bool
	step                int
}

func (s *optAdamRef) update(g []float64) {
	s.step++
	bc1 := 1 - math.Pow(s.b1, float64(s.step))
	bc2 := 1 - math.Pow(s.b2, float64(s.step))
	for i := range s.p {
		gi := g[i]
		if s.decoupled {
			s.p[i] *= 1 - s.lr*s.wd
		} else {
			gi += s.wd * s.p[i]
		}
		s.m[i] = s.b1*s.m[i] + (1-s.b1)*gi
		s.v[i] = s.b2*s.v[i] + (1-s.b2)*gi*gi
		mHat := s.m[i] / bc1
		vHat := s.v[i] / bc2
		s.p[i] -= s.lr * mHat / (math.Sqrt(vHat) + s.eps)
	}
}

func TestOptAdamUpdate(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, dt := range []tensor.DType{tensor.F32, tensor.F64} {
		for _, stepDT := range []tensor.DType{tensor.I64, tensor.F64} {
			for _, c := range []struct {
				wd        float64
				decoupled bool
			}{{0, false}, {0.1, false}, {0.1, true}} {
				p := randTensor(t, host, r, dt, 2, 7)
				m, _ := tensor.Zeros(host, dt, 2, 7)
				v, _ := tensor.Zeros(host, dt, 2, 7)
				lr := optScalar(t, tensor.F64, 0.01)
				step := optScalar(t, stepDT, 0)
				ref := &optAdamRef{p: optVals(p), m: make([]float64, 14), v: make([]float64, 14),
					lr: 0.01, b1: 0.8, b2: 0.99, eps: 1e-6, wd: c.wd, decoupled: c.decoupled}
				attrs := ir.A("beta1", 0.8, "beta2", 0.99, "epsilon", 1e-6, "weight_decay", c.wd, "decoupled", c.decoupled)
				for range 5 {
					optRunNoAlloc(t, "increment", ir.A("by", 1.0), step)
					g := randTensor(t, host, r, dt, 2, 7)
					ref.update(optVals(g))
					optRunNoAlloc(t, "adam_update", attrs, p, g, m, v, lr, step)
					g.Release()
				}
				tol := 1e-12
				if dt == tensor.F32 {
					tol = 1e-4
				}
				closeEnough(t, "param", p, ref.p, p.Shape(), tol)
				closeEnough(t, "m", m, ref.m, m.Shape(), tol)
				closeEnough(t, "v", v, ref.v, v.Shape(), tol)
				if got := step.Float64At(0); got != 5 {
					t.Fatalf("step = %v after 5 increments", got)
				}
				release(p, m, v, lr, step)
			}
		}
	}
}

func TestOptAdamDefaults(t *testing.T) {
	// Absent attributes are PyTorch's defaults.
	r := rand.New(rand.NewPCG(7, 8))
	p := randTensor(t, host, r, tensor.F64, 5)
	g := randTensor(t, host, r, tensor.F64, 5)
	m, _ := tensor.Zeros(host, tensor.F64, 5)
	v, _ := tensor.Zeros(host, tensor.F64, 5)
	lr, step := optScalar(t, tensor.F64, 1e-3), optScalar(t, tensor.I64, 1)
	ref := &optAdamRef{p: optVals(p), m: make([]float64, 5), v: make([]float64, 5), lr: 1e-3, b1: 0.9, b2: 0.999, eps: 1e-8}
	ref.update(optVals(g))
	optRunNoAlloc(t, "adam_update", nil, p, g, m, v, lr, step)
	optSame(t, "param", p, ref.p)
	release(p, g, m, v, lr, step)
}

func TestOptAssignInto(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, dt := range []tensor.DType{tensor.F32, tensor.F64, tensor.I32, tensor.I64, tensor.Bool} {
		dst := randTensor(t, host, r, dt, 3, 4)
		src := randTensor(t, host, r, dt, 3, 4)
		before := dst.Storage()
		optRunNoAlloc(t, "assign_into", nil, dst, src)
		if dst.Storage() != before || string(dst.Raw()) != string(src.Raw()) {
			t.Fatalf("%s: dst not overwritten in place", dt)
		}
		release(dst, src)
	}
	// Scalars, as for a step counter.
	dst, src := optScalar(t, tensor.I64, 3), optScalar(t, tensor.I64, 42)
	optRunNoAlloc(t, "assign_into", nil, dst, src)
	if dst.I64()[0] != 42 {
		t.Fatalf("scalar assign_into: %d", dst.I64()[0])
	}
	release(dst, src)
}

func TestOptIncrement(t *testing.T) {
	for _, c := range []struct {
		dt      tensor.DType
		by      float64
		from, n float64
	}{{tensor.I64, 1, 0, 3}, {tensor.I32, -2, 5, 2}, {tensor.F64, 0.5, 1, 4}, {tensor.F32, 0.25, 0, 1}} {
		x := optScalar(t, c.dt, c.from)
		for range int(c.n) {
			optRunNoAlloc(t, "increment", ir.A("by", c.by), x)
		}
		if got, want := x.Float64At(0), c.from+c.n*c.by; got != want {
			t.Fatalf("%s: %v, want %v", c.dt, got, want)
		}
		x.Release()
	}
	// The default is 1, and tensors of any shape work.
	x, _ := tensor.FromI64(host, []int64{1, 2, 3}, 3)
	optRunNoAlloc(t, "increment", nil, x)
	if got := x.I64(); got[0] != 2 || got[1] != 3 || got[2] != 4 {
		t.Fatalf("increment: %v", got)
	}
	x.Release()
}

// optBindRun binds the op for the inputs' types and runs it with threads.
func optBindRun(t *testing.T, threads int, name string, attrs ir.Attrs, in ...*tensor.Tensor) error {
	t.Helper()
	types := make([]ir.Type, len(in))
	for i, x := range in {
		types[i] = ir.TensorOf(ir.DType(x.DType()), x.Shape()...)
	}
	op, err := buildOp(t, name, attrs, types...)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ops.Bind(op)
	if err != nil {
		t.Fatal(err)
	}
	_, err = k(&ops.Ctx{Alloc: memory.New(memory.Options{}), Threads: threads}, in)
	return err
}

func TestOptParallelDeterministic(t *testing.T) {
	// Large enough to be split; results must not depend on the split.
	const n = 200_003
	for _, dt := range []tensor.DType{tensor.F32, tensor.F64} {
		var results [][]byte
		for _, threads := range []int{1, 2, 5} {
			r := rand.New(rand.NewPCG(11, 12))
			p := randTensor(t, host, r, dt, n)
			m := randTensor(t, host, r, dt, n)
			v := randTensor(t, host, r, dt, n)
			optAbs(v)
			lr, step := optScalar(t, tensor.F64, 0.01), optScalar(t, tensor.I64, 3)
			vel := randTensor(t, host, r, dt, n)
			for k := range 3 {
				g := randTensor(t, host, r, dt, n)
				attrs := ir.A("weight_decay", 0.01, "momentum", 0.9, "nesterov", k == 1)
				optMust(t, optBindRun(t, threads, "adam_update", ir.A("weight_decay", 0.01), p, g, m, v, lr, step))
				optMust(t, optBindRun(t, threads, "momentum_update", attrs, p, g, vel, lr))
				optMust(t, optBindRun(t, threads, "sgd_update", ir.A("weight_decay", 0.01), p, g, lr))
				g.Release()
			}
			results = append(results, append([]byte(nil), p.Raw()...))
			release(p, m, v, lr, step, vel)
		}
		for i := 1; i < len(results); i++ {
			if string(results[i]) != string(results[0]) {
				t.Fatalf("%s: results differ between thread counts", dt)
			}
		}
	}
}

// optAbs makes every element of the float tensor x non-negative, as a
// second moment is.
func optAbs(x *tensor.Tensor) {
	if x.DType() == tensor.F32 {
		for i, e := range x.F32() {
			x.F32()[i] = float32(math.Abs(float64(e)))
		}
		return
	}
	for i, e := range x.F64() {
		x.F64()[i] = math.Abs(e)
	}
}

func optMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestOptInferErrors(t *testing.T) {
	f32 := func(d ...int) ir.Type { return ir.TensorOf(ir.F32, d...) }
	f64 := func(d ...int) ir.Type { return ir.TensorOf(ir.F64, d...) }
	i64 := func(d ...int) ir.Type { return ir.TensorOf(ir.I64, d...) }
	lr := f64()
	for _, c := range []struct {
		name  string
		attrs ir.Attrs
		in    []ir.Type
		want  string
	}{
		{"sgd_update", nil, []ir.Type{f32(3), f32(4), lr}, "grad tensor<4xf32> must have the shape of param"},
		{"sgd_update", nil, []ir.Type{f32(3), f32(3, 1), lr}, "must have the shape"},
		{"sgd_update", nil, []ir.Type{f32(3), f64(3), lr}, "must have the dtype of param"},
		{"sgd_update", nil, []ir.Type{i64(3), i64(3), lr}, "must be f32 or f64"},
		{"sgd_update", nil, []ir.Type{f32(3), f32(3), f64(1)}, "lr tensor<1xf64> must be a scalar"},
		{"sgd_update", nil, []ir.Type{f32(3), f32(3), i64()}, "lr tensor<i64> must be a scalar (rank 0) of f32 or f64"},
		{"sgd_update", nil, []ir.Type{f32(3), f32(3)}, "takes 3 operands"},
		{"sgd_update", ir.A("weight_decay", -1.0), []ir.Type{f32(3), f32(3), lr}, "weight_decay:-1 must be >= 0"},
		{"momentum_update", ir.A("momentum", 0.9), []ir.Type{f32(3), f32(3), f32(2), lr}, "velocity tensor<2xf32> must have the shape"},
		{"momentum_update", ir.A("momentum", 0.9), []ir.Type{f32(3), f32(3), f64(3), lr}, "velocity tensor<3xf64> must have the dtype"},
		{"momentum_update", nil, []ir.Type{f32(3), f32(3), f32(3), lr}, "momentum"},
		{"momentum_update", ir.A("momentum", 0.0, "nesterov", true), []ir.Type{f32(3), f32(3), f32(3), lr}, "nesterov needs a momentum > 0"},
		{"adam_update", nil, []ir.Type{f32(3), f32(3), f32(3), f32(4), lr, i64()}, "v tensor<4xf32> must have the shape"},
		{"adam_update", nil, []ir.Type{f32(3), f32(3), f64(3), f32(3), lr, i64()}, "m tensor<3xf64> must have the dtype"},
		{"adam_update", nil, []ir.Type{f32(3), f32(3), f32(3), f32(3), lr, ir.TensorOf(ir.I32)}, "step tensor<i32> must be a scalar (rank 0) of i64 or f64"},
		{"adam_update", nil, []ir.Type{f32(3), f32(3), f32(3), f32(3), lr, i64(1)}, "step tensor<1xi64> must be a scalar"},
		{"adam_update", ir.A("beta1", 1.0), []ir.Type{f32(3), f32(3), f32(3), f32(3), lr, i64()}, "beta1:1 must be in [0, 1)"},
		{"adam_update", ir.A("beta2", -0.5), []ir.Type{f32(3), f32(3), f32(3), f32(3), lr, i64()}, "beta2:-0.5 must be in [0, 1)"},
		{"adam_update", ir.A("epsilon", -1e-8), []ir.Type{f32(3), f32(3), f32(3), f32(3), lr, i64()}, "epsilon"},
		{"assign_into", nil, []ir.Type{f32(2, 3), f32(3, 2)}, "src tensor<3x2xf32> must have the shape of dst tensor<2x3xf32>"},
		{"assign_into", nil, []ir.Type{f32(2, 3), f64(2, 3)}, "must have the dtype of dst"},
		{"increment", nil, []ir.Type{ir.TensorOf(ir.I1)}, "not supported"},
		{"increment", ir.A("by", 0.5), []ir.Type{i64()}, "not an integer"},
	} {
		_, err := buildOp(t, c.name, c.attrs, c.in...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s%v: error %v, want one containing %q", c.name, c.in, err, c.want)
		}
	}
	// Dynamic dims are accepted where the other side is static.
	if _, err := buildOp(t, "adam_update", nil, f32(3, 4), f32(-1, -1), f32(3, 4), f32(3, 4), f32(), i64()); err != nil {
		t.Errorf("dynamic grad: %v", err)
	}
}

func TestOptRunErrors(t *testing.T) {
	// A dynamic grad whose run-time shape differs from the param's.
	b := ir.NewBuilder(ir.NewProgram())
	p := ops.Data(b, "p", ir.F64, 3)
	g := ops.Data(b, "g", ir.F64, -1)
	lr := ops.Data(b, "lr", ir.F64)
	op := ops.SGDUpdate(b, p, g, lr, 0)
	optMust(t, b.Err())
	k, err := ops.Bind(op)
	optMust(t, err)
	pt, _ := tensor.Zeros(host, tensor.F64, 3)
	gt, _ := tensor.Zeros(host, tensor.F64, 4)
	lrt := optScalar(t, tensor.F64, 0.1)
	c := &ops.Ctx{Alloc: memory.New(memory.Options{}), Threads: 1}
	if _, err := k(c, []*tensor.Tensor{pt, gt, lrt}); err == nil || !strings.Contains(err.Error(), "shape [4], operand 0 has [3]") {
		t.Errorf("shape mismatch at run time: %v", err)
	}
	release(pt, gt, lrt)

	// Adam's step counts from 1.
	r := rand.New(rand.NewPCG(13, 14))
	x := randTensor(t, host, r, tensor.F64, 2)
	z, _ := tensor.Zeros(host, tensor.F64, 2)
	lrt, step := optScalar(t, tensor.F64, 0.1), optScalar(t, tensor.I64, 0)
	_, err = runOp(t, memory.New(memory.Options{}), "adam_update", nil, x, x, z, z, lrt, step)
	if err == nil || !strings.Contains(err.Error(), "step is 0; it counts steps from 1") {
		t.Errorf("step 0: %v", err)
	}
	release(x, z, lrt, step)
}

func TestOptVerifyWrites(t *testing.T) {
	build := func(written func(b *ir.Builder, p *ir.Value) *ir.Value) error {
		b := ir.NewBuilder(ir.NewProgram())
		p := ops.Parameter(b, "w", ir.F64, 3)
		g := ops.Data(b, "g", ir.F64, 3)
		lr := ops.Parameter(b, "optim.lr", ir.F64)
		ops.SGDUpdate(b, written(b, p), g, lr, 0)
		_, err := b.Finish()
		return err
	}
	if err := build(func(_ *ir.Builder, p *ir.Value) *ir.Value { return p }); err != nil {
		t.Fatalf("update of a parameter: %v", err)
	}
	err := build(func(b *ir.Builder, p *ir.Value) *ir.Value { return ops.Add(b, p, p) })
	if err == nil || !strings.Contains(err.Error(), `operand 0 (param) is written in place, so it must be read from a "parameter"`) {
		t.Fatalf("update of an intermediate: %v", err)
	}
	// Inside a region, a captured parameter is fine.
	b := ir.NewBuilder(ir.NewProgram())
	p := ops.Parameter(b, "w", ir.F64, 3)
	n := ops.Parameter(b, "n", ir.I64)
	src := ops.Data(b, "src", ir.F64, 3)
	c := ops.GreaterThan(b, ops.ReduceSum(b, src, nil, false), ops.Full(b, ir.F64, 0))
	b.If(c, func(b *ir.Builder) []*ir.Value {
		ops.AssignInto(b, p, src)
		ops.Increment(b, n, 1)
		return nil
	}, nil)
	if _, err := b.Finish(); err != nil {
		t.Fatalf("updates inside an if: %v", err)
	}
	// The family is registered with Writes and no results.
	for name, writes := range map[string][]int{"sgd_update": {0}, "momentum_update": {0, 2}, "adam_update": {0, 2, 3}, "assign_into": {0}, "increment": {0}} {
		d, ok := ops.Lookup(name)
		if !ok || !equalInts(d.Writes, writes) || !d.NoGrad {
			t.Errorf("%s: Writes %v, want %v", name, d.Writes, writes)
		}
	}
}

func TestOptOOMSweep(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	x := func() *tensor.Tensor { return randTensor(t, host, r, tensor.F32, 4, 5) }
	lr, step := optScalar(t, tensor.F64, 0.1), optScalar(t, tensor.I64, 2)
	p, g, m, v := x(), x(), x(), x()
	optAbs(v)
	// Each op succeeds under the smallest limit and allocates nothing.
	checkOOMSweep(t, "sgd_update", nil, p, g, lr)
	checkOOMSweep(t, "momentum_update", ir.A("momentum", 0.9), p, g, m, lr)
	checkOOMSweep(t, "adam_update", nil, p, g, m, v, lr, step)
	checkOOMSweep(t, "assign_into", nil, p, g)
	checkOOMSweep(t, "increment", nil, step)
	tiny := memory.New(memory.Options{Limit: 64, ChunkSize: 64})
	for _, c := range []struct {
		name  string
		attrs ir.Attrs
		in    []*tensor.Tensor
	}{{"sgd_update", nil, []*tensor.Tensor{p, g, lr}}, {"adam_update", nil, []*tensor.Tensor{p, g, m, v, lr, step}}} {
		if _, err := runOp(t, tiny, c.name, c.attrs, c.in...); err != nil {
			t.Fatalf("%s under a 64-byte limit: %v", c.name, err)
		}
	}
	if st := tiny.Stats(); st.Allocs != 0 || st.Reserved.Peak != 0 {
		t.Fatalf("the updates allocated: %+v", st)
	}
	release(p, g, m, v, lr, step)
}

func TestOptThroughExecutor(t *testing.T) {
	// Three steps of SGD with momentum on store tensors: the store keeps
	// the same tensors, updated in place, and nothing else stays allocated.
	a := memory.New(memory.Options{})
	store := exec.NewStore()
	defer store.Release()
	newT := func(data []float64, shape ...int) *tensor.Tensor {
		x, err := tensor.FromF64(a, data, shape...)
		optMust(t, err)
		return x
	}
	store.Set("w", newT([]float64{1, 2, 3, 4, 5, 6, 7, 8}, 8))
	store.Set("w@sgd.velocity", newT(make([]float64, 8), 8))
	store.Set("optim.lr", newT([]float64{0.1}, []int{}...))
	store.Set("count", func() *tensor.Tensor { x, _ := tensor.Scalar(a, tensor.I64, 0); return x }())

	b := ir.NewBuilder(ir.NewProgram())
	w := ops.Parameter(b, "w", ir.F64, 8)
	vel := ops.Parameter(b, "w@sgd.velocity", ir.F64, 8)
	lr := ops.Parameter(b, "optim.lr", ir.F64)
	count := ops.Parameter(b, "count", ir.I64)
	x := ops.Data(b, "x", ir.F64, 8)
	// loss = Σ w·x, so the gradient is x; fetch the loss before updating.
	loss := ops.ReduceSum(b, ops.Multiply(b, w, x), nil, false)
	ops.Fetch(b, "loss", loss)
	ops.MomentumUpdate(b, w, x, vel, lr, 0.5, false, 0)
	ops.Increment(b, count, 1)
	prog, err := b.Finish()
	optMust(t, err)
	ex, err := exec.Compile(prog, exec.Options{Alloc: a, Store: store, CheckLeaks: true})
	optMust(t, err)

	before := map[string]*tensor.Tensor{}
	for _, n := range store.Names() {
		before[n], _ = store.Get(n)
	}
	base := a.Stats().Allocated.Current
	xs, _ := tensor.FromF64(host, []float64{1, -1, 0.5, 0, 2, 1, -2, 3}, 8)
	defer xs.Release()
	ref := &optMomentumRef{p: []float64{1, 2, 3, 4, 5, 6, 7, 8}, buf: make([]float64, 8), mu: 0.5, lr: 0.1}
	for step := range 3 {
		res, err := ex.Run(context.Background(), map[string]*tensor.Tensor{"x": xs})
		optMust(t, err)
		res.Release()
		ref.step(optVals(xs))
		if got := a.Stats().Allocated.Current; got != base {
			t.Fatalf("step %d: allocated %d, want the store's %d", step, got, base)
		}
	}
	for n, x := range before {
		if now, _ := store.Get(n); now != x {
			t.Fatalf("store tensor %q was replaced", n)
		}
	}
	w1, _ := store.Get("w")
	optSame(t, "w", w1, ref.p)
	c, _ := store.Get("count")
	if c.I64()[0] != 3 {
		t.Fatalf("count = %d", c.I64()[0])
	}
}
