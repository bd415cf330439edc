package ops_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// The harness runs single ops outside the executor: it builds a program
// with one "data" per input and the op under test, binds its kernel and
// calls it. Tests of every op family share it.

// buildOp returns the op under test, with inputs of the given types.
func buildOp(t testing.TB, name string, attrs ir.Attrs, in ...ir.Type) (*ir.Op, error) {
	t.Helper()
	b := ir.NewBuilder(ir.NewProgram())
	vals := make([]*ir.Value, len(in))
	for i, typ := range in {
		vals[i] = ops.Data(b, "x"+string(rune('0'+i)), typ.DType, typ.Dims...)
	}
	op := b.Op(name, attrs, vals...)
	return op, b.Err()
}

// runOp builds the op for the inputs' exact shapes, runs its kernel with
// allocator a and returns the results, which the caller releases.
func runOp(t testing.TB, a *memory.Allocator, name string, attrs ir.Attrs, in ...*tensor.Tensor) ([]*tensor.Tensor, error) {
	t.Helper()
	types := make([]ir.Type, len(in))
	for i, x := range in {
		types[i] = ir.TensorOf(ir.DType(x.DType()), x.Shape()...)
	}
	op, err := buildOp(t, name, attrs, types...)
	if err != nil {
		return nil, err
	}
	k, err := ops.Bind(op)
	if err != nil {
		return nil, err
	}
	c := &ops.Ctx{Alloc: a, Threads: 2, Seed: 1}
	outs, err := k(c, in)
	if err != nil {
		return nil, err
	}
	for i, o := range outs {
		want := op.Result(i).Type()
		if ir.DType(o.DType()) != want.DType || o.Rank() != want.Rank() {
			t.Fatalf("%s: result %d is %v, op type says %s", name, i, o, want)
		}
	}
	return outs, nil
}

// mustRun is runOp that fails the test on error.
func mustRun(t testing.TB, a *memory.Allocator, name string, attrs ir.Attrs, in ...*tensor.Tensor) []*tensor.Tensor {
	t.Helper()
	outs, err := runOp(t, a, name, attrs, in...)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return outs
}

func release(ts ...*tensor.Tensor) {
	for _, t := range ts {
		t.Release()
	}
}

// wantAllocated fails the test unless a's allocated bytes are n.
func wantAllocated(t testing.TB, a *memory.Allocator, n int64) {
	t.Helper()
	if got := a.Stats().Allocated.Current; got != n {
		t.Fatalf("allocated bytes = %d, want %d; live: %+v", got, n, a.Live())
	}
}

// checkOOMSweep runs the op under capacity limits from 0 up to what it
// needs and asserts that each attempt either succeeds or fails with
// *memory.ResourceExhausted, and that nothing stays allocated afterwards
// beyond the inputs.
func checkOOMSweep(t *testing.T, name string, attrs ir.Attrs, in ...*tensor.Tensor) {
	t.Helper()
	var inBytes int64
	for _, x := range in {
		inBytes += x.Bytes()
	}
	big := memory.New(memory.Options{ChunkSize: 1 << 16})
	// Limit 0 means no limit, so the sweep starts at one aligned block.
	for limit := int64(64); ; limit += 64 {
		a := memory.New(memory.Options{Limit: limit, ChunkSize: 64})
		copies := make([]*tensor.Tensor, len(in))
		for i, x := range in {
			copies[i] = cloneTo(t, big, x)
		}
		outs, err := runOp(t, a, name, attrs, copies...)
		release(copies...)
		if err == nil {
			release(outs...)
			wantAllocated(t, a, 0)
			return
		}
		var oom *memory.ResourceExhausted
		if !errors.As(err, &oom) {
			t.Fatalf("%s under limit %d: %v, want ResourceExhausted", name, limit, err)
		}
		wantAllocated(t, a, 0)
		if limit > 1<<30 {
			t.Fatalf("%s never succeeded", name)
		}
	}
}

func cloneTo(t testing.TB, a *memory.Allocator, x *tensor.Tensor) *tensor.Tensor {
	t.Helper()
	c, err := tensor.New(a, x.DType(), x.Shape()...)
	if err != nil {
		t.Fatal(err)
	}
	copy(c.Raw(), x.Raw())
	return c
}

// randTensor returns a tensor of random values: floats in [-2, 2), ints in
// [-5, 5), bools at random.
func randTensor(t testing.TB, a *memory.Allocator, r *rand.Rand, dt tensor.DType, shape ...int) *tensor.Tensor {
	t.Helper()
	x, err := tensor.New(a, dt, shape...)
	if err != nil {
		t.Fatal(err)
	}
	switch dt {
	case tensor.F32:
		for i := range x.F32() {
			x.F32()[i] = float32(r.Float64()*4 - 2)
		}
	case tensor.F64:
		for i := range x.F64() {
			x.F64()[i] = r.Float64()*4 - 2
		}
	case tensor.I32:
		for i := range x.I32() {
			x.I32()[i] = int32(r.IntN(10) - 5)
		}
	case tensor.I64:
		for i := range x.I64() {
			x.I64()[i] = int64(r.IntN(10) - 5)
		}
	case tensor.Bool:
		for i := range x.Bool() {
			x.Bool()[i] = r.IntN(2) == 1
		}
	}
	return x
}

// closeEnough compares two tensors elementwise with a relative tolerance.
func closeEnough(t testing.TB, what string, got *tensor.Tensor, want []float64, shape []int, tol float64) {
	t.Helper()
	if !equalInts(got.Shape(), shape) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape(), shape)
	}
	if got.Len() != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, got.Len(), len(want))
	}
	for i, w := range want {
		g := got.Float64At(i)
		if math.IsNaN(w) && math.IsNaN(g) {
			continue
		}
		if math.Abs(g-w) > tol*(1+math.Abs(w)) {
			t.Fatalf("%s: element %d = %v, want %v (shape %v)", what, i, g, w, shape)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
