package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// convGradF32Cases are float32 convolutions for the gradient paths of
// conv_grad_input_conv.go and conv_grad_gemm.go: kernels of several
// sizes, paddings up to the dilated kernel, dilations, groups, strides,
// maps smaller than the kernel's reach and batches spanning the GEMM's
// depth slices.
var convGradF32Cases = []Conv2DParams{
	{N: 3, C: 20, H: 9, W: 11, O: 38, KH: 3, KW: 3, PH: 1, PW: 1},
	{N: 2, C: 40, H: 7, W: 5, O: 33, KH: 3, KW: 3},
	{N: 5, C: 24, H: 10, W: 10, O: 40, KH: 3, KW: 3, PH: 1, PW: 1},
	{N: 1, C: 18, H: 6, W: 13, O: 40, KH: 5, KW: 3, PH: 2, PW: 0, DH: 1, DW: 2},
	{N: 4, C: 34, H: 8, W: 8, O: 36, KH: 3, KW: 3, PH: 2, PW: 2, DH: 2, DW: 2, Groups: 2},
	{N: 2, C: 17, H: 3, W: 4, O: 35, KH: 3, KW: 3, PH: 1, PW: 1},
	{N: 9, C: 20, H: 2, W: 2, O: 50, KH: 3, KW: 3, PH: 1, PW: 1},
	{N: 2, C: 19, H: 12, W: 12, O: 6, KH: 3, KW: 3, PH: 1, PW: 1},
	{N: 3, C: 20, H: 11, W: 9, O: 24, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1},
	{N: 2, C: 36, H: 40, W: 40, O: 40, KH: 3, KW: 3, PH: 1, PW: 1},
	{N: 3, C: 30, H: 7, W: 7, O: 20, KH: 1, KW: 1},
	{N: 2, C: 20, H: 9, W: 9, O: 26, KH: 2, KW: 4, PH: 1, PW: 3},
	{N: 2, C: 20, H: 9, W: 9, O: 16, KH: 3, KW: 3, PH: 1, PW: 1},
	{N: 7, C: 20, H: 12, W: 12, O: 32, KH: 3, KW: 3, PH: 1, PW: 1},
	{N: 2, C: 9, H: 5, W: 70, O: 12, KH: 3, KW: 3, PH: 1, PW: 1},
	{N: 3, C: 9, H: 4, W: 66, O: 16, KH: 3, KW: 3, PH: 1, PW: 1}, // a wide map: the GEMM from 16 output channels
}

// TestConvGradF32MatchesReference checks Conv2DGradInput and
// Conv2DGradFilter on float32 against float64 sums within float32
// rounding, for 1, 2 and 3 threads, which must agree bitwise; every
// element of the gradient must be written and the workspace (NaNs) must
// not be read before it is written.
func TestConvGradF32MatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	asConv := 0
	asGemm := 0
	for _, p := range convGradF32Cases {
		p = convGemmParams(p)
		if _, ok := p.gradInputConv(); ok {
			asConv++
		}
		if p.convFilterGemmOK() {
			asGemm++
		}
		x := perfRandom(r, p.N*p.C*p.H*p.W, false)
		w := perfRandom(r, p.filterSize(), false)
		dy := perfRandom(r, p.N*p.O*p.OutH()*p.OutW(), false)
		_, _, dx, dxMag, dw, dwMag := perfConvRef(p, x, w, dy)
		check := func(what string, got []float32, want, mag []float64) {
			t.Helper()
			for i := range want {
				if d := math.Abs(float64(got[i]) - want[i]); !(d <= 1e-5*mag[i]+1e-30) {
					t.Fatalf("%s %+v: [%d] = %v, want %v (±%g)", what, p, i, got[i], want[i], 1e-5*mag[i])
				}
			}
		}
		var prevDX, prevDW []float32
		for _, th := range []int{1, 2, 3} {
			gx := convNaN32(len(x))
			Conv2DGradInput(p, dy, w, gx, convNaN32(Conv2DGradInputWorkspaceFor(p, th, true)), th)
			check("input gradient", gx, dx, dxMag)
			gw := convNaN32(len(w))
			Conv2DGradFilter(p, dy, x, gw, convNaN32(Conv2DGradFilterWorkspaceFor(p, th, true)), th)
			check("filter gradient", gw, dw, dwMag)
			if prevDX != nil {
				perfSameBits(t, "input gradient threads", gx, prevDX)
				perfSameBits(t, "filter gradient threads", gw, prevDW)
			}
			prevDX, prevDW = gx, gw
		}
	}
	if asConv < 6 {
		t.Fatalf("only %d cases take the input gradient as a convolution", asConv)
	}
	if !convGemmParams(convGradF32Cases[len(convGradF32Cases)-1]).convFilterGemmOK() {
		t.Fatal("the wide map's filter gradient does not take the batched GEMM")
	}
	if asGemm < 8 {
		t.Fatalf("only %d cases take the filter gradient's batched GEMM", asGemm)
	}
}

func convNaN32(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(math.NaN())
	}
	return v
}

// TestConvFilterGemmAllocatesNothing: once warm, a one-goroutine filter
// gradient on the batched GEMM makes no Go heap allocation (its job and
// buffers come from pools), like Conv2D's.
func TestConvFilterGemmAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop objects at random")
	}
	for _, q := range []Conv2DParams{
		{N: 3, C: 20, H: 9, W: 11, O: 34, KH: 3, KW: 3, PH: 1, PW: 1},
		{N: 9, C: 8, H: 16, W: 16, O: 32, KH: 3, KW: 3, PH: 1, PW: 1}, // groups of several slices: a partial sum's scratch
	} {
		p := convGemmParams(q)
		if !p.convFilterGemmOK() {
			t.Fatalf("%+v does not take the batched GEMM", p)
		}
		dy := make([]float32, p.N*p.O*p.OutH()*p.OutW())
		x := make([]float32, p.N*p.C*p.H*p.W)
		dw := make([]float32, p.filterSize())
		if n := testing.AllocsPerRun(100, func() { Conv2DGradFilter(p, dy, x, dw, nil, 1) }); n != 0 {
			t.Errorf("%+v: %v allocations per call", p, n)
		}
	}
}
