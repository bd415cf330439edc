package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// pixelBlock is the channel block of the maps these tests reduce: the
// columns of redAddRows16Vec's vector loop.
const pixelBlock = 16

// TestReduceBlockedPixelsSameBits holds the sum and mean over a blocked
// map's pixels, [N,C/16,H,W,16] over axes 2 and 3, to redOuterRange's
// column sums in float64 (groups of four rows pairwise, then the rest
// one by one), bit for bit, for pixel counts around the groups of four,
// on one thread and two.
func TestReduceBlockedPixelsSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, s := range [][4]int{{1, 1, 1, 1}, {1, 2, 1, 3}, {2, 1, 2, 2}, {1, 3, 1, 5}, {2, 2, 3, 3}, {1, 1, 10, 10}, {1, 3, 80, 80}, {2, 2, 7, 11}} {
		n, cb, h, w := s[0], s[1], s[2], s[3]
		shape := []int{n, cb, h, w, pixelBlock}
		x := make([]float32, ewNumel(shape))
		for i := range x {
			x[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(12)-6)))
		}
		for _, op := range []ReduceOp{ReduceSum, ReduceMean} {
			want := rowSums(x, n*cb, h*w, pixelBlock, op == ReduceMean)
			for _, threads := range []int{1, 2} {
				got := make([]float32, n*cb*pixelBlock)
				if err := Reduce(op, threads, got, x, shape, []int{2, 3}); err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if !sameBits(got[i], want[i]) {
						t.Fatalf("%v op %d threads %d: out[%d] = %v, want %v", shape, op, threads, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// rowSums is the reference: each plane's cols columns summed over its
// count rows as redOuterRange sums them.
func rowSums(x []float32, planes, count, cols int, mean bool) []float32 {
	out := make([]float32, planes*cols)
	for pl := range planes {
		for j := range cols {
			at := func(r int) float64 { return float64(x[(pl*count+r)*cols+j]) }
			var acc float64
			r := 0
			for ; r+4 <= count; r += 4 {
				acc += (at(r) + at(r+1)) + (at(r+2) + at(r+3))
			}
			for ; r < count; r++ {
				acc += at(r)
			}
			if mean {
				acc /= float64(count)
			}
			out[pl*cols+j] = float32(acc)
		}
	}
	return out
}

// TestReduceOuterLastBlock16SameBits checks a reduction over the middle
// dim whose rows end in a column block of 16 (272 = 256 + 16 columns):
// that block takes the vector loop too, the first does not.
func TestReduceOuterLastBlock16SameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	shape := []int{3, 11, 272}
	x := make([]float32, ewNumel(shape))
	for i := range x {
		x[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(12)-6)))
	}
	want := rowSums(x, 3, 11, 272, true)
	got := make([]float32, len(want))
	if err := Reduce(ReduceMean, 1, got, x, shape, []int{1}); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if !sameBits(got[i], want[i]) {
			t.Fatalf("out[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}

// TestReduceBlockedPixelsNoAllocs checks the blocked mean allocates
// nothing.
func TestReduceBlockedPixelsNoAllocs(t *testing.T) {
	shape := []int{1, 12, 20, 20, pixelBlock}
	x, out := make([]float32, ewNumel(shape)), make([]float32, 12*pixelBlock)
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop objects at random")
	}
	for _, threads := range []int{1, 2} {
		if a := testing.AllocsPerRun(50, func() {
			if err := Reduce(ReduceMean, threads, out, x, shape, []int{2, 3}); err != nil {
				t.Fatal(err)
			}
		}); a != 0 {
			t.Fatalf("threads %d: %v allocations per call", threads, a)
		}
	}
}
