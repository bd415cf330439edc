package ops_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/dist"
	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// The collective ops run with in-process ranks (dist.Local): each rank is
// a goroutine compiling the same program with its own communicator.

// onRanks runs f(rank, comm) on n goroutines and returns their errors; a
// rank that fails aborts the job, as a real one would.
func onRanks(n int, f func(rank int, c dist.Comm) error) []error {
	comms := dist.Local(n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[r] = f(r, comms[r]); errs[r] != nil {
				comms[r].Abort(1, errs[r])
			}
		}()
	}
	wg.Wait()
	return errs
}

// collRun compiles prog with comm and runs it on feeds (made from vals
// by the rank), returning the fetches as float64s; memory must be back to
// its baseline afterwards, whatever happened.
func collRun(prog *ir.Program, comm ops.Communicator, feeds map[string][]float64, shapes map[string][]int, dt tensor.DType) (map[string][]float64, error) {
	a := memory.New(memory.Options{})
	exe, err := exec.Compile(prog, exec.Options{Alloc: a, Threads: 2, CheckLeaks: true, Comm: comm})
	if err != nil {
		return nil, err
	}
	in := map[string]*tensor.Tensor{}
	for n, v := range feeds {
		x, err := tensor.New(a, dt, shapes[n]...)
		if err != nil {
			return nil, err
		}
		for i, f := range v {
			if dt == tensor.F32 {
				x.F32()[i] = float32(f)
			} else {
				x.F64()[i] = f
			}
		}
		in[n] = x
	}
	res, err := exe.Run(context.Background(), in)
	out := map[string][]float64{}
	if err == nil {
		for n, t := range res {
			vals := make([]float64, t.Len())
			for i := range vals {
				vals[i] = t.Float64At(i)
			}
			out[n] = vals
		}
		res.Release()
	}
	for _, t := range in {
		t.Release()
	}
	if got := a.Stats().Allocated.Current; got != 0 {
		return nil, fmt.Errorf("%d bytes allocated after the run (error %v): %+v", got, err, a.Live())
	}
	return out, err
}

func TestCollectiveAllReduce(t *testing.T) {
	for _, dt := range []ir.DType{ir.F32, ir.F64} {
		for _, mean := range []bool{false, true} {
			const n = 3
			b := ir.NewBuilder(ir.NewProgram())
			x := ops.Data(b, "x", dt, 2, 3)
			ops.Fetch(b, "y", ops.AllReduce(b, x, mean))
			prog, err := b.Finish()
			if err != nil {
				t.Fatal(err)
			}
			outs := make([]map[string][]float64, n)
			errs := onRanks(n, func(r int, c dist.Comm) error {
				vals := make([]float64, 6)
				for i := range vals {
					vals[i] = float64((r + 1) * (i + 1))
				}
				var err error
				outs[r], err = collRun(prog, c, map[string][]float64{"x": vals}, map[string][]int{"x": {2, 3}}, tensor.DType(dt))
				return err
			})
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			for r := range n {
				for i, v := range outs[r]["y"] {
					want := float64(6 * (i + 1)) // (1+2+3)·(i+1)
					if mean {
						want /= n
					}
					if math.Abs(v-want) > 1e-6 {
						t.Fatalf("%s mean %v: rank %d: y[%d] = %v, want %v", dt, mean, r, i, v, want)
					}
				}
			}
		}
	}
}

// bucketProgram starts one bucket of three values of the given shapes and
// waits for it, fetching the parts.
func bucketProgram(t *testing.T, dt ir.DType, mean bool, shapes ...[]int) *ir.Program {
	t.Helper()
	b := ir.NewBuilder(ir.NewProgram())
	var xs []*ir.Value
	var types []ir.Type
	for i, s := range shapes {
		xs = append(xs, ops.Data(b, fmt.Sprintf("x%d", i), dt, s...))
		types = append(types, ir.TensorOf(dt, s...))
	}
	bucket := ops.AllReduceStart(b, xs...)
	// Work between the start and the wait, as the rest of a backward.
	ops.Fetch(b, "busy", ops.ReduceSum(b, ops.Multiply(b, xs[0], xs[0]), nil, false))
	for i, r := range ops.AllReduceWait(b, bucket, types, mean) {
		ops.Fetch(b, fmt.Sprintf("r%d", i), r)
	}
	p, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCollectiveBuckets(t *testing.T) {
	for _, shapes := range [][][]int{{{2, 3}, {4}, {}}, {{5, 2}}} {
		for _, dt := range []ir.DType{ir.F32, ir.F64} {
			const n = 2
			prog := bucketProgram(t, dt, true, shapes...)
			outs := make([]map[string][]float64, n)
			errs := onRanks(n, func(r int, c dist.Comm) error {
				feeds, sh := map[string][]float64{}, map[string][]int{}
				for i, s := range shapes {
					k := 1
					for _, d := range s {
						k *= d
					}
					v := make([]float64, k)
					for j := range v {
						v[j] = float64(10*i+j) + float64(r)
					}
					name := fmt.Sprintf("x%d", i)
					feeds[name], sh[name] = v, s
				}
				var err error
				outs[r], err = collRun(prog, c, feeds, sh, tensor.DType(dt))
				return err
			})
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			for r := range n {
				for i := range shapes {
					for j, v := range outs[r][fmt.Sprintf("r%d", i)] {
						if want := float64(10*i+j) + 0.5; v != want { // mean of +0 and +1
							t.Fatalf("%v %s: rank %d part %d [%d] = %v, want %v", shapes, dt, r, i, j, v, want)
						}
					}
				}
			}
		}
	}
}

// typesAttr is all_reduce_wait's types attribute.
func typesAttr(ts ...ir.Type) ir.Attrs {
	l := make(ir.List, len(ts))
	for i, t := range ts {
		l[i] = ir.TypeAttr{Type: t}
	}
	return ir.Attrs{{Name: "types", Value: l}}
}

func TestCollectiveInferAndVerify(t *testing.T) {
	f32, f64, i64 := ir.TensorOf(ir.F32, 2, 3), ir.TensorOf(ir.F64, 4), ir.TensorOf(ir.I64, 2)
	for _, c := range []struct {
		name  string
		attrs ir.Attrs
		in    []ir.Type
		want  string
	}{
		{"all_reduce", nil, []ir.Type{i64}, "must be an f32 or f64 tensor"},
		{"all_reduce", nil, []ir.Type{f32, f32}, "takes 1 operands"},
		{"all_reduce", ir.A("mean", 1), []ir.Type{f32}, "mean"},
		{"all_reduce_start", nil, nil, "at least one operand"},
		{"all_reduce_start", nil, []ir.Type{f32, f64}, "a bucket holds one dtype"},
		{"all_reduce_start", nil, []ir.Type{i64}, "must be an f32 or f64 tensor"},
		{"all_reduce_wait", typesAttr(ir.TensorOf(ir.F32, 7)), []ir.Type{ir.TensorOf(ir.F32, 6)}, "holds 6 elements, the types add up to 7"},
		{"all_reduce_wait", typesAttr(ir.TensorOf(ir.F64, 6)), []ir.Type{ir.TensorOf(ir.F32, 6)}, "the bucket"},
		{"all_reduce_wait", typesAttr(ir.TensorOf(ir.F32, -1)), []ir.Type{ir.TensorOf(ir.F32, 6)}, "static tensor type"},
		{"all_reduce_wait", ir.A("types", []int{6}), []ir.Type{ir.TensorOf(ir.F32, 6)}, "static tensor type"},
		{"all_reduce_wait", nil, []ir.Type{ir.TensorOf(ir.F32, 6)}, "list of tensor types"},
		{"all_reduce_wait", typesAttr(ir.TensorOf(ir.F32, 3), ir.TensorOf(ir.F32, 3)), []ir.Type{ir.TensorOf(ir.F32, 2, 3)}, "of 2 parts must be 1-D"},
		{"all_reduce_wait", typesAttr(ir.TensorOf(ir.F32, 5)), []ir.Type{ir.TensorOf(ir.F32, 2, 3)}, "holds 6 elements, the types add up to 5"},
	} {
		_, err := buildOp(t, c.name, c.attrs, c.in...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v %v: error %v, want one containing %q", c.name, c.attrs, c.in, err, c.want)
		}
	}
	// The verifier pairs each start with exactly one wait.
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F32, 6)
	ops.AllReduceWait(b, ops.Relu(b, x), []ir.Type{ir.TensorOf(ir.F32, 6)}, false)
	if _, err := b.Finish(); err == nil || !strings.Contains(err.Error(), "all_reduce_start") {
		t.Errorf("a wait on a value that is no bucket: %v", err)
	}
	for _, uses := range []int{0, 2} {
		b := ir.NewBuilder(ir.NewProgram())
		x := ops.Data(b, "x", ir.F32, 6)
		bucket := ops.AllReduceStart(b, x)
		for range uses {
			ops.AllReduceWait(b, bucket, []ir.Type{ir.TensorOf(ir.F32, 6)}, false)
		}
		if _, err := b.Finish(); err == nil || !strings.Contains(err.Error(), "used once") {
			t.Errorf("a bucket waited for %d times: %v", uses, err)
		}
	}
	// Not differentiable: the bucketing comes after the backward pass.
	b = ir.NewBuilder(ir.NewProgram())
	w := ops.Parameter(b, "w", ir.F32, 6)
	r := ops.AllReduceWait(b, ops.AllReduceStart(b, w), []ir.Type{ir.TensorOf(ir.F32, 6)}, true)
	if _, err := autodiff.Backward(b, ops.ReduceSum(b, r[0], nil, false), []*ir.Value{w}); err == nil || !strings.Contains(err.Error(), "cannot be differentiated") {
		t.Errorf("differentiating through a bucket: %v", err)
	}
}

func TestCollectiveRunErrors(t *testing.T) {
	prog := bucketProgram(t, ir.F32, true, []int{2, 3}, []int{4})
	feeds := map[string][]float64{"x0": make([]float64, 6), "x1": make([]float64, 4)}
	shapes := map[string][]int{"x0": {2, 3}, "x1": {4}}
	// Without a communicator.
	if _, err := collRun(prog, nil, feeds, shapes, tensor.F32); err == nil || !strings.Contains(err.Error(), "no communicator") {
		t.Errorf("no communicator: %v", err)
	}
	// Ranks whose buckets differ in size: every rank fails, none hangs.
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F32, -1)
	ops.Fetch(b, "y", ops.AllReduce(b, x, false))
	dyn, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	errs := onRanks(2, func(r int, c dist.Comm) error {
		_, err := collRun(dyn, c, map[string][]float64{"x": make([]float64, 3+r)}, map[string][]int{"x": {3 + r}}, tensor.F32)
		return err
	})
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "elements on rank") {
			t.Errorf("rank %d with mismatched sizes: %v", r, err)
		}
	}
	// A rank that aborts: the others' collectives fail with its name.
	errs = onRanks(3, func(r int, c dist.Comm) error {
		if r == 2 {
			c.Abort(1, errors.New("injected failure"))
			return nil
		}
		_, err := collRun(prog, c, feeds, shapes, tensor.F32)
		return err
	})
	for r := range 2 {
		if !errors.Is(errs[r], dist.ErrAborted) || !strings.Contains(errs[r].Error(), "rank 2") {
			t.Errorf("rank %d after rank 2 aborted: %v", r, errs[r])
		}
	}
}

// TestCollectiveMemory runs a bucket many times, some runs failing
// between the start and the wait (an index out of range on every rank)
// or under a memory limit: after each run, failed or not, every byte is
// back, and a failed run's bucket was waited for before it was freed.
func TestCollectiveMemory(t *testing.T) {
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F32, 64, 8)
	idx := ops.Data(b, "idx", ir.I64, 2)
	bucket := ops.AllReduceStart(b, x, ops.Relu(b, x))
	// Buckets of one gradient: one that dies there (the bucket takes its
	// buffer over) and one read again after the start (copied).
	solo := ops.AllReduceStart(b, ops.Scale(b, x, 2, 0))
	sq := ops.Square(b, x)
	shared := ops.AllReduceStart(b, sq)
	ops.Fetch(b, "picked", ops.Gather(b, x, idx, 0))
	parts := ops.AllReduceWait(b, bucket, []ir.Type{ir.TensorOf(ir.F32, 64, 8), ir.TensorOf(ir.F32, 64, 8)}, true)
	ops.Fetch(b, "sum", ops.AllReduce(b, ops.ReduceSum(b, ops.Add(b, parts[0], parts[1]), nil, false), false))
	ops.Fetch(b, "solo", ops.ReduceSum(b, ops.AllReduceWait(b, solo, []ir.Type{ir.TensorOf(ir.F32, 64, 8)}, true)[0], nil, false))
	ops.Fetch(b, "shared", ops.ReduceSum(b, ops.Add(b, ops.AllReduceWait(b, shared, []ir.Type{ir.TensorOf(ir.F32, 512)}, false)[0], ops.Reshape(b, sq, 512)), nil, false))
	prog, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	const n, runs = 2, 60
	var mu sync.Mutex
	kinds := map[string]int{}
	errs := onRanks(n, func(r int, c dist.Comm) error {
		for run := range runs {
			limit := int64(0)
			if run%5 == 4 {
				limit = int64(1024 * (run % 9)) // fails somewhere; the same on every rank
			}
			a := memory.New(memory.Options{Limit: limit, ChunkSize: 1 << 12})
			host := memory.New(memory.Options{})
			exe, err := exec.Compile(prog, exec.Options{Alloc: a, Threads: 1, CheckLeaks: true, Comm: c})
			if err != nil {
				return err
			}
			xs, _ := tensor.New(host, tensor.F32, 64, 8)
			for i := range xs.F32() {
				xs.F32()[i] = float32(i%7) - 3
			}
			bad := int64(0)
			if run%3 == 1 {
				bad = 1000 // out of range: fails after the start
			}
			is, _ := tensor.FromI64(host, []int64{1, bad}, 2)
			res, err := exe.Run(context.Background(), map[string]*tensor.Tensor{"x": xs, "idx": is})
			var oom *memory.ResourceExhausted
			mu.Lock()
			switch {
			case err == nil:
				kinds["ok"]++
			case errors.As(err, &oom):
				kinds["oom"]++
			default:
				kinds["error"]++
			}
			mu.Unlock()
			switch {
			case err == nil:
				if got, want := res["sum"].Float64At(0), 2*float64(sumRelu(xs)+sumAll(xs)); got != want {
					return fmt.Errorf("run %d: sum %v, want %v", run, got, want)
				}
				if got, want := res["solo"].Float64At(0), 2*float64(sumAll(xs)); got != want {
					return fmt.Errorf("run %d: solo %v, want %v", run, got, want)
				}
				if got, want := res["shared"].Float64At(0), 3*float64(sumSquares(xs)); got != want {
					return fmt.Errorf("run %d: shared %v, want %v", run, got, want)
				}
				res.Release()
			case bad != 0 && strings.Contains(err.Error(), "gather"), limit > 0 && errors.As(err, &oom):
			default:
				return fmt.Errorf("run %d: %w", run, err)
			}
			xs.Release()
			is.Release()
			// Every rank fails at the same point (the same program,
			// data and limit), so the ranks' collectives stay in step.
			if got := a.Stats().Allocated.Current; got != 0 {
				return fmt.Errorf("run %d (error %v): %d bytes left: %+v", run, err, got, a.Live())
			}
		}
		return nil
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if kinds["ok"] == 0 || kinds["oom"] == 0 || kinds["error"] == 0 {
		t.Fatalf("runs: %v; want some to succeed, some to run out of memory and some to fail between start and wait", kinds)
	}
	t.Logf("runs: %v", kinds)
}

func sumAll(x *tensor.Tensor) float32 {
	var s float32
	for _, v := range x.F32() {
		s += v
	}
	return s
}

func sumSquares(x *tensor.Tensor) float32 {
	var s float32
	for _, v := range x.F32() {
		s += v * v
	}
	return s
}

func sumRelu(x *tensor.Tensor) float32 {
	var s float32
	for _, v := range x.F32() {
		s += max(v, 0)
	}
	return s
}

// TestCollectiveAllReduceGradient: y = Σ_ranks x·w, loss_r = Σ y. The
// gradient of Σ_r loss_r with respect to w on rank r is, through the
// all_reduce of the cotangents, N·Σ x_r (every rank's loss depends on x_r).
func TestCollectiveAllReduceGradient(t *testing.T) {
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F64, 3)
	w := ops.Parameter(b, "w", ir.F64, 3)
	loss := ops.ReduceSum(b, ops.AllReduce(b, ops.Multiply(b, x, w), false), nil, false)
	g, err := autodiff.Backward(b, loss, []*ir.Value{w})
	if err != nil {
		t.Fatal(err)
	}
	ops.Fetch(b, "g", g[0])
	prog, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	const n = 3
	outs := make([][]float64, n)
	errs := onRanks(n, func(r int, c dist.Comm) error {
		a := memory.New(memory.Options{})
		store := exec.NewStore()
		defer store.Release()
		wt, _ := tensor.FromF64(a, []float64{1, 2, 3}, 3)
		store.Set("w", wt)
		exe, err := exec.Compile(prog, exec.Options{Alloc: a, Store: store, CheckLeaks: true, Comm: c})
		if err != nil {
			return err
		}
		xs, _ := tensor.FromF64(a, []float64{float64(r), 1, -float64(r)}, 3)
		defer xs.Release()
		res, err := exe.Run(context.Background(), map[string]*tensor.Tensor{"x": xs})
		if err != nil {
			return err
		}
		outs[r] = append([]float64(nil), res["g"].F64()...)
		res.Release()
		return nil
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for r := range n {
		want := []float64{n * float64(r), n, -n * float64(r)}
		for i := range want {
			if outs[r][i] != want[i] {
				t.Fatalf("rank %d: gradient %v, want %v", r, outs[r], want)
			}
		}
	}
}

// TestSyncBatchNorm: two ranks with half a batch each normalise, update
// the running statistics and differentiate as one process with the whole
// batch does; each rank's dscale and dbias are its part of the whole's.
func TestSyncBatchNorm(t *testing.T) {
	const n, half, ch, hw = 2, 3, 4, 5
	build := func(sync bool, batch int) *ir.Program {
		b := ir.NewBuilder(ir.NewProgram())
		x := ops.Data(b, "x", ir.F64, batch, ch, hw)
		dy := ops.Data(b, "dy", ir.F64, batch, ch, hw)
		p := func(name string) *ir.Value { return ops.Data(b, name, ir.F64, ch) }
		scale, bias, rm, rv := p("scale"), p("bias"), p("rm"), p("rv")
		attrs := ir.A("training", true)
		if sync {
			attrs = ir.A("training", true, "sync", true)
		}
		bn := b.Op("batch_norm", attrs, x, scale, bias, rm, rv)
		g := b.Op("batch_norm_grad", attrs, dy, x, scale, bn.Result(3), bn.Result(4))
		for i, name := range []string{"y", "rm_out", "rv_out", "mean", "inv_std"} {
			ops.Fetch(b, name, bn.Result(i))
		}
		for i, name := range []string{"dx", "dscale", "dbias"} {
			ops.Fetch(b, name, g.Result(i))
		}
		prog, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		return prog
	}
	whole := make([]float64, n*half*ch*hw)
	dys := make([]float64, len(whole))
	for i := range whole {
		whole[i] = math.Sin(float64(i)) * float64(1+i%3)
		dys[i] = math.Cos(float64(3 * i))
	}
	chans := func(v float64) []float64 { return []float64{v, v + 0.5, v - 0.25, 2 * v} }
	feeds := func(x, dy []float64, batch int) (map[string][]float64, map[string][]int) {
		return map[string][]float64{"x": x, "dy": dy, "scale": chans(1.5), "bias": chans(0.1), "rm": chans(0.2), "rv": chans(1)},
			map[string][]int{"x": {batch, ch, hw}, "dy": {batch, ch, hw}, "scale": {ch}, "bias": {ch}, "rm": {ch}, "rv": {ch}}
	}
	fw, sw := feeds(whole, dys, n*half)
	want, err := collRun(build(false, n*half), nil, fw, sw, tensor.F64)
	if err != nil {
		t.Fatal(err)
	}
	outs := make([]map[string][]float64, n)
	prog := build(true, half)
	errs := onRanks(n, func(r int, c dist.Comm) error {
		k := half * ch * hw
		f, s := feeds(whole[r*k:(r+1)*k], dys[r*k:(r+1)*k], half)
		var err error
		outs[r], err = collRun(prog, c, f, s, tensor.F64)
		return err
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
			t.Fatalf("%s: %v, want %v", what, got, want)
		}
	}
	k := half * ch * hw
	for r := range n {
		for _, name := range []string{"y", "dx"} {
			for i, v := range outs[r][name] {
				near(fmt.Sprintf("rank %d %s[%d]", r, name, i), v, want[name][r*k+i])
			}
		}
		for _, name := range []string{"rm_out", "rv_out", "mean", "inv_std"} {
			for i, v := range outs[r][name] {
				near(fmt.Sprintf("rank %d %s[%d]", r, name, i), v, want[name][i])
			}
		}
	}
	for _, name := range []string{"dscale", "dbias"} {
		for i := range ch {
			near(name, outs[0][name][i]+outs[1][name][i], want[name][i])
		}
	}
	// Without a communicator, sync is an error, not a silent local norm.
	fh, sh := feeds(whole[:k], dys[:k], half)
	if _, err := collRun(prog, nil, fh, sh, tensor.F64); err == nil || !strings.Contains(err.Error(), "no communicator") {
		t.Errorf("sync without a communicator: %v", err)
	}
}

// testedComm counts the Test calls on its requests.
type testedComm struct {
	dist.Comm
	tests *int
}

type testedReq struct {
	ops.Request
	tests *int
}

func (q testedReq) Test() (bool, error) { *q.tests++; return false, nil }

func (c testedComm) StartAllReduceF32(buf []float32) (ops.Request, error) {
	r, err := c.Comm.StartAllReduceF32(buf)
	return testedReq{r, c.tests}, err
}

// TestCollectiveProgress: while a bucket is in flight the executor tests
// it after every instruction, so that MPI moves it forward during the
// rest of the backward pass; with none in flight it does not.
func TestCollectiveProgress(t *testing.T) {
	prog := bucketProgram(t, ir.F32, true, []int{2, 3})
	tests := 0
	c := testedComm{dist.Local(1)[0], &tests}
	if _, err := collRun(prog, c, map[string][]float64{"x0": make([]float64, 6)}, map[string][]int{"x0": {2, 3}}, tensor.F32); err != nil {
		t.Fatal(err)
	}
	// Between the start and the wait: the start itself, the multiply, the
	// sum and the fetch.
	if tests != 4 {
		t.Fatalf("%d tests of the bucket in flight, want 4", tests)
	}
}

// TestCollectiveBucketInPlace: a gradient big enough for a bucket of its
// own becomes the bucket and the result without a copy, so the peak is
// that of the gradient alone; a shared operand (a feed) is copied.
func TestCollectiveBucketInPlace(t *testing.T) {
	const n = 1024
	for _, own := range []bool{true, false} {
		b := ir.NewBuilder(ir.NewProgram())
		x := ops.Data(b, "x", ir.F32, n)
		g := x
		if own {
			g = ops.Relu(b, x) // dies at the start, unshared
		}
		r := ops.AllReduceWait(b, ops.AllReduceStart(b, g), []ir.Type{ir.TensorOf(ir.F32, n)}, true)
		ops.Fetch(b, "r", r[0])
		prog, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		a := memory.New(memory.Options{})
		exe, err := exec.Compile(prog, exec.Options{Alloc: a, CheckLeaks: true, Comm: dist.Local(1)[0]})
		if err != nil {
			t.Fatal(err)
		}
		xs, _ := tensor.New(memory.New(memory.Options{}), tensor.F32, n)
		for i := range xs.F32() {
			xs.F32()[i] = float32(i%5) - 2
		}
		res, err := exe.Run(context.Background(), map[string]*tensor.Tensor{"x": xs})
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range res["r"].F32() {
			want := xs.F32()[i]
			if own {
				want = max(want, 0)
			}
			if v != want {
				t.Fatalf("own %v: r[%d] = %v, want %v", own, i, v, want)
			}
		}
		res.Release()
		xs.Release()
		if peak := a.Stats().Allocated.Peak; peak != 4*n {
			t.Errorf("own %v: peak %d bytes, want %d (one buffer: no copy in the start or the wait)", own, peak, 4*n)
		}
		// The planner sees the same: the bucket is the gradient, the
		// result a view of the bucket.
		if p, err := exe.Plan(exec.PlanOptions{}); err != nil || p.Peak != 4*n {
			t.Errorf("own %v: planned %+v, %v; want a peak of %d", own, p, err, 4*n)
		}
		wantAllocated(t, a, 0)
	}
}
