package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSoftmaxBits checks Softmax against the textbook loop it must equal
// bit for bit: per line the maximum m, s = Σ exp(x − m) in order, then
// exp(x − m)·(1/s) rounded once. Lines short enough that the kernel keeps
// their exponentials and longer ones, a strided axis, −Inf and NaN
// entries, 1 and 3 threads.
func TestSoftmaxBits(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, c := range []struct{ outer, n, inner int }{{50, 17, 1}, {7, 64, 3}, {5, 65, 1}, {3, 200, 2}, {4, 1, 5}} {
		size := c.outer * c.n * c.inner
		x64 := make([]float64, size)
		for i := range x64 {
			x64[i] = r.NormFloat64() * 4
		}
		x64[3], x64[size/2] = math.Inf(-1), math.NaN()
		x32 := make([]float32, size)
		for i, v := range x64 {
			x32[i] = float32(v)
		}
		for _, th := range []int{1, 3} {
			softmaxBitsCheck(t, x64, c.outer, c.n, c.inner, th)
			softmaxBitsCheck(t, x32, c.outer, c.n, c.inner, th)
		}
	}
}

func softmaxBitsCheck[T nnFloat](t *testing.T, x []T, outer, n, inner, threads int) {
	t.Helper()
	got := make([]T, len(x))
	Softmax(x, got, outer, n, inner, threads)
	for l := range outer * inner {
		base := (l/inner)*n*inner + l%inner
		m := math.Inf(-1)
		for j := range n {
			if v := float64(x[base+j*inner]); v > m || v != v {
				m = v
				if v != v {
					break
				}
			}
		}
		if math.IsInf(m, -1) {
			m = 0
		}
		var s float64
		for j := range n {
			s += math.Exp(float64(x[base+j*inner]) - m)
		}
		inv := 1 / s
		for j := range n {
			k := base + j*inner
			want := T(math.Exp(float64(x[k])-m) * inv)
			if math.Float64bits(float64(got[k])) != math.Float64bits(float64(want)) && !(got[k] != got[k] && want != want) {
				t.Fatalf("%T %d×%d×%d, %d threads: y[%d] = %v, want %v", x, outer, n, inner, threads, k, got[k], want)
			}
		}
	}
}

// BenchmarkSoftmaxDFL times Softmax on ppyoloe_s's box distributions at
// batch 8 and 320×320 (8·2100·4 lines of 17 bins), one thread.
func BenchmarkSoftmaxDFL(b *testing.B) {
	const outer, n = 8 * 2100 * 4, 17
	r := rand.New(rand.NewPCG(23, 24))
	x, y := make([]float32, outer*n), make([]float32, outer*n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 3)
	}
	perfLoop(b, func() { Softmax(x, y, outer, n, 1, 1) })
}
