package exec_test

import (
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

// TestStoreSetOwnsOneReference guards the Store's ownership: replacing a
// tensor releases the old one, storing the same tensor again (with the
// caller's reference) leaves the store one reference, and Release returns
// everything.
func TestStoreSetOwnsOneReference(t *testing.T) {
	a := memory.New(memory.Options{})
	s := exec.NewStore()
	x, err := tensor.FromF32(a, []float32{1, 2, 3}, 3)
	if err != nil {
		t.Fatal(err)
	}
	s.Set("w", x)
	for range 100 {
		x.Retain() // the caller's reference, handed over again
		s.Set("w", x)
		if got := x.Refs(); got != 1 {
			t.Fatalf("after storing the same tensor again: %d references, want 1", got)
		}
	}
	y, err := tensor.FromF32(a, []float32{4, 5, 6}, 3)
	if err != nil {
		t.Fatal(err)
	}
	s.Set("w", y) // releases x
	if got, want := a.Stats().Allocated.Current, int64(64); got != want {
		t.Fatalf("after replacing: %d bytes allocated, want %d (y only)", got, want)
	}
	s.Release()
	if got := a.Stats().Allocated.Current; got != 0 {
		t.Fatalf("after Release: %d bytes allocated, want 0", got)
	}
}
