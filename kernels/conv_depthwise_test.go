package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestConvDepthwiseMatchesReference checks depthwise Conv2D (float32:
// the vector kernel where there is one, else the Go loop; float64: the Go
// loop) against float64 sums, over strides, paddings wider than the
// kernel, dilations, widths around the 16-lane rows and kernels with more
// taps than the kernel's table on the stack, for 1, 2 and 3 threads
// (bitwise the same); every output element must be written.
func TestConvDepthwiseMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, tc := range []struct {
		name string
		p    Conv2DParams
	}{
		{"3x3", Conv2DParams{N: 2, C: 5, H: 9, W: 11, KH: 3, KW: 3, PH: 1, PW: 1}},
		{"3x3_stride2", Conv2DParams{N: 3, C: 4, H: 13, W: 17, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}},
		{"5x5_stride2_wide", Conv2DParams{N: 1, C: 3, H: 8, W: 70, KH: 5, KW: 5, SH: 2, SW: 2, PH: 2, PW: 2}},
		{"stride3_rect", Conv2DParams{N: 2, C: 6, H: 10, W: 23, KH: 2, KW: 4, SH: 3, SW: 3, PH: 1, PW: 2}},
		{"strides_differ", Conv2DParams{N: 2, C: 2, H: 12, W: 19, KH: 3, KW: 3, SH: 1, SW: 2, PH: 1, PW: 0}},
		{"dilated", Conv2DParams{N: 2, C: 3, H: 11, W: 33, KH: 3, KW: 3, PH: 2, PW: 2, DH: 2, DW: 2}},
		{"dilated_stride2", Conv2DParams{N: 1, C: 3, H: 12, W: 21, KH: 3, KW: 2, SH: 2, SW: 2, PH: 1, PW: 3, DH: 2, DW: 3}},
		{"pad_wider", Conv2DParams{N: 2, C: 2, H: 3, W: 4, KH: 3, KW: 3, PH: 4, PW: 5}},
		{"9x9_many_taps", Conv2DParams{N: 1, C: 2, H: 12, W: 16, KH: 9, KW: 9, PH: 4, PW: 4}},
		{"1x1", Conv2DParams{N: 3, C: 7, H: 5, W: 6, KH: 1, KW: 1}},
		{"width16_tall", Conv2DParams{N: 1, C: 3, H: 20, W: 16, KH: 3, KW: 3, PH: 1, PW: 1}},
	} {
		p := convGemmParams(tc.p)
		p.O, p.Groups = p.C, p.C
		if p.fwdAlgo(true) != convDepthwise || p.fwdAlgo(false) != convDepthwise {
			t.Fatalf("%s: %+v does not take the depthwise kernel", tc.name, p)
		}
		x := perfRandom(r, p.N*p.C*p.H*p.W, false)
		w := perfRandom(r, p.O*p.KH*p.KW, false)
		want, mag, _, _, _, _ := perfConvRef(p, x, w, make([]float32, p.N*p.O*p.OutH()*p.OutW()))
		x64, w64 := make([]float64, len(x)), make([]float64, len(w))
		for i, v := range x {
			x64[i] = float64(v)
		}
		for i, v := range w {
			w64[i] = float64(v)
		}
		var first []float32
		for _, th := range []int{1, 2, 3} {
			what := fmt.Sprintf("%s/threads=%d", tc.name, th)
			got := make([]float32, len(want))
			for i := range got {
				got[i] = float32(math.NaN())
			}
			Conv2D(p, x, w, got, make([]float32, Conv2DWorkspaceFor(p, th, true)), th)
			got64 := make([]float64, len(want))
			for i := range got64 {
				got64[i] = math.NaN()
			}
			Conv2D(p, x64, w64, got64, make([]float64, Conv2DWorkspaceFor(p, th, false)), th)
			for i := range want {
				if d := math.Abs(float64(got[i]) - want[i]); !(d <= 1e-5*mag[i]+1e-30) {
					t.Fatalf("%s float32: [%d] = %v, want %v (±%g)", what, i, got[i], want[i], 1e-5*mag[i])
				}
				if d := math.Abs(got64[i] - want[i]); !(d <= 1e-12*mag[i]+1e-300) {
					t.Fatalf("%s float64: [%d] = %v, want %v", what, i, got64[i], want[i])
				}
			}
			if first == nil {
				first = got
			} else {
				perfSameBits(t, what, got, first)
			}
		}
	}
}

// BenchmarkConvDepthwise compares the depthwise kernel with im2col on
// MobileNet-like layers (3×3, batch 8), GOMAXPROCS threads; with -cpu 1
// the cpu-ns/op metric (perfLoop) is the steadier figure.
func BenchmarkConvDepthwise(b *testing.B) {
	for _, l := range []struct {
		name string
		p    Conv2DParams
	}{
		{"c32_56x56", Conv2DParams{N: 8, C: 32, H: 56, W: 56, KH: 3, KW: 3, PH: 1, PW: 1}},
		{"c96_56x56_s2", Conv2DParams{N: 8, C: 96, H: 56, W: 56, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}},
		{"c384_14x14", Conv2DParams{N: 8, C: 384, H: 14, W: 14, KH: 3, KW: 3, PH: 1, PW: 1}},
	} {
		for _, algo := range []convAlgo{convIm2col, convDepthwise} {
			b.Run(fmt.Sprintf("%s/%s", l.name, map[convAlgo]string{convIm2col: "im2col", convDepthwise: "depthwise"}[algo]), func(b *testing.B) {
				p := convGemmParams(l.p)
				p.O, p.Groups = p.C, p.C
				convForce.set, convForce.algo = true, algo
				defer func() { convForce.set = false }()
				threads := runtime.GOMAXPROCS(0)
				r := rand.New(rand.NewPCG(1, 2))
				x := perfRandom(r, p.N*p.C*p.H*p.W, false)
				w := perfRandom(r, p.O*p.KH*p.KW, false)
				out := make([]float32, p.N*p.O*p.OutH()*p.OutW())
				ws := make([]float32, Conv2DWorkspaceFor(p, threads, true))
				perfLoop(b, func() { Conv2D(p, x, w, out, ws, threads) })
			})
		}
	}
}
