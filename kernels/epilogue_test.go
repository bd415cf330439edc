package kernels

import (
	"fmt"
	"github.com/gopir/gopir/internal/allocs"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// epiConvShapes reach every forward convolution path: im2col + GEMM
// (float64), the float32 batched GEMM (strided, many output channels,
// small maps, tiles spanning images, transposed, several depth slices),
// the float32 direct kernel (unit strides, few output channels per group
// or a shallow depth), 1×1, grouped and depthwise, one sample and
// several, empty outputs.
var epiConvShapes = []Conv2DParams{
	{N: 3, C: 4, H: 9, W: 8, O: 24, KH: 3, KW: 3, SH: 2, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1},
	{N: 1, C: 3, H: 12, W: 12, O: 20, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1},
	{N: 2, C: 3, H: 10, W: 11, O: 8, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1},
	{N: 4, C: 6, H: 5, W: 5, O: 18, KH: 1, KW: 1, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1},
	{N: 2, C: 8, H: 7, W: 6, O: 8, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 8},
	{N: 3, C: 4, H: 9, W: 9, O: 6, KH: 3, KW: 2, SH: 1, SW: 2, PH: 2, PW: 0, DH: 2, DW: 1, Groups: 2},
	{N: 2, C: 40, H: 4, W: 4, O: 36, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1},
	{N: 3, C: 12, H: 6, W: 6, O: 40, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1}, // batched GEMM, tiles spanning images
	{N: 1, C: 30, H: 2, W: 2, O: 48, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1}, // batched GEMM, transposed
	{N: 2, C: 60, H: 5, W: 7, O: 20, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1}, // two depth slices
	{N: 2, C: 6, H: 9, W: 11, O: 6, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 6},  // depthwise, strided
	{N: 0, C: 3, H: 4, W: 4, O: 5, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1},
	{N: 2, C: 0, H: 4, W: 4, O: 5, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1},
}

// epiCases are the epilogues each shape runs with.
var epiCases = []struct {
	bias, res bool
	act       Activation
}{
	{true, false, ActNone}, {true, false, ActRelu}, {false, true, ActRelu}, {true, true, ActRelu},
	{true, false, ActSigmoid}, {true, false, ActSilu}, {true, true, ActSilu}, {true, false, ActSwish}, {false, false, ActClip},
	{true, true, ActClip},
}

func epiRand[T nnFloat](r *rand.Rand, n int) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = T(r.Float64()*4 - 2)
	}
	return s
}

// epiReference applies bias, residual and activation to out the way the
// unfused ops do: the binary adds, then the exported activation kernels.
func epiReference[T nnFloat](out, bias, res []T, act Activation, lo, hi float64, channels, inner int) {
	for i := range out {
		if bias != nil {
			out[i] = out[i] + bias[(i/inner)%channels]
		}
		if res != nil {
			out[i] = out[i] + res[i]
		}
	}
	switch act {
	case ActRelu:
		if f, ok := any(out).([]float32); ok {
			ReluF32(f, f, 1)
		} else {
			_ = Unary(UnaryRelu, 1, out, out)
		}
	case ActSigmoid:
		_ = Unary(UnarySigmoid, 1, out, out)
	case ActSilu:
		_ = Unary(UnarySilu, 1, out, out)
	case ActSwish:
		s := make([]T, len(out))
		_ = Unary(UnarySigmoid, 1, s, out)
		_ = Binary(BinMul, 1, out, []int{len(out)}, out, []int{len(out)}, s, []int{len(out)})
	case ActClip:
		_ = Clip(1, out, out, T(lo), T(hi))
	}
}

func epiSameBits[T nnFloat](got, want []T) error {
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		if math.Float64bits(g) != math.Float64bits(w) {
			return fmt.Errorf("element %d = %v, want %v", i, got[i], want[i])
		}
	}
	return nil
}

// A convolution with an epilogue gives bit for bit the unfused result on
// every path, for every thread count.
func TestConvEpilogueMatchesUnfused(t *testing.T) {
	testConvEpilogue[float32](t, epiConvShapes)
	testConvEpilogue[float64](t, epiConvShapes)
}

// The batched GEMM's epilogue passes (convEpiSpan) one panel wide, on
// the float32 shapes and on one whose output channels are too many for
// the streaming order (the BLIS order, several row blocks) and whose
// depth takes two slices: still the unfused bits.
func TestConvEpiloguePassesMatchUnfused(t *testing.T) {
	defer func(e int) { convEpiElems = e }(convEpiElems)
	convEpiElems = 1
	big := Conv2DParams{N: 2, C: 57, H: 4, W: 5, O: 690, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1}
	if k := sgemmActive.Load(); gemmStreams(k, big.O, big.C*9) {
		t.Fatalf("%+v streams with kernel %s: pick more output channels", big, k.name)
	}
	testConvEpilogue[float32](t, append([]Conv2DParams{big}, epiConvShapes...))
}

func testConvEpilogue[T nnFloat](t *testing.T, shapes []Conv2DParams) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, p := range shapes {
		ohw := p.OutH() * p.OutW()
		x := epiRand[T](r, p.N*p.C*p.H*p.W)
		w := epiRand[T](r, p.O*max(p.C/p.Groups, 0)*p.KH*p.KW)
		bias := epiRand[T](r, p.O)
		res := epiRand[T](r, p.N*p.O*ohw)
		for _, c := range epiCases {
			for _, th := range []int{1, 2, 3} {
				name := fmt.Sprintf("%T %+v bias=%v res=%v act=%d threads=%d", T(0), p, c.bias, c.res, c.act, th)
				want := make([]T, p.N*p.O*ohw)
				Conv2D(p, x, w, want, make([]T, Conv2DWorkspace(p, th)), th)
				var b, rs []T
				if c.bias {
					b = bias
				}
				if c.res {
					rs = res
				}
				ep := epiOf(c.act, -0.5, 0.75, b, rs)
				epiReference(want, b, rs, c.act, ep.Min, ep.Max, p.O, ohw)
				if err := ep.Check(len(want), p.O, isF32[T]()); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				fp := p
				fp.Epilogue = ep
				got := make([]T, len(want))
				for i := range got {
					got[i] = T(math.NaN())
				}
				Conv2D(fp, x, w, got, make([]T, Conv2DWorkspace(fp, th)), th)
				if err := epiSameBits(got, want); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			}
		}
	}
}

// epiOf is the epilogue with bias and residual of element type T.
func epiOf[T nnFloat](act Activation, lo, hi float64, bias, res []T) Epilogue {
	ep := Epilogue{Act: act, Min: lo, Max: hi}
	if isF32[T]() {
		ep.Bias32, ep.Residual32 = any(bias).([]float32), any(res).([]float32)
	} else {
		ep.Bias64, ep.Residual64 = any(bias).([]float64), any(res).([]float64)
	}
	return ep
}

func isF32[T nnFloat]() bool {
	var z T
	_, ok := any(z).(float32)
	return ok
}

// A matrix product with an epilogue gives bit for bit the unfused result,
// batched or not, for every thread count.
func TestMatmulEpilogueMatchesUnfused(t *testing.T) {
	testMatmulEpilogue[float32](t)
	testMatmulEpilogue[float64](t)
}

func testMatmulEpilogue[T nnFloat](t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, s := range []struct{ batch, m, n, k int }{
		{1, 1, 128, 784}, {1, 64, 10, 128}, {3, 5, 7, 9}, {40, 4, 6, 3}, {1, 3, 4, 0}, {2, 0, 5, 3},
		// Narrow rows added g at a time (epiBiasRows): a group and a
		// remainder (per product of a batch), one group of all rows,
		// whole groups only, a group of 4 rows and one row left; and
		// the rows it leaves to add2D: whole vectors, 64 columns, one row.
		{2, 30, 13, 3}, {1, 61, 3, 4}, {1, 100, 10, 5}, {1, 5, 63, 2}, {1, 9, 16, 2}, {1, 3, 64, 1}, {1, 1, 10, 3},
	} {
		a := epiRand[T](r, s.batch*s.m*s.k)
		b := epiRand[T](r, s.k*s.n)
		aOff, bOff := make([]int, s.batch), make([]int, s.batch)
		for i := range aOff {
			aOff[i] = i * s.m * s.k
		}
		bias := epiRand[T](r, s.n)
		res := epiRand[T](r, s.batch*s.m*s.n)
		for _, c := range epiCases {
			for _, th := range []int{1, 2} {
				name := fmt.Sprintf("%T %+v bias=%v res=%v act=%d threads=%d", T(0), s, c.bias, c.res, c.act, th)
				want := make([]T, s.batch*s.m*s.n)
				MatmulBatched(false, true, s.m, s.n, s.k, a, aOff, b, bOff, want, th)
				var bb, rs []T
				if c.bias {
					bb = bias
				}
				if c.res {
					rs = res
				}
				ep := epiOf(c.act, -1, 0.5, bb, rs)
				epiReference(want, bb, rs, c.act, ep.Min, ep.Max, s.n, 1)
				got := make([]T, len(want))
				MatmulFused(false, true, s.m, s.n, s.k, a, aOff, b, bOff, got, ep, th)
				if err := epiSameBits(got, want); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			}
		}
	}
}

// TestEpiBiasRowsAllocs: adding a bias to narrow rows through the
// repeated-bias buffer makes no Go allocation.
func TestEpiBiasRowsAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("under the race detector sync.Pool drops objects at random")
	}
	for _, n := range []int{10, 13, 63} {
		out, bias := make([]float32, 64*n), make([]float32, n)
		ep := Epilogue{Act: ActRelu, Bias32: bias}
		if got := allocs.PerRun(100, func() { epiRows(&ep, out, n, 0, 64) }); got != 0 {
			t.Errorf("n=%d: %v Go allocations per call, want 0", n, got)
		}
	}
}

// Check refuses what the kernels would misread.
func TestEpilogueCheck(t *testing.T) {
	for _, c := range []struct {
		ep   Epilogue
		f32  bool
		want string
	}{
		{Epilogue{}, true, ""},
		{Epilogue{Bias32: make([]float32, 4)}, true, ""},
		{Epilogue{Bias32: make([]float32, 3)}, true, "bias of 3 elements, want 4"},
		{Epilogue{Bias64: make([]float64, 4)}, true, "other element type"},
		{Epilogue{Residual64: make([]float64, 12)}, false, ""},
		{Epilogue{Residual64: make([]float64, 11)}, false, "residual of 11 elements, want 12"},
		{Epilogue{Act: ActClip + 1}, true, "unknown activation"},
	} {
		err := c.ep.Check(12, 4, c.f32)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: got %v, want %q", c.ep, err, c.want)
		}
	}
}
