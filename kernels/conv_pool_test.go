package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gopir/gopir/internal/allocs"
)

// TestConv2DPoolMatchesTwoOps checks Conv2D with Pool2 against Conv2D
// followed by MaxPool2DValues, bit for bit (NaN payloads included), on
// the direct kernel's block-by-block path and on the others' (the GEMM,
// im2col, float64, an epilogue the kernel leaves to the passes), with odd
// output sizes, groups and 1 and 2 threads; and that the direct path is
// the one taken where it should be, pooling in its registers
// (convPoolRegs) where every call has an even number of rows of whole
// 16-column chunks.
func TestConv2DPoolMatchesTwoOps(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	for _, tc := range []struct {
		p      Conv2DParams
		direct bool // on AVX-512, with a bias and ReLU
		regs   bool // and pooled in the kernel's registers
	}{
		{Conv2DParams{N: 3, C: 3, H: 32, W: 32, O: 32, KH: 3, KW: 3, PH: 1, PW: 1}, true, true},               // the small CNN's first layer
		{Conv2DParams{N: 8, C: 32, H: 16, W: 16, O: 64, KH: 3, KW: 3, PH: 1, PW: 1}, true, true},              // its second, on the direct kernel
		{Conv2DParams{N: 1, C: 32, H: 16, W: 16, O: 64, KH: 3, KW: 3, PH: 1, PW: 1}, true, true},              // batch 1 too
		{Conv2DParams{N: 1, C: 32, H: 8, W: 16, O: 64, KH: 3, KW: 3, PH: 1, PW: 1}, false, false},             // 128 positions: the GEMM
		{Conv2DParams{N: 2, C: 5, H: 13, W: 21, O: 23, KH: 3, KW: 3, PH: 1, PW: 1}, true, false},              // odd sizes, 16 + 7 channels
		{Conv2DParams{N: 3, C: 8, H: 7, W: 17, O: 10, KH: 3, KW: 3, PH: 1, PW: 1, Groups: 2}, true, false},    // groups
		{Conv2DParams{N: 2, C: 5, H: 16, W: 16, O: 12, KH: 3, KW: 3, PH: 1, PW: 1}, true, true},               // tiles of 6 channels × 4 rows
		{Conv2DParams{N: 2, C: 6, H: 8, W: 32, O: 20, KH: 3, KW: 3, PH: 1, PW: 1, Groups: 2}, true, true},     // groups, tiles of 5 × 4
		{Conv2DParams{N: 1, C: 4, H: 12, W: 32, O: 16, KH: 3, KW: 3, PH: 1, PW: 1}, true, false},              // tiles of 3 rows
		{Conv2DParams{N: 2, C: 3, H: 16, W: 24, O: 16, KH: 3, KW: 3, PH: 1, PW: 1}, true, false},              // a last chunk of 8 columns
		{Conv2DParams{N: 2, C: 4, H: 9, W: 9, O: 24, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}, false, false}, // strided: not direct
		{Conv2DParams{N: 2, C: 3, H: 3, W: 2, O: 4, KH: 1, KW: 1}, false, false},                              // 1×1
	} {
		p := convGemmParams(tc.p)
		x := perfRandom(r, p.N*p.C*p.H*p.W, true)
		w := perfRandom(r, p.O*p.C/p.Groups*p.KH*p.KW, false)
		bias := perfRandom(r, p.O, true)
		for _, ep := range []Epilogue{{Act: ActRelu, Bias32: bias}, {Bias32: bias}, {Act: ActSigmoid, Bias32: bias}, {}} {
			for _, th := range []int{1, 2} {
				fp := p
				fp.Epilogue = ep
				pp := fp.convPoolParams()
				full := make([]float32, p.N*p.O*p.OutH()*p.OutW())
				Conv2D(fp, x, w, full, make([]float32, Conv2DWorkspaceFor(fp, th, true)), th)
				want := make([]float32, pp.N*pp.C*pp.OutH()*pp.OutW())
				MaxPool2DValues(pp, full, want, th)
				fp.Pool2 = true
				direct := tc.direct && convRowOK() && fp.convDirectEpi()
				if fp.convPoolDirect(true) != direct {
					t.Fatalf("%+v: pooled on the direct kernel %v, want %v", p, fp.convPoolDirect(true), direct)
				}
				if regs := direct && tc.regs; (direct && fp.convPoolRegs()) != regs {
					t.Fatalf("%+v: pooled in registers %v, want %v", p, fp.convPoolRegs(), regs)
				}
				got := make([]float32, len(want))
				for i := range got {
					got[i] = float32(math.NaN())
				}
				Conv2D(fp, x, w, got, make([]float32, Conv2DWorkspaceFor(fp, th, true)), th)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%+v threads %d act %d: out[%d] = %#x, want %#x", p, th, ep.Act, i, math.Float32bits(got[i]), math.Float32bits(want[i]))
					}
				}
			}
		}
		// float64 takes the two-step path.
		x64, w64 := make([]float64, len(x)), make([]float64, len(w))
		for i, v := range x {
			x64[i] = float64(v)
		}
		for i, v := range w {
			w64[i] = float64(v)
		}
		fp := p
		pp := fp.convPoolParams()
		full := make([]float64, p.N*p.O*p.OutH()*p.OutW())
		Conv2D(fp, x64, w64, full, make([]float64, Conv2DWorkspaceFor(fp, 2, false)), 2)
		want := make([]float64, pp.N*pp.C*pp.OutH()*pp.OutW())
		MaxPool2DValues(pp, full, want, 2)
		fp.Pool2 = true
		got := make([]float64, len(want))
		Conv2D(fp, x64, w64, got, make([]float64, Conv2DWorkspaceFor(fp, 2, false)), 2)
		for i := range want {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("%+v float64: out[%d] = %v, want %v", p, i, got[i], want[i])
			}
		}
	}
}

// TestConv2DPoolWindowRule feeds the pool values it must choose among
// exactly (a 1×1 convolution by 1 plus a bias of −0 passes them through
// unchanged): NaNs with different payloads, ties, ±0, so that the first
// NaN of a window, else its first maximum, must win as in
// MaxPool2DValues, on the fused kernel's paths: the scratch block (35
// columns) and the registers (32), there with NaNs in every tile and in
// one (the VMAXPS path elsewhere).
func TestConv2DPoolWindowRule(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	negZero := float32(math.Copysign(0, -1))
	nans := []float32{math.Float32frombits(0x7fc00001), math.Float32frombits(0xffc00002)}
	vals := append([]float32{1, 1, negZero, 0, negZero, 0, 0, negZero, -1}, nans...)
	for _, tc := range []struct {
		p    Conv2DParams
		nans int // NaNs placed at random; all: drawn with the other values
		regs bool
	}{
		{Conv2DParams{N: 2, C: 1, H: 9, W: 35, O: 3, KH: 1, KW: 1, PH: 1, PW: 1}, -1, false},
		{Conv2DParams{N: 2, C: 1, H: 10, W: 30, O: 3, KH: 1, KW: 1, PH: 1, PW: 1}, -1, true},
		{Conv2DParams{N: 2, C: 1, H: 10, W: 30, O: 3, KH: 1, KW: 1, PH: 1, PW: 1}, 1, true},
	} {
		testConv2DPoolWindows(t, r, tc.p, vals, nans, tc.nans, tc.regs)
	}
}

func testConv2DPoolWindows(t *testing.T, r *rand.Rand, p Conv2DParams, vals, nans []float32, nNaN int, regs bool) {
	p = convGemmParams(p)
	x := make([]float32, p.N*p.C*p.H*p.W)
	drawn := len(vals) - len(nans) // the NaNs are placed after
	if nNaN < 0 {
		drawn = len(vals)
	}
	for i := range x {
		x[i] = vals[r.IntN(drawn)]
	}
	for range max(nNaN, 0) {
		x[r.IntN(len(x))] = nans[r.IntN(len(nans))]
	}
	w := []float32{1, 1, 1}
	negZero := float32(math.Copysign(0, -1))
	for _, act := range []Activation{ActNone, ActRelu} {
		fp := p
		fp.Epilogue = Epilogue{Act: act, Bias32: []float32{negZero, negZero, negZero}}
		full := make([]float32, p.N*p.O*p.OutH()*p.OutW())
		Conv2D(fp, x, w, full, make([]float32, Conv2DWorkspaceFor(fp, 1, true)), 1)
		pp := fp.convPoolParams()
		want := make([]float32, pp.N*pp.C*pp.OutH()*pp.OutW())
		MaxPool2DValues(pp, full, want, 1)
		fp.Pool2 = true
		if convRowOK() && (!fp.convPoolDirect(true) || fp.convPoolRegs() != regs) {
			t.Fatalf("%+v: not pooled on the direct kernel, or in registers %v, want %v", fp, fp.convPoolRegs(), regs)
		}
		got := make([]float32, len(want))
		Conv2D(fp, x, w, got, make([]float32, Conv2DWorkspaceFor(fp, 1, true)), 1)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%+v act %d: out[%d] = %#x, want %#x", p, act, i, math.Float32bits(got[i]), math.Float32bits(want[i]))
			}
		}
	}
}

// TestConv2DPoolEmptyAndNoAllocs runs Conv2D with Pool2 where there is
// nothing to write (no images, no channels, a convolution output or a
// pool output that is empty) and checks that a call on either path makes
// no Go allocation: its scratch is the workspace Conv2DWorkspaceFor
// declares.
func TestConv2DPoolEmptyAndNoAllocs(t *testing.T) {
	for _, p := range []Conv2DParams{
		{N: 0, C: 3, H: 8, W: 8, O: 16, KH: 3, KW: 3, PH: 1, PW: 1},
		{N: 2, C: 3, H: 8, W: 8, O: 0, KH: 3, KW: 3, PH: 1, PW: 1},
		{N: 2, C: 3, H: 2, W: 8, O: 16, KH: 3, KW: 3},        // no output rows
		{N: 2, C: 3, H: 1, W: 8, O: 16, KH: 1, KW: 3, PH: 0}, // one output row: an empty pool
		{N: 2, C: 3, H: 8, W: 3, O: 16, KH: 3, KW: 3, PW: 0}, // one output column
	} {
		p = convGemmParams(p)
		p.Pool2 = true
		p.Epilogue = Epilogue{Act: ActRelu, Bias32: make([]float32, p.O)}
		pp := p.convPoolParams()
		out := make([]float32, pp.N*pp.C*pp.OutH()*pp.OutW())
		if len(out) != 0 {
			t.Fatalf("%+v: %d pooled elements, want 0", p, len(out))
		}
		Conv2D(p, make([]float32, p.N*p.C*p.H*p.W), make([]float32, p.O*p.C*p.KH*p.KW), out, make([]float32, Conv2DWorkspaceFor(p, 2, true)), 2)
	}
	if raceEnabled {
		return // the race detector makes sync.Pool drop objects at random
	}
	for _, p := range []Conv2DParams{
		{N: 2, C: 3, H: 32, W: 32, O: 32, KH: 3, KW: 3, PH: 1, PW: 1},  // direct
		{N: 1, C: 32, H: 16, W: 16, O: 64, KH: 3, KW: 3, PH: 1, PW: 1}, // the GEMM, then the pool
	} {
		p = convGemmParams(p)
		p.Pool2 = true
		p.Epilogue = Epilogue{Act: ActRelu, Bias32: perfFill(p.O, 3)}
		x, w := perfFill(p.N*p.C*p.H*p.W, 7), perfFill(p.O*p.C*p.KH*p.KW, 5)
		pp := p.convPoolParams()
		out := make([]float32, pp.N*pp.C*pp.OutH()*pp.OutW())
		for _, th := range []int{1, 2} {
			ws := make([]float32, Conv2DWorkspaceFor(p, th, true))
			Conv2D(p, x, w, out, ws, th)
			if a := allocs.PerRun(20, func() { Conv2D(p, x, w, out, ws, th) }); a != 0 {
				t.Errorf("%+v threads %d: %v allocations per call, want 0", p, th, a)
			}
		}
	}
}
