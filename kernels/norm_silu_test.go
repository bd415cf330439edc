package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBatchNormSiluInPlace: the fused loops give the same bits writing z
// over x and dx over dz as into buffers of their own, over row lengths
// around the chunk (256) and the vector blocks, for 1 and 3 threads.
func TestBatchNormSiluInPlace(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	for _, sh := range [][3]int{{2, 3, 7}, {3, 2, 32}, {2, 4, 255}, {2, 3, 256}, {3, 2, 257}, {2, 2, 600}} {
		outer, ch, inner := sh[0], sh[1], sh[2]
		n := outer * ch * inner
		x, dz := perfRandom(r, n, false), perfRandom(r, n, false)
		a, b, scale, mean, invStd := make([]float64, ch), make([]float64, ch), make([]float64, ch), make([]float64, ch), make([]float64, ch)
		for c := range ch {
			a[c], b[c], scale[c] = 4*r.Float64()-2, r.Float64()-0.5, r.Float64()+0.5
			mean[c], invStd[c] = r.Float64()-0.5, r.Float64()+0.5
		}
		for _, th := range []int{1, 3} {
			z := make([]float32, n)
			BatchNormSiluApply(x, z, outer, ch, inner, a, b, th)
			zIn := append([]float32(nil), x...)
			BatchNormSiluApply(zIn, zIn, outer, ch, inner, a, b, th)
			dx := make([]float32, n)
			ds, db := make([]float64, ch), make([]float64, ch)
			BatchNormSiluGrad(dz, x, outer, ch, inner, a, b, scale, mean, invStd, dx, ds, db, th)
			dxIn := append([]float32(nil), dz...)
			ds2, db2 := make([]float64, ch), make([]float64, ch)
			BatchNormSiluGrad(dxIn, x, outer, ch, inner, a, b, scale, mean, invStd, dxIn, ds2, db2, th)
			for i := range n {
				if math.Float32bits(z[i]) != math.Float32bits(zIn[i]) || math.Float32bits(dx[i]) != math.Float32bits(dxIn[i]) {
					t.Fatalf("%v, %d threads, element %d: z %g / %g in place, dx %g / %g in place", sh, th, i, z[i], zIn[i], dx[i], dxIn[i])
				}
			}
			for c := range ch {
				if ds[c] != ds2[c] || db[c] != db2[c] {
					t.Fatalf("%v, %d threads, channel %d: dscale %g / %g, dbias %g / %g in place", sh, th, c, ds[c], ds2[c], db[c], db2[c])
				}
			}
			// z is silu of the rounded y, element by element.
			for i := range n {
				c := (i / inner) % ch
				y := float32(float64(x[i])*a[c] + b[c])
				want := float32(ewSilu(float64(y)))
				if d := math.Abs(float64(z[i] - want)); d > 2e-7*math.Max(1, math.Abs(float64(want))) {
					t.Fatalf("%v element %d: z %g, silu(y) %g", sh, i, z[i], want)
				}
			}
		}
	}
}
