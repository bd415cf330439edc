package memory

import (
	"math/rand/v2"
	"sync"
	"testing"
)

// TestConcurrent hammers one allocator from several goroutines (run it with
// -race): blocks must keep their contents, and everything adds up at the end.
func TestConcurrent(t *testing.T) {
	a := New(Options{ChunkSize: 64 << 10, Limit: 2 << 20, HistoryCap: 100})
	var wg sync.WaitGroup
	const workers = 8
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			var mine []modelBlock
			for i := range 2000 {
				if rng.IntN(2) == 0 || len(mine) == 0 {
					a.SetTag(Tag{Op: "worker", Step: int64(i)})
					b, err := a.Alloc(rng.Int64N(20 << 10))
					if err != nil {
						continue // an OOM under contention is allowed
					}
					seed := byte(w*31 + i)
					fill(b, seed)
					mine = append(mine, modelBlock{b: b, seed: seed})
				} else {
					j := rng.IntN(len(mine))
					verify(t, mine[j])
					a.Free(mine[j].b)
					mine[j] = mine[len(mine)-1]
					mine = mine[:len(mine)-1]
				}
				switch i % 500 {
				case 0:
					a.EmptyCache()
				case 250:
					_ = a.Stats()
					_ = a.Live()
					_ = a.History()
				}
			}
			for _, m := range mine {
				verify(t, m)
				a.Free(m.b)
			}
		})
	}
	wg.Wait()
	if err := a.check(); err != nil {
		t.Fatal(err)
	}
	st := a.Stats()
	if st.Allocated.Current != 0 || st.Allocs != st.Frees || st.LiveBlocks != 0 {
		t.Fatalf("after all workers: %+v", st)
	}
	a.EmptyCache()
	if a.Stats().Reserved.Current != 0 {
		t.Fatal("reserved bytes left after EmptyCache")
	}
}
