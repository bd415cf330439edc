package exec_test

import (
	"os"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
)

// TestStacksHoldOneBufferPerIteration runs ir/testdata/stacks.pir: a while
// pushes a fresh buffer per iteration; the peak grows linearly with the trip
// count and everything is released when the stacks die.
func TestStacksHoldOneBufferPerIteration(t *testing.T) {
	src, err := os.ReadFile("../ir/testdata/stacks.pir")
	if err != nil {
		t.Fatal(err)
	}
	p, err := ir.Parse("stacks.pir", src)
	if err != nil {
		t.Fatal(err)
	}
	a := newAlloc()
	x, err := exec.Compile(p, exec.Options{Alloc: a, CheckLeaks: true})
	if err != nil {
		t.Fatal(err)
	}
	rows := f32(t, ramp(3*4), 3, 4)
	defer rows.Release()
	const perItem = 64 // 3x4 f32 = 48 bytes, one aligned block
	for _, n := range []int64{1, 10, 100} {
		in := feeds{"n": i64(t, n), "x": rows}
		a.ResetPeak()
		res := mustRun(t, x, in)
		last := res["last"].F32()
		if last[1] != 0 || last[3] != 0 { // relu(ramp) = [0 0 0 0 1 2 3 0 0 0 0 1]
			t.Fatalf("last = %v", last)
		}
		res.Release()
		in["n"].Release()
		if got := allocated(a); got != 0 {
			t.Fatalf("n=%d: %d bytes allocated after the run", n, got)
		}
		// n pushed buffers, plus the loop's counters and conditions.
		if peak := a.Stats().Allocated.Peak; peak < n*perItem || peak > n*perItem+6*64 {
			t.Fatalf("n=%d: peak %d, want about %d", n, peak, n*perItem)
		}
	}
}
