package exec_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Test-only ops that panic on demand, the way a kernel with a bug would:
// each (x, flag) returns a copy of x, or when flag is true allocates
// buffers and then panics.
const injectedPanic = "injected kernel panic"

// allocThenPanic makes buffers through the context, as a kernel would on
// its way to a result (a tensor, a view of it, a zeroed workspace), and
// panics while holding them.
func allocThenPanic(c *ops.Ctx, x *tensor.Tensor) {
	y, err := c.New(ir.DType(x.DType()), x.Shape())
	if err != nil {
		panic(err)
	}
	if _, err := y.Reshape(y.Len()); err != nil {
		panic(err)
	}
	if _, err := c.Zeros(ir.F64, []int{3, 5}); err != nil {
		panic(err)
	}
	panic(injectedPanic)
}

func init() {
	// test_panic_if: panics on the run's goroutine.
	ops.Register(&ops.Def{Name: "test_panic_if", Infer: sameAsFirst, Bind: func(*ir.Op) (ops.Kernel, error) {
		return func(c *ops.Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			if in[1].Bool()[0] {
				allocThenPanic(c, in[0])
			}
			y, err := copyOf(c, in[0])
			return []*tensor.Tensor{y}, err
		}, nil
	}})
	// test_panic_owned_if: takes over operand 0 when it dies here (and
	// returns it as its result), and panics while it owns it.
	ops.Register(&ops.Def{Name: "test_panic_owned_if", Infer: sameAsFirst, Donate: []int{0}, Bind: func(*ir.Op) (ops.Kernel, error) {
		return func(c *ops.Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			if in[1].Bool()[0] {
				if !c.Owns(0) {
					panic("test_panic_owned_if: operand 0 was not donated; the test needs it to be")
				}
				allocThenPanic(c, in[0])
			}
			if c.Owns(0) {
				return []*tensor.Tensor{in[0]}, nil
			}
			y, err := copyOf(c, in[0])
			return []*tensor.Tensor{y}, err
		}, nil
	}})
	// test_panic_worker_if: panics on a helper goroutine of a parallel
	// loop, after allocating on the run's.
	ops.Register(&ops.Def{Name: "test_panic_worker_if", Infer: sameAsFirst, Bind: func(*ir.Op) (ops.Kernel, error) {
		return func(c *ops.Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			if in[1].Bool()[0] {
				w, err := c.New(ir.F32, []int{100})
				if err != nil {
					return nil, err
				}
				kernels.ParallelFor(2, 2, 1, func(lo, hi int) {
					if lo == 0 { // the range ParallelFor gives to a new goroutine
						panic(injectedPanic)
					}
				})
				w.Release()
			}
			y, err := copyOf(c, in[0])
			return []*tensor.Tensor{y}, err
		}, nil
	}})
}

// test_panic_broken (x): releases its operand, which it does not own, and
// panics: unwinding then finds the reference count broken.
func init() {
	ops.Register(&ops.Def{Name: "test_panic_broken", Infer: sameAsFirst, Bind: func(*ir.Op) (ops.Kernel, error) {
		return func(c *ops.Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			in[0].Release()
			panic(injectedPanic)
		}, nil
	}})
}

// TestKernelPanicWithBrokenRefcounts: the run still ends with the error,
// naming both panics, and its frames are empty for the next run.
func TestKernelPanicWithBrokenRefcounts(t *testing.T) {
	src := `{
  (%x) = "data" () {name:"x", shape:[4], dtype:f32} : () -> tensor<4xf32>
  (%a) = "exp" (%x) : (tensor<4xf32>) -> tensor<4xf32>
  (%b) = "test_panic_broken" (%a) : (tensor<4xf32>) -> tensor<4xf32>
  (%c) = "add" (%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  () = "fetch" (%c) {name:"c"} : (tensor<4xf32>) -> ()
}`
	a := newAlloc()
	x := compile(t, src, exec.Options{Alloc: a})
	in := feeds{"x": f32(t, []float32{1, 2, 3, 4}, 4)}
	defer releaseFeeds(in)
	for range 3 {
		_, err := x.Run(context.Background(), in)
		var kp *exec.KernelPanicError
		if !errors.As(err, &kp) || kp.Value != injectedPanic || kp.Unwinding == nil || !strings.Contains(err.Error(), "double release") {
			t.Fatalf("err = %v, want a KernelPanicError with the injected value and a double release while unwinding", err)
		}
		if got := allocated(a); got != 0 {
			t.Fatalf("%d bytes allocated after the panic; live: %+v", got, a.Live())
		}
	}
}

// TestKernelPanicIsAnErrorOfTheRun: a kernel that panics deep inside an if
// inside a while makes the run fail with a *KernelPanicError naming the op;
// every buffer is released (the frames, the operand the kernel owned, what
// it had allocated) and the next run succeeds.
func TestKernelPanicIsAnErrorOfTheRun(t *testing.T) {
	for _, op := range []string{"test_panic_if", "test_panic_owned_if", "test_panic_worker_if"} {
		t.Run(op, func(t *testing.T) {
			a := newAlloc()
			src := strings.Replace(deepFailure, `"test_fail_if"`, `"`+op+`"`, 1)
			x := compile(t, src, exec.Options{Alloc: a, CheckLeaks: true, Threads: 2})
			ok := feeds{"x": f32(t, ramp(1000), 1000), "fail": boolean(t, false)}
			bad := feeds{"x": ok["x"], "fail": boolean(t, true)}
			defer releaseFeeds(feeds{"x": ok["x"], "f": ok["fail"], "b": bad["fail"]})

			want := mustRun(t, x, ok)
			wantS := scalarOf(t, want, "s")
			want.Release()
			for i := range 50 {
				_, err := x.Run(context.Background(), bad)
				var kp *exec.KernelPanicError
				if !errors.As(err, &kp) {
					t.Fatalf("run %d: err = %v, want a *KernelPanicError", i, err)
				}
				if kp.Op != op || kp.Pos.Line != 16 || kp.Value != injectedPanic {
					t.Fatalf("run %d: %+v does not name %s at line 16 with the injected value", i, kp, op)
				}
				if !strings.Contains(kp.Stack, "allocThenPanic") && !strings.Contains(kp.Stack, "panic_test.go") {
					t.Fatalf("run %d: the stack does not show the kernel:\n%s", i, kp.Stack)
				}
				msg := err.Error()
				if !strings.Contains(msg, "bug in gopir") || !strings.Contains(msg, injectedPanic) || !strings.Contains(msg, op) {
					t.Fatalf("run %d: message %q", i, msg)
				}
				if got := allocated(a); got != 0 {
					t.Fatalf("run %d: after the panic %d bytes are allocated, want 0; live: %+v", i, got, a.Live())
				}
				res := mustRun(t, x, ok) // also passes the leak check
				if got := scalarOf(t, res, "s"); got != wantS {
					t.Fatalf("run %d after the panic: s = %v, want %v", i, got, wantS)
				}
				res.Release()
				if got := allocated(a); got != 0 {
					t.Fatalf("run %d: %d bytes allocated after a good run", i, got)
				}
			}
		})
	}
}

// TestKernelPanicAtTopLevel: the same at the top level, between live
// values, with and without donation.
func TestKernelPanicAtTopLevel(t *testing.T) {
	src := `{
  (%x) = "data" () {name:"x", shape:[4], dtype:f32} : () -> tensor<4xf32>
  (%f) = "data" () {name:"fail", shape:[], dtype:i1} : () -> tensor<i1>
  (%a) = "exp" (%x) : (tensor<4xf32>) -> tensor<4xf32>
  (%b) = "neg" (%x) : (tensor<4xf32>) -> tensor<4xf32>
  (%c) = "test_panic_owned_if" (%b, %f) : (tensor<4xf32>, tensor<i1>) -> tensor<4xf32>
  (%d) = "add" (%a, %c) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  () = "fetch" (%d) {name:"d"} : (tensor<4xf32>) -> ()
}`
	for _, noDonate := range []bool{false, true} {
		a := newAlloc()
		x := compile(t, src, exec.Options{Alloc: a, NoDonate: noDonate})
		in := feeds{"x": f32(t, []float32{1, 2, 3, 4}, 4), "fail": boolean(t, true)}
		for range 10 {
			_, err := x.Run(context.Background(), in)
			var kp *exec.KernelPanicError
			if !errors.As(err, &kp) || kp.Op != "test_panic_owned_if" {
				t.Fatalf("noDonate=%v: err = %v, want a KernelPanicError of test_panic_owned_if", noDonate, err)
			}
			if got := allocated(a); got != 0 {
				t.Fatalf("noDonate=%v: %d bytes allocated after the panic; live: %+v", noDonate, got, a.Live())
			}
		}
		releaseFeeds(in)
	}
}
