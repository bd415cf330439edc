package kernels

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// shpNaiveStrided is StridedCopy written the obvious way.
func shpNaiveStrided(src []int32, shape []int, off int, strides []int) []int32 {
	n := 1
	for _, d := range shape {
		n *= d
	}
	out := make([]int32, n)
	idx := make([]int, len(shape))
	for i := range out {
		p := off
		for k := range shape {
			p += idx[k] * strides[k]
		}
		out[i] = src[p]
		for k := len(shape) - 1; k >= 0; k-- {
			idx[k]++
			if idx[k] < shape[k] {
				break
			}
			idx[k] = 0
		}
	}
	return out
}

func TestShpStridedCopy(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for iter := range 3000 {
		rank := r.IntN(6)
		big := iter%10 == 0
		if big {
			rank = 2 + r.IntN(2)
		}
		shape := make([]int, rank)
		strides := make([]int, rank)
		off, lo, hi := 0, 0, 0
		for k := range shape {
			shape[k] = []int{0, 1, 1, 2, 3, 5, 7, 13}[r.IntN(8)]
			if big {
				shape[k] = 1 + r.IntN(60)
			}
			strides[k] = r.IntN(41) - 20
			if r.IntN(3) == 0 {
				strides[k] = []int{0, 1, -1}[r.IntN(3)]
			}
			if shape[k] > 0 {
				ext := (shape[k] - 1) * strides[k]
				lo, hi = lo+min(ext, 0), hi+max(ext, 0)
			}
		}
		if r.IntN(4) == 0 && rank >= 2 { // a real transpose of contiguous data
			perm := r.Perm(rank)
			st := make([]int, rank)
			s := 1
			for k := rank - 1; k >= 0; k-- {
				st[k] = s
				s *= shape[k]
			}
			sh := slices.Clone(shape)
			for i, p := range perm {
				shape[i], strides[i] = sh[p], st[p]
			}
			lo, hi = 0, max(s-1, 0)
		}
		off = -lo
		src := make([]int32, hi-lo+1)
		for i := range src {
			src[i] = int32(r.Uint32())
		}
		want := shpNaiveStrided(src, shape, off, strides)
		for threads := 1; threads <= 4; threads++ {
			got := make([]int32, len(want))
			StridedCopy(got, src, shape, off, strides, threads)
			if !slices.Equal(got, want) {
				t.Fatalf("shape %v strides %v off %d threads %d: wrong copy", shape, strides, off, threads)
			}
		}
	}
}

func TestShpConcatSplitRows(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	for iter := range 500 {
		outer := r.IntN(5)
		if iter%20 == 0 {
			outer = 1 + r.IntN(3000)
		}
		widths := make([]int, 1+r.IntN(5))
		srcs := make([][]uint8, len(widths))
		for k := range widths {
			widths[k] = []int{0, 1, 2, 3, 7, 40}[r.IntN(6)]
			srcs[k] = make([]uint8, outer*widths[k])
			for i := range srcs[k] {
				srcs[k][i] = uint8(r.Uint32())
			}
		}
		var want []uint8
		for row := range outer {
			for k, w := range widths {
				want = append(want, srcs[k][row*w:(row+1)*w]...)
			}
		}
		for threads := 1; threads <= 4; threads++ {
			got := make([]uint8, len(want))
			ConcatRows(got, srcs, outer, widths, threads)
			if !slices.Equal(got, want) {
				t.Fatalf("concat outer %d widths %v threads %d", outer, widths, threads)
			}
			back := make([][]uint8, len(srcs))
			for k := range back {
				back[k] = make([]uint8, len(srcs[k]))
			}
			SplitRows(back, want, outer, widths, threads)
			for k := range back {
				if !slices.Equal(back[k], srcs[k]) {
					t.Fatalf("split outer %d widths %v threads %d part %d", outer, widths, threads, k)
				}
			}
		}
	}
}

func TestShpTopKPaths(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for range 300 {
		outer, n, inner := 1+r.IntN(4), 1+r.IntN(100), 1+r.IntN(4)
		src := make([]int32, outer*n*inner)
		for i := range src {
			src[i] = int32(r.IntN(6))
		}
		k := r.IntN(n + 1)
		largest := r.IntN(2) == 0
		// The reference: a stable sort of each slice.
		wantV := make([]int32, outer*k*inner)
		wantI := make([]int64, len(wantV))
		for o := range outer {
			for j := range inner {
				ord := make([]int, n)
				for i := range ord {
					ord[i] = i
				}
				slices.SortStableFunc(ord, func(a, b int) int {
					d := int(src[(o*n+b)*inner+j]) - int(src[(o*n+a)*inner+j])
					if !largest {
						d = -d
					}
					return d
				})
				for q := range k {
					wantV[(o*k+q)*inner+j] = src[(o*n+ord[q])*inner+j]
					wantI[(o*k+q)*inner+j] = int64(ord[q])
				}
			}
		}
		for threads := 1; threads <= 3; threads++ {
			v := make([]int32, len(wantV))
			idx := make([]int64, len(wantI))
			TopK(v, idx, src, outer, n, inner, k, largest, make([]int64, TopKScratch(threads, outer, n, inner, k)), threads)
			if !slices.Equal(v, wantV) || !slices.Equal(idx, wantI) {
				t.Fatalf("topk [%d %d %d] k %d largest %v threads %d", outer, n, inner, k, largest, threads)
			}
		}
	}
}

func BenchmarkShpTranspose(b *testing.B) {
	const m, n = 1024, 1536
	src := make([]float32, m*n)
	dst := make([]float32, m*n)
	for _, threads := range []int{1, 2} {
		b.Run("blocked/threads="+string(rune('0'+threads)), func(b *testing.B) {
			b.SetBytes(int64(8 * m * n))
			for b.Loop() {
				StridedCopy(dst, src, []int{n, m}, 0, []int{1, n}, threads)
			}
		})
	}
	b.Run("naive", func(b *testing.B) {
		b.SetBytes(int64(8 * m * n))
		for b.Loop() {
			for i := range n {
				for j := range m {
					dst[i*m+j] = src[j*n+i]
				}
			}
		}
	})
	b.Run("rows/threads=2", func(b *testing.B) {
		b.SetBytes(int64(8 * m * n))
		for b.Loop() {
			StridedCopy(dst, src, []int{m, n}, 0, []int{n, 1}, 2)
		}
	})
}
