package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// poolValuesInput fills n elements with small integers (many ties), some
// −0 and +0, and some NaNs of two payloads, so that the tests see which
// of equal maxima and which NaN a pooling picks.
func poolValuesInput[T nnFloat](r *rand.Rand, n int) []T { return poolValuesInputNaNs[T](r, n, 16) }

// poolValuesInputNaNs is poolValuesInput with NaNs in about 2 elements of
// every oneIn: with few of them most 16-lane vectors hold none, which the
// AVX-512 loops take a faster route for, and some hold one.
func poolValuesInputNaNs[T nnFloat](r *rand.Rand, n, oneIn int) []T {
	x := make([]T, n)
	nan1, nan2 := math.NaN(), math.Float64frombits(0x7ff8000000000123)
	for i := range x {
		k := r.IntN(oneIn)
		if k >= 2 {
			k = 2 + r.IntN(14)
		}
		switch k {
		case 0:
			x[i] = T(nan1)
		case 1:
			x[i] = T(nan2)
		case 2, 3:
			x[i] = T(math.Copysign(0, -1))
		case 4, 5:
			x[i] = 0
		default:
			x[i] = T(r.IntN(4) - 2)
		}
	}
	return x
}

func sameBitsAny[T nnFloat](got, want []T) int {
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		if math.Float64bits(g) != math.Float64bits(w) {
			return i
		}
	}
	return -1
}

// TestMaxPool2DValuesMatchesIndexed checks MaxPool2DValues against
// MaxPool2D's maxima bit for bit, over the windows the models use (2×2
// and 3×3 stride 2, k×k stride 1 with k/2 padding), random others, rows
// long enough for the vector loops and not multiples of 16, both element
// types and 1 and 2 threads.
func TestMaxPool2DValuesMatchesIndexed(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	cases := []Pool2DParams{
		{N: 2, C: 3, H: 32, W: 32, KH: 2, KW: 2, SH: 2, SW: 2},
		{N: 2, C: 3, H: 33, W: 35, KH: 2, KW: 2, SH: 2, SW: 2},
		{N: 2, C: 5, H: 16, W: 17, KH: 2, KW: 2, SH: 2, SW: 2},
		{N: 1, C: 64, H: 16, W: 16, KH: 2, KW: 2, SH: 2, SW: 2},
		{N: 1, C: 3, H: 6, W: 64, KH: 2, KW: 2, SH: 2, SW: 2},  // two whole chunks a row
		{N: 2, C: 2, H: 9, W: 101, KH: 2, KW: 2, SH: 2, SW: 2}, // three whole chunks and two outputs
		{N: 2, C: 3, H: 32, W: 32, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1},
		{N: 1, C: 4, H: 67, W: 71, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1},
		{N: 1, C: 2, H: 20, W: 20, KH: 5, KW: 5, SH: 1, SW: 1, PH: 2, PW: 2},
		{N: 3, C: 45, H: 32, W: 32, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}, // ResNet's, many planes
		{N: 1, C: 3, H: 33, W: 65, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1},  // odd sizes, three chunks a row
		{N: 2, C: 2, H: 7, W: 30, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1},   // a partial chunk
		{N: 2, C: 3, H: 2, W: 31, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1},
		{N: 1, C: 5, H: 1, W: 1, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1},
		{N: 1, C: 5, H: 3, W: 2, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1},
		{N: 1, C: 2, H: 20, W: 37, KH: 9, KW: 9, SH: 1, SW: 1, PH: 4, PW: 4},
		{N: 1, C: 2, H: 13, W: 40, KH: 13, KW: 13, SH: 1, SW: 1, PH: 6, PW: 6},
		{N: 1, C: 1, H: 1, W: 1, KH: 1, KW: 1, SH: 1, SW: 1},
		{N: 1, C: 1, H: 2, W: 2, KH: 2, KW: 2, SH: 1, SW: 1, PH: 1, PW: 1},
	}
	for range 60 {
		kh, kw := 1+r.IntN(6), 1+r.IntN(6)
		cases = append(cases, Pool2DParams{N: 1 + r.IntN(2), C: 1 + r.IntN(3), H: kh + r.IntN(40), W: kw + r.IntN(70),
			KH: kh, KW: kw, SH: 1 + r.IntN(4), SW: 1 + r.IntN(4), PH: r.IntN(kh), PW: r.IntN(kw)})
	}
	for _, p := range cases {
		name := fmt.Sprintf("%dx%d_k%dx%d_s%dx%d_p%dx%d", p.H, p.W, p.KH, p.KW, p.SH, p.SW, p.PH, p.PW)
		checkPoolValues[float32](t, r, p, name)
		checkPoolValues[float64](t, r, p, name)
	}
}

func checkPoolValues[T nnFloat](t *testing.T, r *rand.Rand, p Pool2DParams, name string) {
	t.Helper()
	for _, oneIn := range []int{16, 2000} {
		checkPoolValuesOn(t, p, fmt.Sprintf("%s NaNs 2 in %d", name, oneIn), poolValuesInputNaNs[T](r, p.N*p.C*p.H*p.W, oneIn))
	}
}

func checkPoolValuesOn[T nnFloat](t *testing.T, p Pool2DParams, name string, x []T) {
	t.Helper()
	n := p.N * p.C * p.OutH() * p.OutW()
	want, idx := make([]T, n), make([]int64, n)
	MaxPool2D(p, x, want, idx, 1)
	for _, th := range []int{1, 2} {
		got := make([]T, n)
		for i := range got {
			got[i] = 7 // every output must be written
		}
		MaxPool2DValues(p, x, got, th)
		if i := sameBitsAny(got, want); i >= 0 {
			t.Fatalf("%s %T threads %d: out[%d] = %v (bits %x), want %v", name, x[0], th, i, got[i],
				math.Float64bits(float64(got[i])), want[i])
		}
	}
}

// TestMaxPool2DValuesAllocs checks that repeated calls, serial and
// parallel, make no Go allocation once the scratch pool is warm.
func TestMaxPool2DValuesAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("under the race detector sync.Pool drops objects at random")
	}
	p := Pool2DParams{N: 8, C: 16, H: 32, W: 32, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}
	x := make([]float32, p.N*p.C*p.H*p.W)
	out := make([]float32, p.N*p.C*p.OutH()*p.OutW())
	for _, th := range []int{1, 2} {
		MaxPool2DValues(p, x, out, th)
		if a := testing.AllocsPerRun(20, func() { MaxPool2DValues(p, x, out, th) }); a > 0.5 {
			t.Errorf("threads %d: %.1f allocations per call, want 0", th, a)
		}
	}
}

// BenchmarkMaxPoolValues times max pooling with indices (MaxPool2D) and
// without (MaxPool2DValues) on one thread, for the windows of the models:
// cnn's 2×2, resnet18ish's 3×3 stride 2 (at batch 64 from memory),
// ppyoloe_s's SPP 5, 9 and 13.
func BenchmarkMaxPoolValues(b *testing.B) {
	for _, c := range []struct {
		name string
		p    Pool2DParams
	}{
		{"cnn2x2", Pool2DParams{N: 8, C: 32, H: 32, W: 32, KH: 2, KW: 2, SH: 2, SW: 2}},
		{"cnn2x2b1", Pool2DParams{N: 1, C: 64, H: 16, W: 16, KH: 2, KW: 2, SH: 2, SW: 2}},
		{"resnet3x3s2", Pool2DParams{N: 8, C: 64, H: 32, W: 32, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}},
		{"resnet3x3s2b1", Pool2DParams{N: 1, C: 64, H: 32, W: 32, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}},
		{"resnet3x3s2b64", Pool2DParams{N: 64, C: 64, H: 32, W: 32, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}},
		{"spp5", Pool2DParams{N: 1, C: 256, H: 20, W: 20, KH: 5, KW: 5, SH: 1, SW: 1, PH: 2, PW: 2}},
		{"spp9", Pool2DParams{N: 1, C: 256, H: 20, W: 20, KH: 9, KW: 9, SH: 1, SW: 1, PH: 4, PW: 4}},
		{"spp13", Pool2DParams{N: 1, C: 256, H: 20, W: 20, KH: 13, KW: 13, SH: 1, SW: 1, PH: 6, PW: 6}},
	} {
		p := c.p
		x := perfFill(p.N*p.C*p.H*p.W, 7)
		n := p.N * p.C * p.OutH() * p.OutW()
		out, idx := make([]float32, n), make([]int64, n)
		b.Run(c.name+"/indices", func(b *testing.B) {
			perfLoop(b, func() { MaxPool2D(p, x, out, idx, 1) })
		})
		b.Run(c.name+"/values", func(b *testing.B) {
			perfLoop(b, func() { MaxPool2DValues(p, x, out, 1) })
		})
	}
}
