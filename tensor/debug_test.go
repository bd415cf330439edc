package tensor_test

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

func withDebug(t *testing.T) {
	t.Helper()
	tensor.SetDebug(true)
	t.Cleanup(func() { tensor.SetDebug(false) })
}

// nextLine is the file:line of the line after the call.
func nextLine() string {
	_, _, line, _ := runtime.Caller(1)
	return fmt.Sprintf("debug_test.go:%d", line+1)
}

func TestDebugUseAfterRelease(t *testing.T) {
	withDebug(t)
	a := memory.New(memory.Options{})
	x, err := tensor.FromF32(a, []float32{1, 2, 3}, 3)
	if err != nil {
		t.Fatal(err)
	}
	stale := x.F32()
	where := nextLine()
	x.Release()

	for _, f := range stale {
		if !math.IsNaN(float64(f)) {
			t.Fatalf("released bytes not poisoned: %v", stale)
		}
	}
	want := "use of released tensor<3xf32>; it was released at " + where + " (tensor_test.TestDebugUseAfterRelease)"
	mustPanic(t, want, func() { x.F32() })
	mustPanic(t, want, func() { x.Raw() })
	mustPanic(t, want, func() { x.Float64At(0) })
	if a.Stats().Allocated.Current != 0 {
		t.Fatal("block not returned")
	}
}

func TestDebugDoubleRelease(t *testing.T) {
	withDebug(t)
	a := memory.New(memory.Options{})
	x, err := tensor.New(a, tensor.I32, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	v, err := x.Reshape(4)
	if err != nil {
		t.Fatal(err)
	}
	x.Release()
	where := nextLine()
	v.Release()
	mustPanic(t, "double release of tensor<2x2xi32>; it was released at "+where, x.Release)
	// Still reported the same way the second time.
	mustPanic(t, "double release of tensor<4xi32>; it was released at "+where, v.Release)
	if a.Stats().Frees != 1 {
		t.Fatalf("block freed %d times", a.Stats().Frees)
	}
}

func TestNoDebugDoubleReleaseStillPanics(t *testing.T) {
	a := memory.New(memory.Options{})
	x, _ := tensor.New(a, tensor.F32, 4)
	x.Release()
	mustPanic(t, "double release of tensor<4xf32>; it was released at an unknown place (debug mode was off then)", x.Release)
}
