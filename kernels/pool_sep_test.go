package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestMaxPool2DSeparableMatchesScan checks MaxPool2D on windows of
// maxPoolSepMin or more elements (the separable path) against the row-major window scan,
// maxima bitwise and indices equal, with ties, ±0 and NaNs, SPP's windows
// and random ones, f32 and f64, 1 and 2 threads.
func TestMaxPool2DSeparableMatchesScan(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	cases := []Pool2DParams{
		{N: 1, C: 3, H: 20, W: 20, KH: 5, KW: 5, SH: 1, SW: 1, PH: 2, PW: 2},
		{N: 1, C: 3, H: 20, W: 21, KH: 9, KW: 9, SH: 1, SW: 1, PH: 4, PW: 4},
		{N: 2, C: 2, H: 13, W: 10, KH: 13, KW: 13, SH: 1, SW: 1, PH: 6, PW: 6},
		{N: 1, C: 1, H: 4, W: 4, KH: 4, KW: 4, SH: 4, SW: 4},
	}
	for range 40 {
		kh, kw := 1+r.IntN(9), 1+r.IntN(9)
		if kh*kw < maxPoolSepMin {
			kh = 4
			kw = 4 + r.IntN(4)
		}
		cases = append(cases, Pool2DParams{N: 1 + r.IntN(2), C: 1 + r.IntN(3), H: kh + r.IntN(20), W: kw + r.IntN(20),
			KH: kh, KW: kw, SH: 1 + r.IntN(3), SW: 1 + r.IntN(3), PH: r.IntN(kh), PW: r.IntN(kw)})
	}
	for _, p := range cases {
		name := fmt.Sprintf("%dx%d_k%dx%d_s%dx%d_p%dx%d", p.H, p.W, p.KH, p.KW, p.SH, p.SW, p.PH, p.PW)
		checkSepPool[float32](t, r, p, name)
		checkSepPool[float64](t, r, p, name)
	}
}

func checkSepPool[T nnFloat](t *testing.T, r *rand.Rand, p Pool2DParams, name string) {
	t.Helper()
	x := poolValuesInput[T](r, p.N*p.C*p.H*p.W)
	oh, ow := p.OutH(), p.OutW()
	n := p.N * p.C * oh * ow
	want, wantIdx := make([]T, n), make([]int64, n)
	for pl := range p.N * p.C {
		xp := x[pl*p.H*p.W:]
		for y := range oh {
			for xo := range ow {
				bi := windowMax(&p, xp, y, xo)
				o := pl*oh*ow + y*ow + xo
				want[o], wantIdx[o] = xp[bi], int64(bi)
			}
		}
	}
	for _, th := range []int{1, 2} {
		got, gotIdx := make([]T, n), make([]int64, n)
		MaxPool2D(p, x, got, gotIdx, th)
		if i := sameBitsAny(got, want); i >= 0 {
			t.Fatalf("%s %T threads %d: out[%d] = %v, want %v", name, x[0], th, i, got[i], want[i])
		}
		for i := range wantIdx {
			if gotIdx[i] != wantIdx[i] {
				t.Fatalf("%s %T threads %d: index %d = %d, want %d", name, x[0], th, i, gotIdx[i], wantIdx[i])
			}
		}
	}
}
