package kernels

import (
	"math"
	"math/rand"
	"testing"
)

// Batch norm's statistics and gradient sums taken piece by piece (pieces
// of whole images, the lanes carried from one to the next) have the bits
// of the whole batch's kernels: the mean, the variance, dscale, dbias and
// dx, on the vector loops (rows of 32 elements and more) and the Go ones,
// in float32 and float64, for any cut of the batch and thread count.
func TestBatchNormSumsContinueCanonically(t *testing.T) {
	cases := []struct {
		name             string
		outer, ch, inner int
		pieces           [][2]int // [lo, hi) of the batch
		threads          int
	}{
		{"tinydet stem", 8, 16, 32 * 32, [][2]int{{0, 4}, {4, 8}}, 2},
		{"rows of 65", 9, 3, 65, [][2]int{{0, 1}, {1, 5}, {5, 9}}, 1},
		{"rows of 7", 6, 5, 7, [][2]int{{0, 3}, {3, 3}, {3, 6}}, 3},
		{"N×C", 10, 4, 1, [][2]int{{0, 2}, {2, 10}}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewSource(4))
			n := c.outer * c.ch * c.inner
			x64, dy64 := make([]float64, n), make([]float64, n)
			for i := range x64 {
				x64[i], dy64[i] = 3+2*r.NormFloat64(), r.NormFloat64()
			}
			x32, dy32 := make([]float32, n), make([]float32, n)
			for i := range x64 {
				x32[i], dy32[i] = float32(x64[i]), float32(dy64[i])
			}
			checkBNPieces(t, c.ch, c.inner, c.pieces, c.threads, x32, dy32)
			checkBNPieces(t, c.ch, c.inner, c.pieces, c.threads, x64, dy64)
		})
	}
}

func checkBNPieces[T nnFloat](t *testing.T, ch, inner int, pieces [][2]int, threads int, x, dy []T) {
	t.Helper()
	outer := len(x) / (ch * inner)
	vec := func() []float64 { return make([]float64, ch) }
	same := func(what string, got, want []float64) {
		t.Helper()
		for i := range want {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("%T %s[%d]: %v in pieces, %v whole", x[0], what, i, got[i], want[i])
			}
		}
	}
	mean, variance := vec(), vec()
	BatchNormStats(x, outer, ch, inner, mean, variance, threads)
	row := ch * inner
	sums, sqdevs := make([]float64, ch*BNStatsWidth), make([]float64, ch*BNStatsWidth)
	for _, p := range pieces {
		BatchNormSumInto(x[p[0]*row:p[1]*row], p[1]-p[0], ch, inner, sums, threads)
	}
	m := vec()
	BatchNormMeanOf(sums, ch, m)
	for _, p := range pieces {
		BatchNormSqDevInto(x[p[0]*row:p[1]*row], p[1]-p[0], ch, inner, m, sqdevs, threads)
	}
	gm, gv := vec(), vec()
	if count := BatchNormStatsOf(sums, sqdevs, ch, gm, gv); count != outer*inner {
		t.Fatalf("count %d, want %d", count, outer*inner)
	}
	same("mean", gm, mean)
	same("variance", gv, variance)

	scale, invStd := vec(), vec()
	for c := range ch {
		scale[c], invStd[c] = 0.5+float64(c), 1/math.Sqrt(variance[c]+1e-5)
	}
	dscale, dbias, dx := vec(), vec(), make([]T, len(x))
	BatchNormGrad(dy, x, outer, ch, inner, scale, mean, invStd, true, dx, dscale, dbias, threads)
	acc := make([]float64, ch*BNGradWidth)
	for _, p := range pieces {
		BatchNormGradSumInto(dy[p[0]*row:p[1]*row], x[p[0]*row:p[1]*row], p[1]-p[0], ch, inner, mean, acc, threads)
	}
	gs, gb := vec(), vec()
	count := BatchNormGradSumsOf(acc, ch, invStd, gs, gb)
	same("dscale", gs, dscale)
	same("dbias", gb, dbias)
	gx := make([]T, len(x))
	for _, p := range pieces {
		lo, hi := p[0]*row, p[1]*row
		BatchNormGradX(dy[lo:hi], x[lo:hi], p[1]-p[0], ch, inner, scale, mean, invStd, gs, gb, count, gx[lo:hi], threads)
	}
	for i := range dx {
		if math.Float64bits(float64(gx[i])) != math.Float64bits(float64(dx[i])) {
			t.Fatalf("%T dx[%d]: %v in pieces, %v whole", x[0], i, gx[i], dx[i])
		}
	}
}
