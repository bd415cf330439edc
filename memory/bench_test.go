package memory_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/gopir/gopir/memory"
)

// sink keeps make's result alive so the compiler cannot drop the allocation.
var sink []byte

func BenchmarkAllocFree(b *testing.B) {
	for _, sz := range []struct {
		name string
		n    int64
	}{{"256B", 256}, {"64KiB", 64 << 10}, {"4MiB", 4 << 20}} {
		b.Run(fmt.Sprintf("size=%s/impl=allocator", sz.name), func(b *testing.B) {
			a := memory.New(memory.Options{})
			// Reserve the chunk before timing: the steady state of a
			// caching allocator is what a training loop sees.
			warm, err := a.Alloc(sz.n)
			if err != nil {
				b.Fatal(err)
			}
			a.Free(warm)
			b.SetBytes(sz.n)
			b.ReportAllocs()
			for b.Loop() {
				blk, err := a.Alloc(sz.n)
				if err != nil {
					b.Fatal(err)
				}
				blk.Bytes()[0] = 1
				a.Free(blk)
			}
		})
		// The handle embedded in the caller's object, as tensors hold it:
		// no Go heap object per allocation.
		b.Run(fmt.Sprintf("size=%s/impl=allocator-embedded", sz.name), func(b *testing.B) {
			a := memory.New(memory.Options{})
			var h memory.Block
			if err := a.AllocInto(&h, sz.n); err != nil {
				b.Fatal(err)
			}
			a.Free(&h)
			b.SetBytes(sz.n)
			b.ReportAllocs()
			for b.Loop() {
				h = memory.Block{} // freed, and nobody else holds it
				if err := a.AllocInto(&h, sz.n); err != nil {
					b.Fatal(err)
				}
				h.Bytes()[0] = 1
				a.Free(&h)
			}
		})
		b.Run(fmt.Sprintf("size=%s/impl=make", sz.name), func(b *testing.B) {
			b.SetBytes(sz.n)
			b.ReportAllocs()
			for b.Loop() {
				sink = make([]byte, sz.n)
				sink[0] = 1
			}
		})
		b.Run(fmt.Sprintf("size=%s/impl=pool", sz.name), func(b *testing.B) {
			pool := sync.Pool{New: func() any { s := make([]byte, sz.n); return &s }}
			b.SetBytes(sz.n)
			b.ReportAllocs()
			for b.Loop() {
				p := pool.Get().(*[]byte)
				(*p)[0] = 1
				pool.Put(p)
			}
		})
	}
}

// BenchmarkFragmentation replays a training-step-like pattern: the forward
// pass keeps activations of varying sizes alive and makes short-lived
// temporaries; the backward pass frees activations in reverse while making
// gradients and temporaries. It reports how much the allocator reserves per
// byte of peak demand (1.0 would be a perfect fit).
func BenchmarkFragmentation(b *testing.B) {
	const layers = 24
	rng := rand.New(rand.NewPCG(1, 2))
	act := make([]int64, layers) // activation sizes, fixed per layer like a real model
	tmp := make([]int64, layers)
	for i := range act {
		act[i] = (64 + rng.Int64N(4<<10)) << 10 // 64 KiB .. 4 MiB
		tmp[i] = (1 + rng.Int64N(1<<10)) << 10  // 1 KiB .. 1 MiB
	}
	a := memory.New(memory.Options{ChunkSize: 8 << 20})
	must := func(n int64) *memory.Block {
		blk, err := a.Alloc(n)
		if err != nil {
			b.Fatal(err)
		}
		return blk
	}
	// The batch size varies a little between steps, as with a ragged last
	// batch or variable-length sequences.
	scales := []int64{8, 8, 7, 8, 6, 8}
	runStep := func(step int) {
		s := scales[step%len(scales)]
		saved := make([]*memory.Block, layers)
		for i := range layers {
			t := must(tmp[i] * s / 8)
			saved[i] = must(act[i] * s / 8)
			a.Free(t)
		}
		for i := layers - 1; i >= 0; i-- {
			g := must(act[i] * s / 8)
			t := must(tmp[i] * s / 8)
			a.Free(t)
			a.Free(saved[i])
			a.Free(g)
		}
	}
	// One warm-up step outside the timing; the metric still covers it.
	runStep(0)
	b.ReportAllocs()
	step := 1
	for b.Loop() {
		runStep(step)
		step++
	}
	st := a.Stats()
	b.ReportMetric(float64(st.Reserved.Peak)/float64(st.Allocated.Peak), "reserved/peak-allocated")
	b.ReportMetric(float64(st.ChunkGrows), "chunk-grows")
}
