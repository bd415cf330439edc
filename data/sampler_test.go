package data

import (
	"slices"
	"testing"
)

// checkCover fails unless the batches hold every index of [0, n) exactly
// once, apart from the dropped ones, which must number fewer than a batch.
func checkCover(t *testing.T, batches [][]int, n, dropped int) {
	t.Helper()
	seen := make([]int, n)
	total := 0
	for _, b := range batches {
		for _, i := range b {
			if i < 0 || i >= n {
				t.Fatalf("index %d out of [0, %d)", i, n)
			}
			seen[i]++
			total++
		}
	}
	for i, k := range seen {
		if k > 1 {
			t.Fatalf("index %d visited %d times", i, k)
		}
	}
	if total != n-dropped {
		t.Fatalf("visited %d of %d indices, want %d", total, n, n-dropped)
	}
}

func TestSampler(t *testing.T) {
	for _, c := range []struct {
		n, batch        int
		dropLast        bool
		steps, lastSize int
	}{
		{10, 3, false, 4, 1},
		{10, 3, true, 3, 3},
		{9, 3, true, 3, 3},
		{9, 3, false, 3, 3},
		{2, 5, true, 0, 0},
		{2, 5, false, 1, 2},
		{0, 4, false, 0, 0},
		{60000, 64, false, 938, 32},
		{60000, 64, true, 937, 64},
	} {
		for _, shuffle := range []bool{false, true} {
			s := NewSampler(c.n, c.batch, 1, shuffle, c.dropLast)
			if s.Steps() != c.steps {
				t.Errorf("%+v: Steps %d, want %d", c, s.Steps(), c.steps)
			}
			for e := range 3 {
				ep := s.Epoch(e)
				if len(ep) != c.steps {
					t.Fatalf("%+v: %d batches, want %d", c, len(ep), c.steps)
				}
				for k, b := range ep {
					want := c.batch
					if k == len(ep)-1 {
						want = c.lastSize
					}
					if len(b) != want {
						t.Fatalf("%+v: batch %d has %d items, want %d", c, k, len(b), want)
					}
				}
				kept := 0
				if c.steps > 0 {
					kept = (c.steps-1)*c.batch + c.lastSize
				}
				checkCover(t, ep, c.n, c.n-kept)
				if !shuffle && !slices.Equal(slices.Concat(ep...), identity(kept)) {
					t.Fatalf("%+v: unshuffled order is not 0..n-1", c)
				}
			}
		}
	}
}

func TestSamplerDeterminism(t *testing.T) {
	a := NewSampler(1000, 32, 42, true, false)
	b := NewSampler(1000, 32, 42, true, false)
	if !slices.EqualFunc(a.Epoch(3), b.Epoch(3), slices.Equal) {
		t.Error("same seed and epoch, different batches")
	}
	if slices.EqualFunc(a.Epoch(0), a.Epoch(1), slices.Equal) {
		t.Error("epochs 0 and 1 have the same order")
	}
	if c := NewSampler(1000, 32, 43, true, false); slices.EqualFunc(a.Epoch(0), c.Epoch(0), slices.Equal) {
		t.Error("seeds 42 and 43 give the same order")
	}
	// Resuming: recomputing the epoch gives the rest of it.
	full := a.Epoch(5)
	if !slices.EqualFunc(full[7:], NewSampler(1000, 32, 42, true, false).Epoch(5)[7:], slices.Equal) {
		t.Error("resumed epoch differs")
	}
}

// TestSamplerGolden pins the permutation, so a change of the generator or
// of the shuffle (which would break resuming old runs) is noticed.
func TestSamplerGolden(t *testing.T) {
	got := slices.Concat(NewSampler(10, 10, 7, true, false).Epoch(2)...)
	want := []int{6, 3, 2, 1, 0, 4, 5, 9, 8, 7}
	if !slices.Equal(got, want) {
		t.Errorf("seed 7 epoch 2: %v, want %v", got, want)
	}
}

func TestSamplerUniform(t *testing.T) {
	// Where item 0 lands over many epochs: roughly uniform over 4 slots.
	var pos [4]int
	s := NewSampler(4, 4, 9, true, false)
	for e := range 4000 {
		pos[slices.Index(s.Epoch(e)[0], 0)]++
	}
	for p, k := range pos {
		if k < 850 || k > 1150 {
			t.Errorf("item 0 at position %d in %d of 4000 epochs", p, k)
		}
	}
}

func TestSamplerPanics(t *testing.T) {
	for _, c := range [][2]int{{10, 0}, {-1, 3}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewSampler(%d, %d) did not panic", c[0], c[1])
				}
			}()
			NewSampler(c[0], c[1], 0, false, false)
		}()
	}
}

func TestRNG(t *testing.T) {
	r := newRNG(1, 2)
	var hist [7]int
	for range 70000 {
		hist[r.intn(7)]++
	}
	for v, k := range hist {
		if k < 9500 || k > 10500 {
			t.Errorf("intn(7) gave %d %d times of 70000", v, k)
		}
	}
	for range 1000 {
		if f := r.float32(); f < 0 || f >= 1 {
			t.Fatalf("float32 %v", f)
		}
		if f := r.float64(); f < 0 || f >= 1 {
			t.Fatalf("float64 %v", f)
		}
		if v := r.between(6, 14); v < 6 || v > 14 {
			t.Fatalf("between %d", v)
		}
	}
}
