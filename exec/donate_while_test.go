package exec_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

// donatedLoop carries a through a while: each iteration adds x into a's
// buffer (a dies there) and divides the sum, which dies too, by the scalar
// fail - i, which is zero in iteration fail: that divide fails after
// taking over both its operands.
const donatedLoop = `{
  (%n) = "data" () {name:"n", shape:[], dtype:i32} : () -> tensor<i32>
  (%fail) = "data" () {name:"fail", shape:[], dtype:i32} : () -> tensor<i32>
  (%x) = "data" () {name:"x", shape:[256], dtype:i32} : () -> tensor<256xi32>
  (%a0) = "abs" (%x) : (tensor<256xi32>) -> tensor<256xi32>
  (%i0) = "full" () {shape:[], value:0, dtype:i32} : () -> tensor<i32>
  (%one) = "full" () {shape:[], value:1, dtype:i32} : () -> tensor<i32>
  (%c0) = "less_than" (%i0, %n) : (tensor<i32>, tensor<i32>) -> tensor<i1>
  (%iN, %aN) = "while" (%c0, %i0, %a0) : (tensor<i1>, tensor<i32>, tensor<256xi32>) -> (tensor<i32>, tensor<256xi32>) {
  ^(%i: tensor<i32>, %a: tensor<256xi32>):
    (%b) = "add" (%a, %x) : (tensor<256xi32>, tensor<256xi32>) -> tensor<256xi32>
    (%den) = "subtract" (%fail, %i) : (tensor<i32>, tensor<i32>) -> tensor<i32>
    (%q) = "divide" (%b, %den) : (tensor<256xi32>, tensor<i32>) -> tensor<256xi32>
    (%i1) = "add" (%i, %one) : (tensor<i32>, tensor<i32>) -> tensor<i32>
    (%c1) = "less_than" (%i1, %n) : (tensor<i32>, tensor<i32>) -> tensor<i1>
    () = "yield" (%c1, %i1, %q) : (tensor<i1>, tensor<i32>, tensor<256xi32>) -> ()
  }
  () = "fetch" (%aN) {name:"a"} : (tensor<256xi32>) -> ()
}`

// TestWhileCarriedValueDonatedEachIteration runs a loop whose carried
// value is updated in place every iteration, in tensor debug mode: results
// equal NoDonate's over many runs, no iteration allocates a new carried
// buffer, and a kernel that fails after taking over its operands (an
// integer division by zero, in any iteration) leaves allocated bytes at
// zero, run after run.
func TestWhileCarriedValueDonatedEachIteration(t *testing.T) {
	tensor.SetDebug(true)
	defer tensor.SetDebug(false)
	xs := make([]int32, 256)
	for i := range xs {
		xs[i] = int32(i%11) - 5
	}
	scalar := func(v int32) *tensor.Tensor {
		x, err := tensor.FromI32(host, []int32{v}, []int{}...)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	x, err := tensor.FromI32(host, xs, 256)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Release()
	const n = 6
	nv := scalar(n)
	defer nv.Release()

	donating, plain := memory.New(memory.Options{ChunkSize: 1 << 20, HistoryCap: 1 << 12}), newAlloc()
	xd := compile(t, donatedLoop, exec.Options{Alloc: donating, CheckLeaks: true})
	xp := compile(t, donatedLoop, exec.Options{Alloc: plain, CheckLeaks: true, NoDonate: true})
	run := func(e *exec.Executable, fail int32) (exec.Results, error) {
		f := scalar(fail)
		defer f.Release()
		return e.Run(context.Background(), feeds{"n": nv, "fail": f, "x": x})
	}
	want, err := run(xp, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer want.Release()
	for r := range 100 {
		got, err := run(xd, 100)
		if err != nil {
			t.Fatalf("run %d: %v", r, err)
		}
		if !slices.Equal(got["a"].I32(), want["a"].I32()) {
			t.Fatalf("run %d: a = %v, NoDonate gives %v", r, got["a"], want["a"])
		}
		got.Release()
		if b := allocated(donating); b != 0 {
			t.Fatalf("run %d: %d bytes allocated after the run; live %+v", r, b, donating.Live())
		}
	}
	// The loop's data is one buffer (abs's), rewritten in place n times.
	seq := donating.History()[len(donating.History())-1].Seq
	if res, err := run(xd, 100); err != nil {
		t.Fatal(err)
	} else {
		res.Release()
	}
	big := 0
	for _, e := range donating.History() {
		if e.Seq > seq && e.Kind == "alloc" && e.Requested == 4*256 {
			big++
		}
	}
	if big != 1 {
		t.Fatalf("a run allocates %d buffers of 256 i32, want 1: the carried value is not updated in place", big)
	}
	for r := range 100 {
		fail := int32(r % n)
		if _, err := run(xd, fail); !errors.Is(err, kernels.ErrDivideByZero) {
			t.Fatalf("fail at iteration %d: err = %v, want division by zero", fail, err)
		}
		if b := allocated(donating); b != 0 {
			t.Fatalf("failure in iteration %d: %d bytes allocated after it; live %+v", fail, b, donating.Live())
		}
	}
	got, err := run(xd, 100)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got["a"].I32(), want["a"].I32()) {
		t.Fatalf("after the failures: a = %v, want %v", got["a"], want["a"])
	}
	got.Release()
	if b := allocated(donating); b != 0 {
		t.Fatalf("%d bytes allocated at the end", b)
	}
}
