package ops_test

import (
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// TestReduceSumTo checks reduce_sum_to's sums, and its identity case in
// each form: a view of x when the types show it, else x's own buffer when
// the kernel owns x and nobody else holds it, else a copy.
func TestReduceSumTo(t *testing.T) {
	a := memory.New(memory.Options{})
	x, err := tensor.FromF32(a, []float32{1, 2, 3, 4, 5, 6}, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	like, err := tensor.New(a, tensor.F32, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	same, err := tensor.New(a, tensor.F32, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	dyn := ir.TensorOf(ir.F32, -1, 3)
	build := func(attrs ir.Attrs, in ...ir.Type) ops.Kernel {
		op, err := buildOp(t, "reduce_sum_to", attrs, in...)
		if err != nil {
			t.Fatal(err)
		}
		k, err := ops.Bind(op)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	run := func(k ops.Kernel, owned uint64, in ...*tensor.Tensor) *tensor.Tensor {
		outs, err := k(&ops.Ctx{Alloc: a, Threads: 2, Owned: owned}, in)
		if err != nil {
			t.Fatal(err)
		}
		return outs[0]
	}
	// Sums: to [3] statically, to like's [1, 3] at run time.
	y := run(build(ir.A("shape", []int{3}), dyn), 0, x)
	closeEnough(t, "to [3]", y, []float64{5, 7, 9}, []int{3}, 0)
	y.Release()
	y = run(build(nil, dyn, dyn), 0, x, like)
	closeEnough(t, "to like", y, []float64{5, 7, 9}, []int{1, 3}, 0)
	y.Release()
	want := []float64{1, 2, 3, 4, 5, 6}
	// Static identity: a view of x.
	y = run(build(ir.A("shape", []int{2, 3}), ir.TensorOf(ir.F32, 2, 3)), 0, x)
	if y.Storage() != x.Storage() {
		t.Error("static identity: not a view of x")
	}
	closeEnough(t, "static identity", y, want, []int{2, 3}, 0)
	y.Release()
	// Identity at run time, x not owned: a copy.
	before := a.Stats().Allocated.Current
	y = run(build(nil, dyn, dyn), 0, x, same)
	if y.Storage() == x.Storage() || a.Stats().Allocated.Current <= before {
		t.Error("run-time identity of a shared x: not a copy")
	}
	closeEnough(t, "copy", y, want, []int{2, 3}, 0)
	y.Release()
	// Identity at run time, x owned: x itself.
	x2 := cloneTo(t, a, x)
	before = a.Stats().Allocated.Current
	y = run(build(ir.A("shape", []int{2, 3}), dyn), 1, x2)
	if y != x2 || a.Stats().Allocated.Current != before {
		t.Error("run-time identity of an owned x: not x's buffer")
	}
	closeEnough(t, "in place", y, want, []int{2, 3}, 0)
	release(y, x, like, same)
	wantAllocated(t, a, 0)
}
