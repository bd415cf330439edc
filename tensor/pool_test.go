package tensor_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

// TestPoolReusesObjects: tensors and views made through a Pool come back
// to it with their storage, so making them again allocates no Go object,
// and the allocator's bytes are exact all along.
func TestPoolReusesObjects(t *testing.T) {
	a := memory.New(memory.Options{})
	var p tensor.Pool
	flat := make([]int, 1) // a variadic argument list would be a Go allocation of its own
	cycle := func(shape []int) {
		x, err := p.New(a, tensor.F32, shape...)
		if err != nil {
			t.Fatal(err)
		}
		flat[0] = x.Len()
		v, err := p.Reshape(x, flat...)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := allocated(a), int64(64*((x.Bytes()+63)/64)); got != want {
			t.Fatalf("allocated %d while the tensor lives, want %d", got, want)
		}
		x.Release()
		if v.Len() > 0 {
			v.F32()[0] = 1 // the view holds the storage
		}
		v.Release()
	}
	for _, shape := range [][]int{{2, 3}, {4, 5, 6, 7, 8}, {}, {0, 3}} {
		cycle(shape)
		if n := testing.AllocsPerRun(50, func() { cycle(shape) }); n != 0 {
			t.Errorf("shape %v: %v Go allocations per tensor and view made through a pool, want 0", shape, n)
		}
		if got := allocated(a); got != 0 {
			t.Fatalf("allocated %d after release, want 0", got)
		}
	}
	// A recycled tensor is a new tensor: its shape, dtype and bytes are its own.
	x, _ := p.New(a, tensor.F64, 3)
	y, _ := p.New(a, tensor.I32, 1, 2, 3, 4, 5)
	if x.DType() != tensor.F64 || !slices.Equal(x.Shape(), []int{3}) || len(x.F64()) != 3 ||
		y.DType() != tensor.I32 || !slices.Equal(y.Shape(), []int{1, 2, 3, 4, 5}) || len(y.I32()) != 120 {
		t.Fatalf("recycled tensors %s and %s", x.Type(), y.Type())
	}
	x.Release()
	y.Release()
}

// TestPoolDetach: a detached tensor (one handed out) never comes back to
// the pool, so a pointer kept after its release never aliases a tensor
// made later; its storage and views are released as usual.
func TestPoolDetach(t *testing.T) {
	a := memory.New(memory.Options{})
	var p tensor.Pool
	x, _ := p.New(a, tensor.F32, 8)
	v, _ := p.Reshape(x, 2, 4)
	tensor.Detach(v)
	x.Release()
	v.Release()
	y, _ := p.New(a, tensor.F32, 8)
	z, _ := p.Reshape(y, 8)
	defer y.Release()
	defer z.Release()
	if y == x || z == v || y.Storage() == x.Storage() {
		t.Fatal("a detached tensor's objects were reused")
	}
	mustPanic(t, "double release", x.Release)
	if got := allocated(a); got != 64 {
		t.Fatalf("allocated %d, want 64 (y only)", got)
	}
}

// TestPoolStaleRelease: a header released once more after it came back
// to the pool (a kernel that broke a reference count) panics as a double
// release until the pool hands the object out again; it does not free
// anything.
func TestPoolStaleRelease(t *testing.T) {
	a := memory.New(memory.Options{})
	var p tensor.Pool
	x, _ := p.New(a, tensor.F32, 8)
	v, _ := p.Reshape(x, 8)
	x.Release()
	v.Release()
	mustPanic(t, "double release", x.Release)
	mustPanic(t, "double release", v.Release)
	if len(x.Raw()) != 0 {
		t.Fatal("a released header still reads bytes")
	}
	if got := allocated(a); got != 0 {
		t.Fatalf("allocated %d, want 0", got)
	}
}

// TestPoolDebugModeRecyclesNothing: debug mode keeps catching use after
// release, so nothing is reused.
func TestPoolDebugModeRecyclesNothing(t *testing.T) {
	tensor.SetDebug(true)
	defer tensor.SetDebug(false)
	a := memory.New(memory.Options{})
	var p tensor.Pool
	x, _ := p.New(a, tensor.F32, 8)
	x.Release()
	y, _ := p.New(a, tensor.F32, 8)
	defer y.Release()
	if y == x {
		t.Fatal("debug mode reused a released tensor")
	}
	mustPanic(t, "use of released", func() { x.F32() })
}

// TestPoolConcurrent makes and releases tensors of one pool from several
// goroutines at once (run with -race).
func TestPoolConcurrent(t *testing.T) {
	a := memory.New(memory.Options{ChunkSize: 1 << 20})
	var p tensor.Pool
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 300 {
				x, err := p.New(a, tensor.F32, w+1, i%7+1)
				if err != nil {
					t.Error(err)
					return
				}
				v, _ := p.Reshape(x, x.Len())
				x.F32()[0] = float32(i)
				x.Release()
				if v.F32()[0] != float32(i) {
					t.Errorf("view reads %v, want %d", v.F32()[0], i)
				}
				v.Release()
			}
		})
	}
	wg.Wait()
	if got := allocated(a); got != 0 {
		t.Fatalf("allocated %d after every release, want 0", got)
	}
}

// TestPoolFailedNew: an allocation the allocator refuses leaves the pool
// and the allocator as they were.
func TestPoolFailedNew(t *testing.T) {
	a := memory.New(memory.Options{Limit: 1 << 10, ChunkSize: 1 << 10})
	var p tensor.Pool
	if _, err := p.New(a, tensor.F32, 1<<20); err == nil {
		t.Fatal("no error for 4 MiB under a 1 KiB limit")
	}
	x, err := p.New(a, tensor.F32, 16)
	if err != nil {
		t.Fatal(err)
	}
	x.Release()
	if got := allocated(a); got != 0 {
		t.Fatalf("allocated %d, want 0", got)
	}
}

// TestPoolLentViews: a view of storage the pool did not make comes back
// at Reclaim, unless it was kept or detached; the storage is untouched.
func TestPoolLentViews(t *testing.T) {
	a := memory.New(memory.Options{})
	w, _ := tensor.FromF32(a, []float32{1, 2, 3, 4}, 4)
	defer w.Release()
	var p tensor.Pool
	shape := []int{2, 2}
	view := func() *tensor.Tensor {
		v, err := p.Reshape(w, shape...)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	v := view()
	v.Release()
	p.Reclaim()
	if n := testing.AllocsPerRun(50, func() { view().Release(); p.Reclaim() }); n != 0 {
		t.Errorf("%v Go allocations per lent view, want 0", n)
	}
	kept, detached := view(), view()
	tensor.Keep(kept)
	tensor.Detach(detached)
	p.Reclaim()
	u1, u2 := view(), view()
	if u1 == kept || u2 == kept || u1 == detached || u2 == detached {
		t.Fatal("Reclaim took back a kept or detached view")
	}
	if kept.F32()[3] != 4 || !slices.Equal(kept.Shape(), shape) || w.Refs() != 5 {
		t.Fatalf("kept view %v, shape %v, refs %d", kept.F32(), kept.Shape(), w.Refs())
	}
	for _, x := range []*tensor.Tensor{kept, detached, u1, u2} {
		x.Release()
	}
	if got := allocated(a); got != 64 {
		t.Fatalf("allocated %d, want 64 (w only)", got)
	}
}
