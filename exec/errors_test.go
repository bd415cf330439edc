package exec_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Test-only ops: they fail, cancel or leak on demand.
var (
	cancelRun   atomic.Pointer[context.CancelFunc]
	leaked      []*tensor.Tensor
	errInjected = errors.New("injected kernel failure")
)

func sameAsFirst(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
	if len(in) == 0 {
		return nil, fmt.Errorf("needs an operand")
	}
	return []ir.Type{in[0]}, nil
}

// copyOf returns a fresh copy of x from c's allocator.
func copyOf(c *ops.Ctx, x *tensor.Tensor) (*tensor.Tensor, error) {
	y, err := tensor.New(c.Alloc, x.DType(), x.Shape()...)
	if err != nil {
		return nil, err
	}
	copy(y.Raw(), x.Raw())
	return y, nil
}

func init() {
	// test_fail_if (x, flag): a copy of x, or an error when flag is true.
	ops.Register(&ops.Def{Name: "test_fail_if", Infer: sameAsFirst, Bind: func(*ir.Op) (ops.Kernel, error) {
		return func(c *ops.Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			if in[1].Bool()[0] {
				return nil, errInjected
			}
			y, err := copyOf(c, in[0])
			return []*tensor.Tensor{y}, err
		}, nil
	}})
	// test_cancel (x): cancels the run's context, then copies x.
	ops.Register(&ops.Def{Name: "test_cancel", Infer: sameAsFirst, Bind: func(*ir.Op) (ops.Kernel, error) {
		return func(c *ops.Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			if f := cancelRun.Load(); f != nil {
				(*f)()
			}
			y, err := copyOf(c, in[0])
			return []*tensor.Tensor{y}, err
		}, nil
	}})
	// test_leak (x): a copy of x, and a second copy it keeps forever: the
	// kind of bug the leak check exists for.
	ops.Register(&ops.Def{Name: "test_leak", Infer: sameAsFirst, Bind: func(*ir.Op) (ops.Kernel, error) {
		return func(c *ops.Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			kept, err := copyOf(c, in[0])
			if err != nil {
				return nil, err
			}
			leaked = append(leaked, kept)
			y, err := copyOf(c, in[0])
			return []*tensor.Tensor{y}, err
		}, nil
	}})
}

// deepFailure fails (when fail is set) inside an if inside the third
// iteration of a while, with buffers alive at every level.
const deepFailure = `{
  (%x) = "data" () {name:"x", shape:[1000], dtype:f32} : () -> tensor<1000xf32>
  (%fail) = "data" () {name:"fail", shape:[], dtype:i1} : () -> tensor<i1>
  (%outer) = "relu" (%x) : (tensor<1000xf32>) -> tensor<1000xf32>
  (%i0) = "full" () {shape:[], value:0, dtype:i64} : () -> tensor<i64>
  (%n) = "full" () {shape:[], value:5, dtype:i64} : () -> tensor<i64>
  (%two) = "full" () {shape:[], value:2, dtype:i64} : () -> tensor<i64>
  (%one) = "full" () {shape:[], value:1, dtype:i64} : () -> tensor<i64>
  (%c0) = "less_than" (%i0, %n) : (tensor<i64>, tensor<i64>) -> tensor<i1>
  (%iN, %acc) = "while" (%c0, %i0, %outer) : (tensor<i1>, tensor<i64>, tensor<1000xf32>) -> (tensor<i64>, tensor<1000xf32>) {
  ^(%i: tensor<i64>, %a: tensor<1000xf32>):
    (%t) = "add" (%a, %outer) : (tensor<1000xf32>, tensor<1000xf32>) -> tensor<1000xf32>
    (%third) = "equal" (%i, %two) : (tensor<i64>, tensor<i64>) -> tensor<i1>
    (%r) = "if" (%third) : (tensor<i1>) -> tensor<1000xf32> {
      (%u) = "multiply" (%t, %t) : (tensor<1000xf32>, tensor<1000xf32>) -> tensor<1000xf32>
      (%v) = "test_fail_if" (%u, %fail) : (tensor<1000xf32>, tensor<i1>) -> tensor<1000xf32>
      () = "yield" (%v) : (tensor<1000xf32>) -> ()
    } else {
      () = "yield" (%t) : (tensor<1000xf32>) -> ()
    }
    (%i1) = "add" (%i, %one) : (tensor<i64>, tensor<i64>) -> tensor<i64>
    (%c1) = "less_than" (%i1, %n) : (tensor<i64>, tensor<i64>) -> tensor<i1>
    () = "yield" (%c1, %i1, %r) : (tensor<i1>, tensor<i64>, tensor<1000xf32>) -> ()
  }
  (%s) = "reduce_sum" (%acc) {axes:[], keepdim:false} : (tensor<1000xf32>) -> tensor<f32>
  () = "fetch" (%s) {name:"s"} : (tensor<f32>) -> ()
}`

func TestKernelErrorMidRunReleasesEverything(t *testing.T) {
	a := newAlloc()
	x := compile(t, deepFailure, exec.Options{Alloc: a, CheckLeaks: true})
	ok := feeds{"x": f32(t, ramp(1000), 1000), "fail": boolean(t, false)}
	bad := feeds{"x": ok["x"], "fail": boolean(t, true)}
	defer releaseFeeds(feeds{"x": ok["x"], "f": ok["fail"], "b": bad["fail"]})

	want := mustRun(t, x, ok)
	wantS := scalarOf(t, want, "s")
	want.Release()
	for i := range 20 {
		_, err := x.Run(context.Background(), bad)
		if !errors.Is(err, errInjected) {
			t.Fatalf("run %d: err = %v, want the injected error", i, err)
		}
		var opErr *exec.OpError
		if !errors.As(err, &opErr) || opErr.Op != "test_fail_if" || opErr.Pos.Line != 16 {
			t.Fatalf("error %v does not name test_fail_if at line 16", err)
		}
		if got := allocated(a); got != 0 {
			t.Fatalf("after the failed run %d bytes are allocated, want 0; live: %+v", got, a.Live())
		}
		res := mustRun(t, x, ok)
		if got := scalarOf(t, res, "s"); got != wantS {
			t.Fatalf("run after failure: s = %v, want %v", got, wantS)
		}
		res.Release()
	}
}

func TestOutOfMemoryMidRunReleasesEverything(t *testing.T) {
	// Each iteration of this loop holds a few 4000-byte buffers; a limit
	// that lets the first iterations through fails in the middle.
	ok := feeds{"x": f32(t, ramp(1000), 1000), "fail": boolean(t, false)}
	defer releaseFeeds(ok)
	free := newAlloc()
	x := compile(t, deepFailure, exec.Options{Alloc: free})
	res := mustRun(t, x, ok)
	res.Release()
	need := free.Stats().Allocated.Peak

	for limit := int64(64); limit < need; limit += 1024 {
		a := memory.New(memory.Options{Limit: limit, ChunkSize: 4096})
		x := compile(t, deepFailure, exec.Options{Alloc: a, CheckLeaks: true})
		_, err := x.Run(context.Background(), ok)
		var oom *memory.ResourceExhausted
		if !errors.As(err, &oom) {
			t.Fatalf("limit %d: err = %v, want ResourceExhausted", limit, err)
		}
		if !strings.Contains(err.Error(), "ResourceExhaustedError: Out of memory error on CPU 0.") {
			t.Fatalf("limit %d: message %q lacks the OOM text", limit, err)
		}
		if got := allocated(a); got != 0 {
			t.Fatalf("limit %d: %d bytes allocated after the OOM, want 0; live: %+v", limit, got, a.Live())
		}
	}
	// With room, the same allocator serves the next run.
	a := memory.New(memory.Options{Limit: need + 64*1024, ChunkSize: 4096})
	x = compile(t, deepFailure, exec.Options{Alloc: a})
	for range 3 {
		res := mustRun(t, x, ok)
		res.Release()
	}
}

func TestCancelledRunReleasesEverything(t *testing.T) {
	src := `{
  (%x) = "data" () {name:"x", shape:[100], dtype:f32} : () -> tensor<100xf32>
  (%i0) = "full" () {shape:[], value:0, dtype:i64} : () -> tensor<i64>
  (%n) = "full" () {shape:[], value:1000000, dtype:i64} : () -> tensor<i64>
  (%one) = "full" () {shape:[], value:1, dtype:i64} : () -> tensor<i64>
  (%c0) = "less_than" (%i0, %n) : (tensor<i64>, tensor<i64>) -> tensor<i1>
  (%iN, %acc) = "while" (%c0, %i0, %x) : (tensor<i1>, tensor<i64>, tensor<100xf32>) -> (tensor<i64>, tensor<100xf32>) {
  ^(%i: tensor<i64>, %a: tensor<100xf32>):
    (%t) = "test_cancel" (%a) : (tensor<100xf32>) -> tensor<100xf32>
    (%i1) = "add" (%i, %one) : (tensor<i64>, tensor<i64>) -> tensor<i64>
    (%c1) = "less_than" (%i1, %n) : (tensor<i64>, tensor<i64>) -> tensor<i1>
    () = "yield" (%c1, %i1, %t) : (tensor<i1>, tensor<i64>, tensor<100xf32>) -> ()
  }
  () = "fetch" (%acc) {name:"acc"} : (tensor<100xf32>) -> ()
}`
	a := newAlloc()
	x := compile(t, src, exec.Options{Alloc: a})
	in := feeds{"x": f32(t, ramp(100), 100)}
	defer releaseFeeds(in)
	ctx, cancel := context.WithCancel(context.Background())
	cancelRun.Store(&cancel)
	defer cancelRun.Store(nil)
	_, err := x.Run(ctx, in)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if got := allocated(a); got != 0 {
		t.Fatalf("%d bytes allocated after cancellation, want 0", got)
	}
}

// Cancellation stops a run before it writes the store, and never after:
// once an in-place update ran, the rest of the run runs too, so the store
// holds all of the run's updates or none.
func TestCancellationNeverSplitsWrites(t *testing.T) {
	for _, cancelFirst := range []bool{true, false} {
		// test_cancel cancels the run's context when it runs: before the
		// first increment, or between the two.
		inc1 := `  () = "increment" (%p) {by:1} : (tensor<i64>) -> ()`
		cancelOp := `  (%t) = "test_cancel" (%x) : (tensor<4xf32>) -> tensor<4xf32>`
		first, second := cancelOp, inc1
		if !cancelFirst {
			first, second = inc1, cancelOp
		}
		src := `{
  (%x) = "data" () {name:"x", shape:[4], dtype:f32} : () -> tensor<4xf32>
  (%p) = "parameter" () {name:"p", shape:[], dtype:i64} : () -> tensor<i64>
  (%q) = "parameter" () {name:"q", shape:[], dtype:i64} : () -> tensor<i64>
` + first + "\n" + second + `
  () = "increment" (%q) {by:1} : (tensor<i64>) -> ()
  () = "fetch" (%t) {name:"t"} : (tensor<4xf32>) -> ()
}`
		a := newAlloc()
		store := exec.NewStore()
		for _, n := range []string{"p", "q"} {
			v, _ := tensor.FromI64(a, []int64{0}, []int{}...)
			store.Set(n, v)
		}
		x := compile(t, src, exec.Options{Alloc: a, Store: store})
		in := feeds{"x": f32(t, ramp(4), 4)}
		ctx, cancel := context.WithCancel(context.Background())
		cancelRun.Store(&cancel)
		res, err := x.Run(ctx, in)
		cancelRun.Store(nil)
		p, _ := store.Get("p")
		q, _ := store.Get("q")
		if cancelFirst {
			if !errors.Is(err, context.Canceled) || p.I64()[0] != 0 || q.I64()[0] != 0 {
				t.Fatalf("cancelled before any write: err %v, p %d, q %d; want cancelled, 0, 0", err, p.I64()[0], q.I64()[0])
			}
		} else {
			if err != nil || p.I64()[0] != 1 || q.I64()[0] != 1 {
				t.Fatalf("cancelled after a write: err %v, p %d, q %d; want success, 1, 1", err, p.I64()[0], q.I64()[0])
			}
			res.Release()
		}
		releaseFeeds(in)
		store.Release()
		if got := allocated(a); got != 0 {
			t.Fatalf("%d bytes allocated, want 0", got)
		}
	}
}

func TestLeakCheckNamesTheSurvivingBuffer(t *testing.T) {
	src := `{
  (%x) = "data" () {name:"x", shape:[10], dtype:f32} : () -> tensor<10xf32>
  (%y) = "relu" (%x) : (tensor<10xf32>) -> tensor<10xf32>
  (%z) = "test_leak" (%y) : (tensor<10xf32>) -> tensor<10xf32>
  () = "fetch" (%z) {name:"z"} : (tensor<10xf32>) -> ()
}`
	a := newAlloc()
	x := compile(t, src, exec.Options{Alloc: a, CheckLeaks: true})
	in := feeds{"x": f32(t, ramp(10), 10)}
	defer releaseFeeds(in)
	_, err := x.Run(context.Background(), in)
	var leak *exec.LeakError
	if !errors.As(err, &leak) {
		t.Fatalf("err = %v, want a LeakError", err)
	}
	if len(leak.Buffers) != 1 {
		t.Fatalf("leak report lists %d buffers, want 1: %v", len(leak.Buffers), err)
	}
	for _, want := range []string{`%2 = "test_leak"`, "TestLeakCheckNamesTheSurvivingBuffer.pir:4:3", "40 bytes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("leak report %q does not mention %q", err, want)
		}
	}
	for _, k := range leaked {
		k.Release()
	}
	leaked = nil
	if got := allocated(a); got != 0 {
		t.Fatalf("%d bytes allocated after the failed run released its results", got)
	}
}

func TestFeedErrors(t *testing.T) {
	src := `{
  (%x) = "data" () {name:"x", shape:[-1,3], dtype:f32} : () -> tensor<?x3xf32>
  (%y) = "relu" (%x) : (tensor<?x3xf32>) -> tensor<?x3xf32>
  () = "fetch" (%y) {name:"y"} : (tensor<?x3xf32>) -> ()
}`
	x := compile(t, src, exec.Options{})
	good := f32(t, ramp(6), 2, 3)
	defer good.Release()
	wrongShape := f32(t, ramp(8), 2, 4)
	defer wrongShape.Release()
	wrongRank := f32(t, ramp(3), 3)
	defer wrongRank.Release()
	wrongType := i64(t, 1)
	defer wrongType.Release()
	cases := []struct {
		name  string
		feeds feeds
		want  string
	}{
		{"missing", feeds{}, `feed "x" is missing: the program expects tensor<?x3xf32>`},
		{"unknown", feeds{"x": good, "z": good}, `feed "z" is not an input of the program (inputs are [x])`},
		{"dtype", feeds{"x": wrongType}, `feed "x": dtype does not match; the program expects tensor<?x3xf32>, got tensor<i64>`},
		{"rank", feeds{"x": wrongRank}, `feed "x": rank does not match; the program expects tensor<?x3xf32>, got tensor<3xf32>`},
		{"shape", feeds{"x": wrongShape}, `feed "x": shape does not match; the program expects tensor<?x3xf32>, got tensor<2x4xf32>`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := x.Run(context.Background(), tc.feeds)
			var fe *exec.FeedError
			if !errors.As(err, &fe) || err.Error() != tc.want {
				t.Fatalf("err = %v\nwant %s", err, tc.want)
			}
		})
	}
	res, err := x.Run(context.Background(), feeds{"x": good})
	if err != nil {
		t.Fatal(err)
	}
	res.Release()
}

func TestMissingParameter(t *testing.T) {
	src := `{
  (%w) = "parameter" () {name:"w", shape:[3], dtype:f32} : () -> tensor<3xf32>
  () = "fetch" (%w) {name:"w"} : (tensor<3xf32>) -> ()
}`
	a := newAlloc()
	store := exec.NewStore()
	x := compile(t, src, exec.Options{Alloc: a, Store: store})
	_, err := x.Run(context.Background(), nil)
	var pe *exec.MissingParameterError
	if !errors.As(err, &pe) || pe.Name != "w" {
		t.Fatalf("err = %v, want a MissingParameterError for w", err)
	}
	w, _ := tensor.FromF32(a, []float32{1, 2, 3}, 3)
	store.Set("w", w)
	res := mustRun(t, x, nil)
	if res["w"].Storage() != w.Storage() {
		t.Errorf("fetching a parameter copied it; want it shared")
	}
	res.Release()
	if got, want := allocated(a), store.Bytes(); got != 64 || want != 12 {
		t.Errorf("allocated %d (want 64: one aligned block), store bytes %d (want 12)", got, want)
	}
	store.Release()
	if got := allocated(a); got != 0 {
		t.Errorf("%d bytes allocated after releasing the store", got)
	}
}
