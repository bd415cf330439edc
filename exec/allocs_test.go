package exec_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/internal/allocs"
	"github.com/gopir/gopir/tensor"
)

// servingProgram has what a run must do without a Go allocation once a
// run like it has been made: results the executor allocates, one that
// takes over a dying operand, views of a parameter and of an
// intermediate, a matmul with its weight from the pack cache, an "if" and
// a "while".
const servingProgram = `{
  (%w) = "parameter" () {name:"w", shape:[16,8], dtype:f32} : () -> tensor<16x8xf32>
  (%b) = "parameter" () {name:"b", shape:[16], dtype:f32} : () -> tensor<16xf32>
  (%x) = "data" () {name:"x", shape:[-1,8], dtype:f32} : () -> tensor<?x8xf32>
  (%n) = "data" () {name:"n", shape:[], dtype:i64} : () -> tensor<i64>
  (%h) = "matmul" (%x, %w) {transpose_x:false, transpose_y:true} : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  (%b2) = "reshape" (%b) {shape:[1,16]} : (tensor<16xf32>) -> tensor<1x16xf32>
  (%hb) = "add" (%h, %b2) : (tensor<?x16xf32>, tensor<1x16xf32>) -> tensor<?x16xf32>
  (%r) = "relu" (%hb) : (tensor<?x16xf32>) -> tensor<?x16xf32>
  (%flat) = "reshape" (%r) {shape:[-1]} : (tensor<?x16xf32>) -> tensor<?xf32>
  (%zero) = "full" () {shape:[], value:0, dtype:i64} : () -> tensor<i64>
  (%one) = "full" () {shape:[], value:1, dtype:i64} : () -> tensor<i64>
  (%pos) = "greater_than" (%n, %zero) : (tensor<i64>, tensor<i64>) -> tensor<i1>
  (%y) = "if" (%pos) : (tensor<i1>) -> tensor<?xf32> {
    (%e) = "exp" (%flat) : (tensor<?xf32>) -> tensor<?xf32>
    () = "yield" (%e) : (tensor<?xf32>) -> ()
  } else {
    (%m) = "neg" (%flat) : (tensor<?xf32>) -> tensor<?xf32>
    () = "yield" (%m) : (tensor<?xf32>) -> ()
  }
  (%c0) = "less_than" (%zero, %n) : (tensor<i64>, tensor<i64>) -> tensor<i1>
  (%iN, %z) = "while" (%c0, %zero, %y) : (tensor<i1>, tensor<i64>, tensor<?xf32>) -> (tensor<i64>, tensor<?xf32>) {
  ^(%i: tensor<i64>, %v: tensor<?xf32>):
    (%v2) = "multiply" (%v, %v) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
    (%i1) = "add" (%i, %one) : (tensor<i64>, tensor<i64>) -> tensor<i64>
    (%c1) = "less_than" (%i1, %n) : (tensor<i64>, tensor<i64>) -> tensor<i1>
    () = "yield" (%c1, %i1, %v2) : (tensor<i1>, tensor<i64>, tensor<?xf32>) -> ()
  }
  () = "fetch" (%z) {name:"z"} : (tensor<?xf32>) -> ()
  () = "fetch" (%hb) {name:"hb"} : (tensor<?x16xf32>) -> ()
}`

// newServing compiles servingProgram with its parameters in the store.
func newServing(t *testing.T, threads int) *exec.Executable {
	t.Helper()
	a := newAlloc()
	st := exec.NewStore()
	w, err := tensor.FromF32(a, ramp(128), 16, 8)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tensor.FromF32(a, ramp(16), 16)
	if err != nil {
		t.Fatal(err)
	}
	st.Set("w", w)
	st.Set("b", b)
	t.Cleanup(st.Release)
	return compile(t, servingProgram, exec.Options{Alloc: a, Store: st, Threads: threads, PackCache: 1 << 20})
}

// TestRunIntoMakesNoGoAllocations: a second run of the same shapes and
// path through RunInto makes no Go heap object, with one thread and two,
// for both branches and any trip count; the allocator ends each run with
// the store and the packed weight only.
func TestRunIntoMakesNoGoAllocations(t *testing.T) {
	for _, threads := range []int{1, 2} {
		x := newServing(t, threads)
		a := x.Allocator()
		base := allocated(a)
		for _, batch := range []int{1, 8} {
			for _, n := range []int64{0, 3} {
				in := feeds{"x": f32(t, ramp(8*batch), batch, 8), "n": i64(t, n)}
				res := exec.Results{}
				run := func() {
					if err := x.RunInto(context.Background(), in, res); err != nil {
						t.Fatal(err)
					}
					if len(res) != 2 || res["z"].Len() != 16*batch {
						t.Fatalf("results %v", res)
					}
					res.Release()
				}
				run()
				if got := allocs.PerRun(100, run); got != 0 {
					t.Errorf("threads %d, batch %d, n %d: %v Go allocations per run, want 0", threads, batch, n, got)
				}
				if got, packed := allocated(a), x.PackedBytes(); packed == 0 || got != base+packed {
					t.Errorf("threads %d, batch %d, n %d: %d bytes allocated after the runs, want the store's %d and %d packed (> 0)", threads, batch, n, got, base, packed)
				}
				releaseFeeds(in)
			}
		}
	}
}

// TestRunIntoResults: RunInto wants an empty map, leaves it empty on
// error, and gives the same values as Run.
func TestRunIntoResults(t *testing.T) {
	x := newServing(t, 1)
	in := feeds{"x": f32(t, ramp(16), 2, 8), "n": i64(t, 2)}
	defer releaseFeeds(in)
	want := mustRun(t, x, in)
	defer want.Release()
	res := exec.Results{}
	if err := x.RunInto(context.Background(), in, nil); err == nil || !strings.Contains(err.Error(), "nil Results") {
		t.Fatalf("nil map: err = %v", err)
	}
	if err := x.RunInto(context.Background(), in, res); err != nil {
		t.Fatal(err)
	}
	if err := x.RunInto(context.Background(), in, res); err == nil || !strings.Contains(err.Error(), "holds 2 values") {
		t.Fatalf("full map: err = %v", err)
	}
	for name, w := range want {
		for i := range w.Len() {
			if res[name].Float64At(i) != w.Float64At(i) {
				t.Fatalf("%s[%d] = %v, Run gives %v", name, i, res[name].Float64At(i), w.Float64At(i))
			}
		}
	}
	res.Release()
	bad := feeds{"x": in["x"]} // n missing
	if err := x.RunInto(context.Background(), bad, res); err == nil || len(res) != 0 {
		t.Fatalf("missing feed: err = %v, %d results", err, len(res))
	}
}

// TestRunResultsAreNeverReused: a result of Run stays its own object
// after its release (a caller may hold a stale pointer), while those of
// RunInto come back for later runs.
func TestRunResultsAreNeverReused(t *testing.T) {
	x := newServing(t, 1)
	in := feeds{"x": f32(t, ramp(16), 2, 8), "n": i64(t, 1)}
	defer releaseFeeds(in)
	seen := map[*tensor.Tensor]bool{}
	for range 5 {
		res := mustRun(t, x, in)
		for _, r := range res {
			if seen[r] {
				t.Fatal("Run handed out a tensor object it had handed out before")
			}
			seen[r] = true
		}
		res.Release()
	}
	res := exec.Results{}
	reused := false
	for range 5 {
		if err := x.RunInto(context.Background(), in, res); err != nil {
			t.Fatal(err)
		}
		prev := res["hb"]
		res.Release()
		if err := x.RunInto(context.Background(), in, res); err != nil {
			t.Fatal(err)
		}
		reused = reused || res["hb"] == prev
		res.Release()
	}
	if !reused {
		t.Fatal("RunInto's released results never came back")
	}
}
