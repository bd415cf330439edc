package kernels

import (
	"fmt"
	"slices"
	"testing"
)

// BenchmarkTransposeDet times the detector head's transposes, [b, c, hw]
// to [b, hw, c] in 4-byte words (c 68 and 6 on maps of 40×40, 20×20 and
// 10×10), as ops.transpose runs them.
func BenchmarkTransposeDet(b *testing.B) {
	for _, batch := range []int{1, 8} {
		for _, s := range []struct{ c, hw int }{{68, 1600}, {6, 1600}, {68, 400}, {68, 100}} {
			n := batch * s.c * s.hw
			src, dst := make([]uint32, n), make([]uint32, n)
			b.Run(fmt.Sprintf("b=%d/c=%d/hw=%d", batch, s.c, s.hw), func(b *testing.B) {
				b.SetBytes(int64(8 * n))
				for b.Loop() {
					StridedCopy(dst, src, []int{batch, s.hw, s.c}, 0, []int{s.c * s.hw, 1, s.hw}, 1)
				}
			})
		}
	}
}

// TestShpTransposeOct: the blocked transpose, which moves eight rows at a
// time and the rest one by one, gives the naive copy's elements for
// batched [b, c, m] → [b, m, c] transposes of every row count modulo 8
// around the tile (32), the detector head's shapes, and reversed source
// rows (a negative stride), on one to three threads; on one thread it
// makes no Go allocation.
func TestShpTransposeOct(t *testing.T) {
	type shape struct{ b, c, m int }
	var cases []shape
	for m := 1; m <= 41; m++ {
		for _, c := range []int{1, 6, 33} {
			cases = append(cases, shape{2, c, m})
		}
	}
	cases = append(cases, shape{2, 68, 1600}, shape{1, 6, 400}, shape{3, 68, 100}, shape{1, 7, 71})
	for _, s := range cases {
		src := make([]int32, s.b*s.c*s.m)
		for i := range src {
			src[i] = int32(i*2654435761) ^ int32(i)
		}
		for _, rev := range []bool{false, true} {
			shape := []int{s.b, s.m, s.c}
			strides := []int{s.c * s.m, 1, s.m}
			off := 0
			if rev { // row k of the source read from its end
				strides[2], off = -s.m, (s.c-1)*s.m
			}
			want := shpNaiveStrided(src, shape, off, strides)
			for threads := 1; threads <= 3; threads++ {
				got := make([]int32, len(want))
				StridedCopy(got, src, shape, off, strides, threads)
				if !slices.Equal(got, want) {
					t.Fatalf("[%d %d %d] reversed %v threads %d: wrong copy", s.b, s.c, s.m, rev, threads)
				}
			}
			got := make([]int32, len(want))
			if a := testing.AllocsPerRun(5, func() { StridedCopy(got, src, shape, off, strides, 1) }); a != 0 {
				t.Fatalf("[%d %d %d]: %v Go allocations per copy on one thread", s.b, s.c, s.m, a)
			}
		}
	}
}
