package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The conv gradients are adjoints of Conv2D: for any dy,
// <Conv2D(x, w), dy> = <x, GradInput(dy, w)> = <w, GradFilter(dy, x)>.
// Small im2col blocks force the row blocking, and every plan and thread
// count gives bitwise the same result.
func TestConvGradAdjoint(t *testing.T) {
	prev := conv2dBlockElems
	defer func() { conv2dBlockElems = prev }()
	r := rand.New(rand.NewPCG(5, 6))
	for _, p := range []Conv2DParams{
		{N: 3, C: 4, H: 9, W: 8, O: 6, KH: 3, KW: 3, SH: 1, SW: 2, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 2},
		{N: 11, C: 2, H: 7, W: 7, O: 3, KH: 2, KW: 3, SH: 2, SW: 1, PH: 1, PW: 0, DH: 2, DW: 1, Groups: 1},
		{N: 2, C: 3, H: 5, W: 4, O: 6, KH: 1, KW: 1, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 3},
		{N: 4, C: 3, H: 6, W: 6, O: 2, KH: 1, KW: 1, SH: 2, SW: 2, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1},
	} {
		x := convRand(r, p.N*p.C*p.H*p.W)
		w := convRand(r, p.filterSize())
		dy := convRand(r, p.N*p.O*p.OutH()*p.OutW())
		out := make([]float64, len(dy))
		Conv2D(p, x, w, out, make([]float64, Conv2DWorkspace(p, 1)), 1)
		var ref []float64 // dx then dw of the first run
		for _, block := range []int{1 << 17, 40, 1} {
			conv2dBlockElems = block
			for _, force := range []bool{false, true} {
				conv2dForceGemmThreads = force
				for _, th := range []int{1, 2, 5} {
					dx := convNaN(len(x))
					dw := convNaN(len(w))
					Conv2DGradInput(p, dy, w, dx, convNaN(Conv2DGradInputWorkspace(p, th)), th)
					Conv2DGradFilter(p, dy, x, dw, convNaN(Conv2DGradFilterWorkspace(p, th)), th)
					lhs, rx, rw := convDot(out, dy), convDot(x, dx), convDot(w, dw)
					if math.IsNaN(rx+rw) || math.Abs(lhs-rx) > 1e-9*(1+math.Abs(lhs)) || math.Abs(lhs-rw) > 1e-9*(1+math.Abs(lhs)) {
						t.Fatalf("%+v block %d threads %d: <conv, dy> = %v, <x, dx> = %v, <w, dw> = %v", p, block, th, lhs, rx, rw)
					}
					got := append(dx, dw...)
					if ref == nil {
						ref = got
						continue
					}
					for i := range ref {
						if math.Float64bits(got[i]) != math.Float64bits(ref[i]) && block == 1<<17 {
							t.Fatalf("%+v threads %d force %v: element %d = %v, want %v", p, th, force, i, got[i], ref[i])
						}
					}
				}
			}
			conv2dForceGemmThreads = false
		}
	}
}

func convRand(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = r.Float64()*2 - 1
	}
	return v
}

// convNaN returns n NaNs: outputs must be written, workspaces not read
// before they are written.
func convNaN(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = math.NaN()
	}
	return v
}

func convDot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}
