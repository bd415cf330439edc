package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestWinogradRefMatchesDirect holds the F(2×2, 3×3) definition
// (winograd.go) to the direct sum computed in float64: every output within
// 1e-6 of the sum of its products' magnitudes — float32 rounding of the
// transforms, not a wrong matrix (a sign flipped in Bᵀ, G or Aᵀ is off by
// the size of a product). Odd sizes cover the last tile's clipped row and
// column.
func TestWinogradRefMatchesDirect(t *testing.T) {
	for _, tc := range []struct{ n, c, h, w, o, ph, pw int }{
		{1, 1, 4, 4, 1, 0, 0},
		{1, 3, 8, 8, 4, 1, 1},
		{2, 5, 7, 9, 3, 1, 1},
		{1, 32, 16, 16, 8, 1, 1},
		{1, 4, 6, 5, 2, 0, 1},
	} {
		rng := rand.New(rand.NewPCG(1, uint64(tc.c)))
		x := make([]float32, tc.n*tc.c*tc.h*tc.w)
		w := make([]float32, tc.o*tc.c*9)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		for i := range w {
			w[i] = float32(rng.NormFloat64())
		}
		oh, ow := tc.h+2*tc.ph-2, tc.w+2*tc.pw-2
		got := make([]float32, tc.n*tc.o*oh*ow)
		winogradConvRef(x, w, got, tc.n, tc.c, tc.h, tc.w, tc.o, tc.ph, tc.pw)
		worst := 0.0
		for s := range tc.n {
			for oi := range tc.o {
				for i := range oh {
					for j := range ow {
						var sum, mag float64
						for ci := range tc.c {
							for r := range 3 {
								for q := range 3 {
									iy, ix := i+r-tc.ph, j+q-tc.pw
									if iy < 0 || iy >= tc.h || ix < 0 || ix >= tc.w {
										continue
									}
									p := float64(x[((s*tc.c+ci)*tc.h+iy)*tc.w+ix]) * float64(w[(oi*tc.c+ci)*9+3*r+q])
									sum += p
									mag += math.Abs(p)
								}
							}
						}
						g := float64(got[((s*tc.o+oi)*oh+i)*ow+j])
						if e := math.Abs(g-sum) / max(mag, 1e-30); e > worst {
							worst = e
						}
						if math.Abs(g-sum) > 1e-6*mag+1e-30 {
							t.Fatalf("%+v: out[%d,%d,%d,%d] = %v, direct sum %v (magnitudes %v)", tc, s, oi, i, j, g, sum, mag)
						}
					}
				}
			}
		}
		t.Logf("%+v: worst error / Σ|products| %.2g", tc, worst)
	}
}
