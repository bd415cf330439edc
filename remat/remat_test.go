package remat_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/remat"
	"github.com/gopir/gopir/tensor"
)

// host holds feeds and parameter values, apart from the runs' allocators.
var host = memory.New(memory.Options{})

// case_ is a training-like program: a forward pass, a loss, its backward
// (fetched gradients), the parameters' values and the feeds.
type case_ struct {
	p        *ir.Program
	backward *ir.Op // the first op after the loss
	params   map[string]*tensor.Tensor
	feeds    map[string]*tensor.Tensor
	types    map[string]ir.Type // the feeds' types, for the plans
	trips    int
}

// build makes a case: forward builds the forward pass and returns the
// loss; every parameter it declares gets random values.
func build(t *testing.T, forward func(b *ir.Builder, param func(name string, dims ...int) *ir.Value) *ir.Value) *case_ {
	t.Helper()
	r := rand.New(rand.NewPCG(7, 8))
	c := &case_{params: map[string]*tensor.Tensor{}, feeds: map[string]*tensor.Tensor{}, types: map[string]ir.Type{}}
	b := ir.NewBuilder(ir.NewProgram())
	var wrt []*ir.Value
	loss := forward(b, func(name string, dims ...int) *ir.Value {
		v := ops.Parameter(b, name, ir.F32, dims...)
		c.params[name] = randF32(t, r, 0.3, dims...)
		wrt = append(wrt, v)
		return v
	})
	grads, err := autodiff.Backward(b, loss, wrt)
	if err != nil {
		t.Fatal(err)
	}
	ops.Fetch(b, "loss", loss)
	for i, g := range grads {
		ops.Fetch(b, "grad"+string(rune('a'+i)), g)
	}
	if c.p, err = b.Finish(); err != nil {
		t.Fatal(err)
	}
	top := c.p.Body()
	c.backward = top.Ops()[top.IndexOf(loss.Def())+1]
	return c
}

func randF32(t *testing.T, r *rand.Rand, scale float64, dims ...int) *tensor.Tensor {
	t.Helper()
	x, err := tensor.New(host, tensor.F32, dims...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range x.F32() {
		x.F32()[i] = float32((r.Float64()*2 - 1) * scale)
	}
	return x
}

// feed sets feed name.
func (c *case_) feed(name string, x *tensor.Tensor) {
	if old := c.feeds[name]; old != nil {
		old.Release()
	}
	c.feeds[name] = x
	c.types[name] = ir.TensorOf(ir.DType(x.DType()), x.Shape()...)
}

// compile compiles p with a fresh allocator and a store holding copies of
// the parameters.
func (c *case_) compile(t *testing.T, p *ir.Program, limit int64) *exec.Executable {
	t.Helper()
	a := memory.New(memory.Options{Limit: limit, ChunkSize: 1 << 16})
	store := exec.NewStore()
	for name, v := range c.params {
		x, err := tensor.New(a, tensor.F32, v.Shape()...)
		if err != nil {
			t.Fatal(err)
		}
		copy(x.F32(), v.F32())
		store.Set(name, x)
	}
	x, err := exec.Compile(p, exec.Options{Alloc: a, Store: store, Threads: 2, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Release)
	return x
}

// plan plans a step of p with the case's feeds.
func (c *case_) plan(p *ir.Program) (*exec.Plan, error) {
	a := memory.New(memory.Options{})
	store := exec.NewStore()
	defer store.Release()
	for name, v := range c.params {
		x, _ := tensor.New(a, tensor.F32, v.Shape()...)
		store.Set(name, x)
	}
	x, err := exec.Compile(p, exec.Options{Alloc: a, Store: store, Threads: 2})
	if err != nil {
		return nil, err
	}
	return x.Plan(exec.PlanOptions{Feeds: c.types, Trips: c.trips})
}

// run runs x once and returns its fetches' bytes and the peak.
func (c *case_) run(t *testing.T, x *exec.Executable) (map[string][]byte, int64) {
	t.Helper()
	x.SetRuns(11)
	x.Allocator().ResetPeak()
	res, err := x.Run(context.Background(), c.feeds)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for n, v := range res {
		out[n] = bytes.Clone(v.Raw())
	}
	res.Release()
	return out, x.Allocator().Stats().Allocated.Peak
}

// fit rematerializes the case to budget.
func (c *case_) fit(t *testing.T, budget int64) *remat.Result {
	t.Helper()
	res, err := remat.Fit(c.p, remat.Options{Budget: budget, Backward: c.backward, Plan: c.plan, Feeds: c.types, Trips: c.trips})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// check runs the original and the rematerialized program on the current
// feeds: the same fetches bit for bit, and with within the rematerialized
// peak as planned, within budget and below the original's.
func (c *case_) check(t *testing.T, res *remat.Result, budget int64, within bool) {
	t.Helper()
	want, natural := c.run(t, c.compile(t, c.p, 0))
	got, peak := c.run(t, c.compile(t, res.Program, 0))
	for n, w := range want {
		if !bytes.Equal(got[n], w) {
			t.Fatalf("fetch %q differs after rematerialization", n)
		}
	}
	plan, err := c.plan(res.Program)
	if err != nil {
		t.Fatal(err)
	}
	if within && (peak > budget || peak >= natural) {
		t.Fatalf("the rematerialized step peaked at %d bytes: budget %d, %d without rematerialization", peak, budget, natural)
	}
	if within && plan.Peak != peak && len(plan.Assumed) == 0 {
		t.Fatalf("planned %d, measured %d", plan.Peak, peak)
	}
}

func (c *case_) release() {
	for _, x := range c.params {
		x.Release()
	}
	for _, x := range c.feeds {
		x.Release()
	}
}

// chain is x·W1, tanh, ... eight layers, then the sum: activations
// dominate.
func chain(t *testing.T, dropout bool) *case_ {
	c := build(t, func(b *ir.Builder, param func(string, ...int) *ir.Value) *ir.Value {
		h := ops.Data(b, "x", ir.F32, 512, 64)
		for i := range 16 {
			h = ops.Tanh(b, ops.Matmul(b, h, param(string(rune('a'+i)), 64, 64), false, false))
			if dropout && i == 5 {
				h, _ = ops.Dropout(b, h, 0.3, true, 0)
			}
		}
		return ops.ReduceSum(b, h, nil, false)
	})
	c.feed("x", randF32(t, rand.New(rand.NewPCG(1, 2)), 1, 512, 64))
	return c
}

// Values of the top level (a chain of layers, dropout among them, which
// is recomputed with its original stream): at 80% and 65% of the natural
// peak (the parameters and their gradients take a fifth) the step fits,
// computes the same bits, and adds less work than a forward pass.
func TestFitChain(t *testing.T) {
	for _, dropout := range []bool{false, true} {
		c := chain(t, dropout)
		natural, err := c.plan(c.p)
		if err != nil {
			t.Fatal(err)
		}
		for _, frac := range []float64{0.8, 0.65} {
			budget := int64(frac * float64(natural.Peak))
			res := c.fit(t, budget)
			if res.Peak > budget || len(res.Recomputed) == 0 || res.RecomputedFlops <= 0 || res.RecomputedFlops >= res.StepFlops/2 {
				t.Fatalf("dropout %v at %.0f%%: peak %d (budget %d), %d recomputations, %d of %d FLOPs", dropout, 100*frac, res.Peak, budget, len(res.Recomputed), res.RecomputedFlops, res.StepFlops)
			}
			recomputedDropout := false
			for _, r := range res.Recomputed {
				recomputedDropout = recomputedDropout || r.Op == "dropout"
			}
			if dropout && frac < 0.5 && !recomputedDropout {
				t.Errorf("at %.0f%% the dropout was not recomputed: the test does not check its stream", 100*frac)
			}
			c.check(t, res, budget, true)
		}
		c.release()
	}
}

// A budget below what the search reaches is refused with the lowest peak
// it found, a budget that works.
func TestFitFloor(t *testing.T) {
	c := chain(t, false)
	defer c.release()
	_, err := remat.Fit(c.p, remat.Options{Budget: 1, Backward: c.backward, Plan: c.plan, Feeds: c.types})
	var floor *remat.FloorError
	if !errors.As(err, &floor) || floor.Floor <= 1 || floor.Floor >= floor.Natural {
		t.Fatalf("a budget of 1 byte: %v, want a FloorError with a floor below the natural peak", err)
	}
	res := c.fit(t, floor.Floor)
	c.check(t, res, floor.Floor, true)
}

// ifCase: the loss is an "if" on a feed, whose then branch is a chain of
// layers: its activations are residuals of the if, alive at the start of
// the backward, where the peak is.
func ifCase(t *testing.T) *case_ {
	c := build(t, func(b *ir.Builder, param func(string, ...int) *ir.Value) *ir.Value {
		x := ops.Data(b, "x", ir.F32, 256, 64)
		cond := ops.Data(b, "c", ir.I1)
		w := []*ir.Value{param("a", 64, 64), param("b", 64, 64), param("c", 64, 64), param("d", 64, 64)}
		out := b.If(cond, func(b *ir.Builder) []*ir.Value {
			h := x
			for _, wi := range w {
				h = ops.Tanh(b, ops.Matmul(b, h, wi, false, false))
			}
			return []*ir.Value{ops.ReduceSum(b, h, nil, false)}
		}, func(b *ir.Builder) []*ir.Value {
			return []*ir.Value{ops.ReduceSum(b, ops.Matmul(b, x, w[0], false, false), nil, false)}
		})
		return out[0]
	})
	c.feed("x", randF32(t, rand.New(rand.NewPCG(3, 4)), 1, 256, 64))
	return c
}

// Residuals of an "if": recomputed inside the backward "if" from those it
// keeps, with the same bits whichever branch runs.
func TestFitIf(t *testing.T) {
	c := ifCase(t)
	defer c.release()
	natural, err := c.plan(c.p)
	if err != nil {
		t.Fatal(err)
	}
	budget := int64(0.75 * float64(natural.Peak))
	res := c.fit(t, budget)
	inIf := 0
	for _, r := range res.Recomputed {
		if r.InIf {
			inIf++
		}
	}
	if inIf == 0 {
		t.Fatalf("nothing recomputed inside the if: %+v", res.Recomputed)
	}
	for _, cond := range []bool{true, false} {
		b, _ := tensor.FromBool(host, []bool{cond})
		bs, _ := b.Reshape()
		b.Release()
		c.feed("c", bs)
		c.check(t, res, budget, cond)
	}
}

// loopCase: a recurrent loop h = tanh(h·W + x[i]) over a feed's trip
// count: its tapes grow with the trips.
func loopCase(t *testing.T) *case_ {
	c := build(t, func(b *ir.Builder, param func(string, ...int) *ir.Value) *ir.Value {
		x := ops.Data(b, "x", ir.F32, -1, 32, 48)
		n := ops.Data(b, "n", ir.I64)
		w := param("w", 48, 48)
		zero := ops.Full(b, ir.I64, 0)
		h0 := ops.Full(b, ir.F32, 0, 32, 48)
		out := b.While(ops.LessThan(b, zero, n), []*ir.Value{zero, h0}, func(b *ir.Builder, args []*ir.Value) (*ir.Value, []*ir.Value) {
			xt := ops.Gather(b, x, args[0], 0)
			h := ops.Tanh(b, ops.Add(b, ops.Matmul(b, args[1], w, false, false), xt))
			h = ops.Multiply(b, ops.Sigmoid(b, h), h)
			i1 := ops.Add(b, args[0], ops.Full(b, ir.I64, 1))
			return ops.LessThan(b, i1, n), []*ir.Value{i1, h}
		})
		return ops.ReduceSum(b, out[1], nil, false)
	})
	c.trips = 16
	c.setTrips(t, 16)
	return c
}

func (c *case_) setTrips(t *testing.T, n int) {
	c.feed("x", randF32(t, rand.New(rand.NewPCG(5, uint64(n))), 1, n, 32, 48))
	v, _ := tensor.FromI64(host, []int64{int64(n)}, []int{}...)
	c.feed("n", v)
}

// The tapes of a "while": checkpoints every k trips, each segment
// recomputed in the backward; the same bits for any trip count (none, one,
// fewer than k, not a multiple of k, more than planned), within the budget
// for the planned count and below.
func TestFitWhile(t *testing.T) {
	c := loopCase(t)
	defer c.release()
	natural, err := c.plan(c.p)
	if err != nil {
		t.Fatal(err)
	}
	for _, frac := range []float64{0.5, 0.4} {
		budget := int64(frac * float64(natural.Peak))
		res := c.fit(t, budget)
		if len(res.Checkpointed) != 1 || res.Checkpointed[0].Every < 1 {
			t.Fatalf("at %.0f%%: checkpointed %+v", 100*frac, res.Checkpointed)
		}
		if n := loopScalarConstants(res.Program.Body(), false); n != 0 {
			t.Errorf("at %.0f%%: %d scalar constants made inside the loops, not hoisted", 100*frac, n)
		}
		for _, n := range []int{0, 1, 2, 3, 5, 16, 23} {
			c.setTrips(t, n)
			c.check(t, res, budget, n == 16)
		}
		c.setTrips(t, 16)
	}
}

// loopScalarConstants counts the 0-d "full" ops inside the "while" bodies
// under block b (inLoop: b is one).
func loopScalarConstants(b *ir.Block, inLoop bool) int {
	n := 0
	for _, op := range b.Ops() {
		if inLoop && op.Name() == "full" && op.Result(0).Type().Rank() == 0 {
			n++
		}
		for _, r := range op.Regions() {
			n += loopScalarConstants(r.Block(), inLoop || op.Name() == "while")
		}
	}
	return n
}

// Rematerialized steps give back every byte: many runs, and runs that run
// out of memory at every limit below the peak.
func TestRematerializedRunsReturnToBaseline(t *testing.T) {
	cases := map[string]*case_{"chain": chain(t, true), "if": ifCase(t), "while": loopCase(t), "split": convnet(t, false), "split through batch norms": bnnet(t)}
	b, _ := tensor.FromBool(host, []bool{true})
	bs, _ := b.Reshape()
	b.Release()
	cases["if"].feed("c", bs)
	frac := map[string]int64{"chain": 70, "if": 80, "while": 50, "split": 50, "split through batch norms": 41}
	for name, c := range cases {
		natural, err := c.plan(c.p)
		if err != nil {
			t.Fatal(err)
		}
		res := c.fit(t, natural.Peak*frac[name]/100)
		x := c.compile(t, res.Program, 0)
		base := x.Allocator().Stats().Allocated.Current
		for range 30 {
			c.run(t, x)
			if got := x.Allocator().Stats().Allocated.Current; got != base {
				t.Fatalf("%s: %d bytes allocated after a run, %d before", name, got, base)
			}
		}
		failed := 0
		for limit := base + 64; limit < res.Peak; limit += (res.Peak - base) / 13 {
			x := c.compile(t, res.Program, limit)
			base := x.Allocator().Stats().Allocated.Current
			res, err := x.Run(context.Background(), c.feeds)
			var oom *memory.ResourceExhausted
			if err == nil {
				res.Release()
			} else if !errors.As(err, &oom) {
				t.Fatalf("%s under %d bytes: %v", name, limit, err)
			} else {
				failed++
			}
			if got := x.Allocator().Stats().Allocated.Current; got != base {
				t.Fatalf("%s under %d bytes: %d bytes allocated after the run, %d before", name, limit, got, base)
			}
		}
		if failed == 0 {
			t.Fatalf("%s: no limit ran out of memory", name)
		}
		c.release()
	}
}
