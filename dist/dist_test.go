package dist_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/dist"
	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/nn"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/optim"
	"github.com/gopir/gopir/tensor"
)

// gatedNet is a three-layer network whose last layer is one of two,
// chosen by an if on the batch: the parameters of the layer a batch does
// not take get a gradient of zeros.
func gatedNet(t *testing.T, bucketBytes int64) (*ir.Program, *nn.Module, optim.State, []dist.Bucket, []*ir.Value) {
	t.Helper()
	b := ir.NewBuilder(ir.NewProgram())
	m := nn.NewModule(ir.F32, true)
	x := ops.Data(b, "x", ir.F32, -1, 8)
	y := ops.Data(b, "y", ir.F32, -1, 1)
	h := ops.Tanh(b, m.Linear(b, "fc1", x, 32))
	h = ops.Tanh(b, m.Linear(b, "fc2", h, 16))
	wa, wb := m.Param(b, "a.w", nn.XavierUniform{}, true, 16, 1, 16, 1), m.Param(b, "b.w", nn.XavierUniform{}, true, 16, 1, 16, 1)
	cond := ops.GreaterThan(b, ops.ReduceMean(b, x, nil, false), ops.Full(b, ir.F32, 0))
	out := b.If(cond,
		func(b *ir.Builder) []*ir.Value { return []*ir.Value{ops.Matmul(b, h, wa, false, false)} },
		func(b *ir.Builder) []*ir.Value { return []*ir.Value{ops.Matmul(b, h, wb, false, false)} })[0]
	loss := ops.ReduceMean(b, ops.Square(b, ops.Subtract(b, out, y)), nil, false)
	params := m.Trainable()
	grads, err := autodiff.Backward(b, loss, params)
	if err != nil {
		t.Fatal(err)
	}
	reduced, buckets, err := dist.ReduceGradients(b, params, grads, dist.Options{BucketBytes: bucketBytes})
	if err != nil {
		t.Fatal(err)
	}
	st, err := optim.NewAdam(0.01).Apply(b, params, reduced)
	if err != nil {
		t.Fatal(err)
	}
	ops.Fetch(b, "loss", ops.AllReduce(b, loss, true))
	prog, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return prog, m, st, buckets, grads
}

func TestReduceGradientsPlacement(t *testing.T) {
	for _, bytes := range []int64{-1, 600, 0} {
		prog, m, _, buckets, grads := gatedNet(t, bytes)
		top := prog.Body()
		seen := map[int]bool{}
		for k, bk := range buckets {
			last := -1
			for _, i := range bk.Grads {
				if seen[i] {
					t.Fatalf("gradient %d in two buckets", i)
				}
				seen[i] = true
				last = max(last, top.IndexOf(grads[i].Def()))
			}
			start, wait := top.IndexOf(bk.Start), top.IndexOf(bk.Wait)
			// Started right after its last gradient (or the previous start).
			if start != last+1 && (k == 0 || start != top.IndexOf(buckets[k-1].Start)+1) {
				t.Errorf("bucket size %d: bucket %d starts at %d, its last gradient is made at %d", bytes, k, start, last)
			}
			// Waited for after the whole backward and before every update.
			for i, op := range top.Ops() {
				if op.Name() == "adam_update" && i < wait {
					t.Errorf("bucket size %d: an update at %d comes before bucket %d's wait at %d", bytes, i, k, wait)
				}
			}
			if bytes > 0 && k < len(buckets)-1 && bk.Bytes < bytes {
				// Closed early only for a gradient of a bucket's size.
				g := grads[buckets[k+1].Grads[0]].Type()
				if size := int64(g.NumElements() * g.DType.Size()); size < bytes {
					t.Errorf("bucket %d holds %d bytes, closed before %d for a gradient of %d", k, bk.Bytes, bytes, size)
				}
			}
		}
		if len(seen) != len(m.Trainable()) {
			t.Errorf("%d of %d gradients reduced", len(seen), len(m.Trainable()))
		}
		switch bytes {
		case -1:
			if len(buckets) != len(grads) {
				t.Errorf("bucket size -1: %d buckets for %d gradients", len(buckets), len(grads))
			}
		case 0:
			if len(buckets) != 1 {
				t.Errorf("default bucket size: %d buckets, want one (the net is small)", len(buckets))
			}
		}
		// The first bucket starts before the backward is over: its
		// communication overlaps the rest of it.
		if len(buckets) > 1 && top.IndexOf(buckets[0].Start) > top.IndexOf(buckets[len(buckets)-1].Start)-2 {
			t.Errorf("bucket size %d: the first bucket starts at %d, the last at %d", bytes, top.IndexOf(buckets[0].Start), top.IndexOf(buckets[len(buckets)-1].Start))
		}
	}
}

func TestReduceGradientsErrors(t *testing.T) {
	b := ir.NewBuilder(ir.NewProgram())
	w := ops.Parameter(b, "w", ir.F32, 3)
	if _, _, err := dist.ReduceGradients(b, []*ir.Value{w}, nil, dist.Options{}); err == nil {
		t.Error("mismatched lists: no error")
	}
	var inner *ir.Builder
	b.If(ops.Full(b, ir.I1, 1), func(b *ir.Builder) []*ir.Value { inner = b; return nil }, func(b *ir.Builder) []*ir.Value { return nil })
	if _, _, err := dist.ReduceGradients(inner, []*ir.Value{w}, []*ir.Value{w}, dist.Options{}); err == nil || !strings.Contains(err.Error(), "top level") {
		t.Errorf("a builder inside a region: %v", err)
	}
	if _, _, err := dist.ReduceGradients(b, []*ir.Value{w}, []*ir.Value{ops.Cast(b, w, ir.I64)}, dist.Options{}); err == nil || !strings.Contains(err.Error(), "f32 or f64") {
		t.Errorf("an integer gradient: %v", err)
	}
	out, buckets, err := dist.ReduceGradients(b, []*ir.Value{w, w}, []*ir.Value{nil, ops.Neg(b, w)}, dist.Options{})
	if err != nil || out[0] != nil || out[1] == nil || len(buckets) != 1 {
		t.Errorf("a nil gradient: %v %v %v", out, buckets, err)
	}
}

// TestGatedNetOnRanks trains gatedNet on three in-process ranks whose
// batches take different branches, and checks that every rank's
// parameters stay identical and that memory is flat over the steps.
func TestGatedNetOnRanks(t *testing.T) {
	prog, m, st, _, _ := gatedNet(t, 600)
	stores, branches := trainGated(t, prog, m, st, 3, 30)
	if branches[0][0] == branches[1][0] {
		t.Fatal("the ranks took the same branch")
	}
	// The branch-only parameters moved: at every step some rank took
	// each branch, so the reduced gradients of both were not zero.
	init := exec.NewStore()
	if err := m.Create(memory.New(memory.Options{}), 7, init.Set); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a.w", "b.w"} {
		a, _ := stores[0].Get(name)
		b, _ := init.Get(name)
		if string(a.Raw()) == string(b.Raw()) {
			t.Errorf("%s did not move", name)
		}
	}
	init.Release()
	release(stores)
}

func release(stores []*exec.Store) {
	for _, s := range stores {
		s.Release()
	}
}

// trainGated trains gatedNet's prog for steps steps on n in-process ranks
// whose batches take different branches, checks that every rank's
// parameters stay identical and that memory is flat over the steps, and
// returns each rank's store and the branches it took.
func trainGated(t *testing.T, prog *ir.Program, m *nn.Module, st optim.State, n, steps int) ([]*exec.Store, [][]bool) {
	t.Helper()
	comms := dist.Local(n)
	stores := make([]*exec.Store, n)
	errs := make([]error, n)
	branches := make([][]bool, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = func() error {
				a := memory.New(memory.Options{})
				store := exec.NewStore()
				stores[r] = store
				if err := m.Create(a, 7, store.Set); err != nil {
					return err
				}
				if err := st.Create(a, store.Set); err != nil {
					return err
				}
				exe, err := exec.Compile(prog, exec.Options{Alloc: a, Store: store, Threads: 1, CheckLeaks: true, Comm: comms[r]})
				if err != nil {
					return err
				}
				base := a.Stats().Allocated.Current
				for s := range steps {
					xs, _ := tensor.New(a, tensor.F32, 4, 8)
					ys, _ := tensor.New(a, tensor.F32, 4, 1)
					sign := float32(1)
					if (s+r)%2 == 1 {
						sign = -1 // ranks disagree on the branch at every step
					}
					for i := range xs.F32() {
						xs.F32()[i] = sign * float32(i%5+r) / 7
					}
					for i := range ys.F32() {
						ys.F32()[i] = float32(i) - float32(r)
					}
					branches[r] = append(branches[r], sign > 0)
					res, err := exe.Run(context.Background(), map[string]*tensor.Tensor{"x": xs, "y": ys})
					xs.Release()
					ys.Release()
					if err != nil {
						return err
					}
					res.Release()
					if got := a.Stats().Allocated.Current; got != base {
						return fmt.Errorf("step %d: %d bytes allocated, %d before the first", s, got, base)
					}
				}
				return nil
			}()
			if errs[r] != nil {
				comms[r].Abort(1, errs[r])
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for _, name := range stores[0].Names() {
		a, _ := stores[0].Get(name)
		for r := 1; r < n; r++ {
			b, _ := stores[r].Get(name)
			if string(a.Raw()) != string(b.Raw()) {
				t.Fatalf("%s differs between rank 0 and rank %d", name, r)
			}
		}
	}
	return stores, branches
}

func TestLocalCollectives(t *testing.T) {
	comms := dist.Local(3)
	var wg sync.WaitGroup
	bufs := make([][]byte, 3)
	sums := make([][]float64, 3)
	errs := make([]error, 3)
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bufs[r] = []byte{byte(r), byte(r)}
			if errs[r] = comms[r].Broadcast(bufs[r], 1); errs[r] != nil {
				return
			}
			sums[r] = []float64{float64(r), 1}
			errs[r] = comms[r].AllReduceF64(sums[r])
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for r := range 3 {
		if bufs[r][0] != 1 || bufs[r][1] != 1 || sums[r][0] != 3 || sums[r][1] != 3 {
			t.Fatalf("rank %d: broadcast %v, sum %v", r, bufs[r], sums[r])
		}
	}
	// Calls that do not match fail on every rank.
	comms = dist.Local(2)
	errs = make([]error, 2)
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r == 0 {
				errs[r] = comms[r].Broadcast(make([]byte, 4), 0)
			} else {
				errs[r] = comms[r].AllReduceF64(make([]float64, 4))
			}
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "collective 0") {
			t.Errorf("rank %d: mismatched collectives: %v", r, err)
		}
	}
	if c := dist.Local(1)[0]; c.Size() != 1 || c.AllReduceF64([]float64{1}) != nil || c.Close() != nil {
		t.Error("a job of one rank")
	}
}

func TestEnvironment(t *testing.T) {
	for _, c := range []struct {
		rank, size string
		ok         bool
	}{{"1", "4", true}, {"", "", false}, {"4", "4", false}, {"x", "2", false}} {
		t.Setenv("OMPI_COMM_WORLD_RANK", c.rank)
		t.Setenv("OMPI_COMM_WORLD_SIZE", c.size)
		t.Setenv("PMI_RANK", "")
		t.Setenv("PMI_SIZE", "")
		if _, _, ok := dist.Environment(); ok != c.ok {
			t.Errorf("rank %q size %q: ok %v", c.rank, c.size, ok)
		}
	}
	t.Setenv("OMPI_COMM_WORLD_RANK", "0")
	t.Setenv("OMPI_COMM_WORLD_SIZE", "1")
	if c, err := dist.FromEnvironment(); c != nil || err != nil {
		t.Errorf("a job of one rank: %v %v", c, err)
	}
}

// TestOutOfMemoryOnOneRank: one rank runs out of memory in the middle of
// a step, after some of its gradient buckets were started: it aborts the
// job, the other ranks' collectives (in flight or to come) fail with an
// error naming it instead of waiting for it, and every rank gives back
// every byte of the failed step, the buckets in flight included.
func TestOutOfMemoryOnOneRank(t *testing.T) {
	prog, m, st, _, _ := gatedNet(t, 600)
	feeds := func(a *memory.Allocator) (map[string]*tensor.Tensor, error) {
		xs, err := tensor.New(a, tensor.F32, 4, 8)
		if err != nil {
			return nil, err
		}
		ys, err := tensor.New(a, tensor.F32, 4, 1)
		if err != nil {
			xs.Release()
			return nil, err
		}
		for i := range xs.F32() {
			xs.F32()[i] = float32(i%5+1) / 7
		}
		return map[string]*tensor.Tensor{"x": xs, "y": ys}, nil
	}
	// rank sets up a rank on an allocator of the given limit (0: none)
	// and runs one step; started counts the buckets it started.
	type outcome struct {
		err           error
		started       int
		base, after   int64
		setupFailed   bool
		allocatedLeft []memory.BlockInfo
	}
	rank := func(c dist.Comm, limit int64) (o outcome) {
		a := memory.New(memory.Options{Limit: limit, ChunkSize: 1 << 10})
		store := exec.NewStore()
		defer store.Release()
		if err := m.Create(a, 7, store.Set); err != nil {
			return outcome{err: err, setupFailed: true}
		}
		if err := st.Create(a, store.Set); err != nil {
			return outcome{err: err, setupFailed: true}
		}
		log := func(r exec.MemoryRecord) {
			if r.Op == "all_reduce_start" {
				o.started++
			}
		}
		exe, err := exec.Compile(prog, exec.Options{Alloc: a, Store: store, Threads: 1, CheckLeaks: true, Comm: c, MemoryLog: log})
		if err != nil {
			return outcome{err: err, setupFailed: true}
		}
		in, err := feeds(a)
		if err != nil {
			return outcome{err: err, setupFailed: true}
		}
		o.base = a.Stats().Allocated.Current
		res, err := exe.Run(context.Background(), in)
		if err == nil {
			res.Release()
		}
		o.err, o.after = err, a.Stats().Allocated.Current
		if o.after != o.base {
			o.allocatedLeft = a.Live()
		}
		for _, x := range in {
			x.Release()
		}
		return o
	}
	// The largest limit under which a step alone fails after starting a
	// bucket: the same step on rank 1 of three fails at the same point.
	full := rank(dist.Local(1)[0], 0)
	if full.err != nil || full.started < 2 {
		t.Fatalf("a step without a limit: %v, %d buckets", full.err, full.started)
	}
	var limit int64
	for l := int64(64 << 10); l > 0; l -= 256 {
		o := rank(dist.Local(1)[0], l)
		var oom *memory.ResourceExhausted
		if !o.setupFailed && errors.As(o.err, &oom) && o.started > 0 {
			limit = l
			break
		}
	}
	if limit == 0 {
		t.Fatal("no limit makes a step run out of memory after its first bucket")
	}
	const n = 3
	comms := dist.Local(n)
	outs := make([]outcome, n)
	done := make(chan struct{})
	go func() {
		var wg sync.WaitGroup
		for r := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l := int64(0)
				if r == 1 {
					l = limit
				}
				outs[r] = rank(comms[r], l)
				if outs[r].err != nil {
					comms[r].Abort(1, fmt.Errorf("rank %d: %w", r, outs[r].err))
				}
			}()
		}
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the ranks still wait 20 s after rank 1 ran out of memory")
	}
	var oom *memory.ResourceExhausted
	if !errors.As(outs[1].err, &oom) || outs[1].started == 0 {
		t.Fatalf("rank 1: %v after %d buckets, want out of memory after one", outs[1].err, outs[1].started)
	}
	for r, o := range outs {
		if r != 1 && (!errors.Is(o.err, dist.ErrAborted) || !strings.Contains(o.err.Error(), "rank 1")) {
			t.Errorf("rank %d: %v, want an error naming rank 1", r, o.err)
		}
		if o.after != o.base {
			t.Errorf("rank %d: %d bytes allocated after the failed step, %d before: %+v", r, o.after, o.base, o.allocatedLeft)
		}
	}
	t.Logf("limit %d: rank 1 failed after %d buckets: %v; rank 0: %v", limit, outs[1].started, outs[1].err, outs[0].err)
}
