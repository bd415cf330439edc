package tensor_test

import (
	"sync"
	"testing"

	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

// TestConcurrentRetainRelease shares tensors between goroutines that
// retain, view and release them concurrently (run with -race); the
// allocator must end exactly at its baseline.
func TestConcurrentRetainRelease(t *testing.T) {
	a := memory.New(memory.Options{ChunkSize: 1 << 20})
	for round := range 20 {
		x, err := tensor.Zeros(a, tensor.F32, 16, 16)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for w := range 8 {
			x.Retain() // one reference per goroutine, handed over
			wg.Go(func() {
				defer x.Release()
				for i := range 200 {
					y := x.Retain()
					if i%3 == 0 {
						v, err := y.Reshape(256)
						if err != nil {
							t.Error(err)
							return
						}
						_ = v.F32()[w]
						v.Release()
					}
					y.Release()
					// Each goroutine also makes and drops its own tensors.
					z, err := tensor.New(a, tensor.I64, w+1, round+1)
					if err != nil {
						t.Error(err)
						return
					}
					z.Release()
				}
			})
		}
		wg.Wait()
		if x.Refs() != 1 {
			t.Fatalf("refs %d after all goroutines, want 1", x.Refs())
		}
		x.Release()
	}
	if st := a.Stats(); st.Allocated.Current != 0 || st.Allocs != st.Frees {
		t.Fatalf("after concurrent use: %+v", st)
	}
}
