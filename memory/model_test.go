package memory

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

// modelBlock is what the test model knows about a live block.
type modelBlock struct {
	b       *Block
	rounded int64
	seed    byte
}

// fill writes a pattern unique to the block (its seed mixed with the
// position) so that an overlap corrupts some block's pattern.
func fill(b *Block, seed byte) {
	for i := range b.Bytes() {
		b.Bytes()[i] = seed ^ byte(i*7)
	}
}

func verify(t *testing.T, m modelBlock) {
	t.Helper()
	for i, v := range m.b.Bytes() {
		if v != m.seed^byte(i*7) {
			t.Fatalf("block #%d (%d bytes): byte %d overwritten", m.b.ID(), m.b.Size(), i)
		}
	}
}

func addr(b *Block) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b.Bytes()))) }

// TestRandomAgainstModel replays seeded random alloc/free sequences and
// checks the allocator against a model of what must hold after every step.
func TestRandomAgainstModel(t *testing.T) {
	const chunk = 4096
	configs := []struct {
		name string
		opts Options
	}{
		{"unlimited", Options{ChunkSize: chunk}},
		{"limit", Options{ChunkSize: chunk, Limit: 12 * chunk}},
		{"limit-unaligned", Options{ChunkSize: chunk, Limit: 7*chunk + 1000}},
		{"align256", Options{ChunkSize: 2 * chunk, Alignment: 256, HistoryCap: 64}},
	}
	specials := []int64{0, 1, 63, 64, 65, 127, 128, 1000, chunk - 1, chunk, chunk + 1, 2*chunk + 3, 5 * chunk}
	for _, cfg := range configs {
		for seed := uint64(1); seed <= 5; seed++ {
			t.Run(fmt.Sprintf("%s/seed=%d", cfg.name, seed), func(t *testing.T) {
				runModel(t, cfg.opts, seed, specials)
			})
		}
	}
}

func runModel(t *testing.T, opts Options, seed uint64, specials []int64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	a := New(opts)
	al := a.Options().Alignment
	var live []modelBlock // in allocation order
	var want Stats
	var next byte

	checkAll := func() {
		t.Helper()
		if err := a.check(); err != nil {
			t.Fatal(err)
		}
		got := a.Stats()
		if got.Allocated != want.Allocated || got.Allocs != want.Allocs || got.Frees != want.Frees || got.OOMs != want.OOMs {
			t.Fatalf("stats %+v, model %+v", got, want)
		}
		if got.Reserved.Current < got.Allocated.Current {
			t.Fatalf("reserved %d < allocated %d", got.Reserved.Current, got.Allocated.Current)
		}
		if lim := a.Options().Limit; lim > 0 && got.Reserved.Peak > lim {
			t.Fatalf("reserved peak %d over limit %d", got.Reserved.Peak, lim)
		}
		// Live blocks never overlap and the model's order is the allocator's.
		type span struct{ lo, hi uintptr }
		var spans []span
		var ids []uint64
		for _, m := range live {
			if m.rounded > 0 {
				spans = append(spans, span{addr(m.b), addr(m.b) + uintptr(m.rounded)})
				ids = append(ids, m.b.ID())
			}
		}
		slices.SortFunc(spans, func(x, y span) int { return int(int64(x.lo) - int64(y.lo)) })
		for i := 1; i < len(spans); i++ {
			if spans[i].lo < spans[i-1].hi {
				t.Fatalf("live blocks overlap: %#x-%#x and %#x-%#x", spans[i-1].lo, spans[i-1].hi, spans[i].lo, spans[i].hi)
			}
		}
		var gotIDs []uint64
		for _, bi := range a.Live() {
			gotIDs = append(gotIDs, bi.ID)
		}
		if !slices.Equal(ids, gotIDs) {
			t.Fatalf("Live() ids %v, model %v", gotIDs, ids)
		}
	}

	for step := range 3000 {
		switch r := rng.IntN(100); {
		case r < 55 || len(live) == 0:
			var size int64
			if rng.IntN(3) == 0 {
				size = specials[rng.IntN(len(specials))]
			} else {
				size = 1 + rng.Int64N(a.Options().ChunkSize/2)
			}
			b, err := a.Alloc(size)
			rounded := (size + al - 1) &^ (al - 1)
			if err != nil {
				var oom *ResourceExhausted
				if !errors.As(err, &oom) {
					t.Fatalf("step %d: Alloc(%d): %v", step, size, err)
				}
				want.OOMs++
				lim := a.Options().Limit
				st := a.Stats()
				// Legitimate only if nothing cached fits and the limit
				// leaves no room, even after idle chunks went back.
				if a.largestFree() >= rounded || lim-st.Reserved.Current >= rounded {
					t.Fatalf("step %d: OOM for %d with largest free %d, reserved %d, limit %d", step, size, a.largestFree(), st.Reserved.Current, lim)
				}
				if oom.Requested != size || oom.Allocated != want.Allocated.Current || oom.Available != lim-want.Allocated.Current {
					t.Fatalf("step %d: bad OOM fields %+v", step, oom)
				}
				break
			}
			if int64(len(b.Bytes())) != size || int64(cap(b.Bytes())) != size || b.Size() != size {
				t.Fatalf("Alloc(%d): len %d cap %d Size %d", size, len(b.Bytes()), cap(b.Bytes()), b.Size())
			}
			if size > 0 && addr(b)%uintptr(al) != 0 {
				t.Fatalf("Alloc(%d) at %#x, not %d-aligned", size, addr(b), al)
			}
			next++
			fill(b, next)
			if size > 0 {
				want.Allocs++
				want.Allocated.add(rounded)
			} else {
				rounded = 0
			}
			live = append(live, modelBlock{b, rounded, next})
		case r < 98:
			i := rng.IntN(len(live))
			m := live[i]
			verify(t, m)
			a.Free(m.b)
			live = slices.Delete(live, i, i+1)
			if m.rounded > 0 {
				want.Frees++
				want.Allocated.sub(m.rounded, "model")
			}
		default:
			a.EmptyCache()
		}
		if step%50 == 0 {
			checkAll()
		}
	}
	checkAll()
	for _, m := range live {
		verify(t, m)
		a.Free(m.b)
	}
	st := a.Stats()
	if st.Allocated.Current != 0 || st.LiveBlocks != 0 || len(a.Live()) != 0 {
		t.Fatalf("after freeing everything: %+v", st)
	}
	a.EmptyCache()
	if st := a.Stats(); st.Reserved.Current != 0 || st.ChunkGrows != st.ChunkReleases {
		t.Fatalf("after EmptyCache: %+v", st)
	}
	if err := a.check(); err != nil {
		t.Fatal(err)
	}
}

// largestFree is the largest cached free segment, for judging an OOM.
func (a *Allocator) largestFree() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.tree.largest()
}

func TestFreeTreeBestFit(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	c := &chunk{id: 0}
	var tr freeTree
	var in []*segment
	for i := range 2000 {
		if rng.IntN(3) > 0 || len(in) == 0 {
			b := &segment{chunk: c, size: 64 * (1 + rng.Int64N(50)), offset: int64(i)}
			tr.insert(b)
			in = append(in, b)
		} else {
			j := rng.IntN(len(in))
			tr.remove(in[j])
			in = slices.Delete(in, j, j+1)
		}
		want := int64(64 * (1 + rng.Int64N(52)))
		var best *segment
		for _, b := range in {
			if b.size >= want && (best == nil || less(b, best)) {
				best = b
			}
		}
		if got := tr.bestFit(want); got != best {
			t.Fatalf("bestFit(%d) = %v, want %v", want, got, best)
		}
	}
	if tr.n != len(in) {
		t.Fatalf("n = %d, want %d", tr.n, len(in))
	}
}
