package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// winoCase is one shape of the Winograd tests.
type winoCase struct{ n, c, h, w, o, pad int }

var winoCases = []winoCase{
	{1, 32, 16, 16, 64, 1}, // the small CNN's second layer
	{1, 3, 32, 32, 32, 1},  // its first
	{2, 5, 7, 9, 3, 1},     // odd sizes: last partial tiles
	{3, 7, 6, 5, 17, 0},    // no padding, O past a panel of rows
	{1, 4, 9, 11, 6, 2},    // padding 2
	{2, 300, 5, 6, 20, 1},  // a depth of two GEMM slices
	{1, 2, 3, 3, 1, 1},     // one tile
	{1, 6, 40, 38, 9, 1},   // several chunks per sample
	{2, 0, 5, 6, 3, 1},     // no input channels: the bias alone
}

func (tc winoCase) params() Conv2DParams {
	return Conv2DParams{N: tc.n, C: tc.c, H: tc.h, W: tc.w, O: tc.o, KH: 3, KW: 3, SH: 1, SW: 1, PH: tc.pad, PW: tc.pad, DH: 1, DW: 1, Groups: 1, Winograd: true}
}

// winoRandom is n normal values.
func winoRandom(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

// winoRun runs Conv2D with a workspace of exactly Conv2DWorkspaceFor's
// length, filled with NaN, and returns out.
func winoRun(p Conv2DParams, x, w []float32, threads int) []float32 {
	elems := p.N * p.O * p.OutH() * p.OutW()
	if p.Pool2 {
		elems = p.N * p.O * (p.OutH() / 2) * (p.OutW() / 2)
	}
	out := make([]float32, elems)
	ws := make([]float32, Conv2DWorkspaceFor(p, threads, true))
	for i := range ws {
		ws[i] = float32(math.NaN()) // what the path reads before it writes shows
	}
	Conv2D(p, x, w, out, ws, threads)
	return out
}

// winoDirect64 is the convolution and epilogue in float64: the sum of each
// output's products, the sum of their magnitudes and the value after the
// epilogue (bias, residual, activation), at full resolution.
func winoDirect64(p Conv2DParams, x, w []float32) (sum, mag, want []float64) {
	oh, ow := p.OutH(), p.OutW()
	n := p.N * p.O * oh * ow
	sum, mag, want = make([]float64, n), make([]float64, n), make([]float64, n)
	for s := range p.N {
		for o := range p.O {
			for i := range oh {
				for j := range ow {
					var su, ma float64
					for c := range p.C {
						for r := range 3 {
							for q := range 3 {
								iy, ix := i+r-p.PH, j+q-p.PW
								if iy < 0 || iy >= p.H || ix < 0 || ix >= p.W {
									continue
								}
								v := float64(x[((s*p.C+c)*p.H+iy)*p.W+ix]) * float64(w[(o*p.C+c)*9+3*r+q])
								su += v
								ma += math.Abs(v)
							}
						}
					}
					k := ((s*p.O+o)*oh+i)*ow + j
					v := su
					ep := &p.Epilogue
					if ep.Bias32 != nil {
						v += float64(ep.Bias32[o])
						ma += math.Abs(float64(ep.Bias32[o]))
					}
					if ep.Residual32 != nil {
						v += float64(ep.Residual32[k])
						ma += math.Abs(float64(ep.Residual32[k]))
					}
					switch ep.Act {
					case ActRelu:
						v = max(v, 0)
					case ActSigmoid:
						v = 1 / (1 + math.Exp(-v))
					case ActSilu, ActSwish:
						v = v / (1 + math.Exp(-v))
					case ActClip:
						v = min(max(v, ep.Min), ep.Max)
					}
					sum[k], mag[k], want[k] = su, ma, v
				}
			}
		}
	}
	return sum, mag, want
}

// TestConv2DWinogradNCHW holds Conv2D's Winograd path to the direct sum in
// float64 with each epilogue: every output within 2e-6 of the magnitudes
// of its products, bias and residual (a wrong tile, channel or position
// is off by the size of a product), with padding 0, 1 and 2, odd sizes
// whose last tiles are partial, batches, chunks and depth slices.
func TestConv2DWinogradNCHW(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	worst := 0.0
	for _, tc := range winoCases {
		p := tc.params()
		if raceEnabled && p.C*p.O*p.H*p.W > 100000 {
			continue
		}
		x := winoRandom(r, p.N*p.C*p.H*p.W)
		w := winoRandom(r, p.O*p.C*9)
		bias := winoRandom(r, p.O)
		res := winoRandom(r, p.N*p.O*p.OutH()*p.OutW())
		for _, ep := range []Epilogue{
			{}, {Act: ActRelu, Bias32: bias}, {Act: ActSigmoid, Bias32: bias, Residual32: res},
			{Act: ActSilu, Residual32: res}, {Act: ActSwish, Bias32: bias}, {Act: ActClip, Min: -0.5, Max: 0.25, Bias32: bias},
		} {
			q := p
			q.Epilogue = ep
			_, mag, want := winoDirect64(q, x, w)
			got := winoRun(q, x, w, 2)
			for k, g := range got {
				tol := 2e-6*mag[k] + 1e-6*math.Abs(want[k]) + 1e-30
				d := math.Abs(float64(g) - want[k])
				if !(d <= tol) {
					t.Fatalf("%+v act %d: out[%d] = %v, want %v (magnitudes %v)", tc, ep.Act, k, g, want[k], mag[k])
				}
				if ep.Act == ActNone && ep.Bias32 == nil {
					worst = max(worst, d/max(mag[k], 1e-30))
				}
			}
		}
	}
	t.Logf("worst error / Σ|products| without epilogue: %.2g", worst)
}

// TestConv2DWinogradNCHWMatchesRef: without an epilogue the kernel stays
// within 1e-6 of the products' magnitudes of winogradConvRef, the
// definition one tile at a time.
func TestConv2DWinogradNCHWMatchesRef(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, tc := range winoCases[:5] {
		p := tc.params()
		x := winoRandom(r, p.N*p.C*p.H*p.W)
		w := winoRandom(r, p.O*p.C*9)
		ref := make([]float32, p.N*p.O*p.OutH()*p.OutW())
		winogradConvRef(x, w, ref, p.N, p.C, p.H, p.W, p.O, p.PH, p.PW)
		_, mag, _ := winoDirect64(p, x, w)
		got := winoRun(p, x, w, 1)
		for k := range got {
			if d := math.Abs(float64(got[k]) - float64(ref[k])); d > 1e-6*mag[k]+1e-30 {
				t.Fatalf("%+v: out[%d] = %v, ref %v (magnitudes %v)", tc, k, got[k], ref[k], mag[k])
			}
		}
	}
}

// TestConv2DWinogradNCHWPool: with Pool2 the path writes the bits of
// MaxPool2DValues over its own full-resolution output, NaN, ±Inf and ties
// (ReLU's zeros, −0 against +0) included, for even and odd map sizes.
func TestConv2DWinogradNCHWPool(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, tc := range []winoCase{{1, 32, 16, 16, 64, 1}, {2, 5, 7, 9, 3, 1}, {1, 4, 9, 11, 6, 2}, {2, 3, 8, 10, 5, 0}} {
		p := tc.params()
		x := winoRandom(r, p.N*p.C*p.H*p.W)
		w := winoRandom(r, p.O*p.C*9)
		bias := winoRandom(r, p.O)
		res := winoRandom(r, p.N*p.O*p.OutH()*p.OutW())
		special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1))}
		for i := 5; i < len(x); i += 211 {
			x[i] = special[i%len(special)]
		}
		for _, ep := range []Epilogue{{}, {Act: ActRelu, Bias32: bias}, {Act: ActClip, Min: math.Copysign(0, -1), Max: 0, Bias32: bias}, {Residual32: res, Act: ActRelu}} {
			q := p
			q.Epilogue = ep
			full := winoRun(q, x, w, 1)
			want := make([]float32, p.N*p.O*(p.OutH()/2)*(p.OutW()/2))
			MaxPool2DValues(q.convPoolParams(), full, want, 1)
			q.Pool2 = true
			for _, th := range []int{1, 2} {
				perfSameBits(t, fmt.Sprintf("%+v/act %d/threads %d", tc, ep.Act, th), winoRun(q, x, w, th), want)
			}
		}
	}
}

// TestConv2DWinogradNCHWThreadsPacked: the same bits on 1 to 4 threads,
// and with the weights transformed once (PackConv2D, ConvPackWinograd)
// as when the call transforms them; a copy made for another form or
// shape, or a short one, is ignored, not misread.
func TestConv2DWinogradNCHWThreadsPacked(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	r := rand.New(rand.NewPCG(13, 14))
	for _, tc := range winoCases {
		p := tc.params()
		p.Epilogue = Epilogue{Act: ActRelu, Bias32: winoRandom(r, p.O)}
		if Conv2DPackForm(p) != ConvPackWinograd {
			t.Fatalf("%+v: form %d, want ConvPackWinograd", tc, Conv2DPackForm(p))
		}
		x := winoRandom(r, p.N*p.C*p.H*p.W)
		w := winoRandom(r, p.O*p.C*9)
		nan := make([]float32, len(w))
		for i := range nan {
			nan[i] = float32(math.NaN())
		}
		packed := make([]float32, Conv2DPackedLen(p))
		PackConv2D(p, w, packed)
		want := winoRun(p, x, w, 1)
		for th := 1; th <= 4; th++ {
			what := fmt.Sprintf("%+v/threads %d", tc, th)
			perfSameBits(t, what, winoRun(p, x, w, th), want)
			q := p
			q.Packed = packed
			perfSameBits(t, what+"/packed", winoRun(q, x, nan, th), want)
			for name, spoil := range map[string]func([]float32) []float32{
				"form":     func(b []float32) []float32 { b[2] = fromBits[float32](uint32(ConvPackDirect)); return b },
				"channels": func(b []float32) []float32 { b[3] = fromBits[float32](toBits(b[3]) + 1); return b },
				"short":    func(b []float32) []float32 { return b[:len(b)-1] },
			} {
				q.Packed = spoil(append([]float32(nil), packed...))
				perfSameBits(t, what+"/"+name, winoRun(q, x, w, th), want)
			}
		}
	}
}

// TestConv2DWinogradNCHWVecSameBits: the AVX-512 transforms give the bits
// of the portable loops (both add and subtract in the definitions' order),
// with and without the pool.
func TestConv2DWinogradNCHWVecSameBits(t *testing.T) {
	if !winoVec(sgemmActive.Load().nr) {
		t.Skip("no AVX-512 Winograd transforms")
	}
	r := rand.New(rand.NewPCG(19, 20))
	for _, tc := range winoCases {
		p := tc.params()
		p.Epilogue = Epilogue{Act: ActRelu, Bias32: winoRandom(r, p.O)}
		x := perfRandom(r, p.N*p.C*p.H*p.W, true)
		w := winoRandom(r, p.O*p.C*9)
		for _, pool := range []bool{false, true} {
			q := p
			q.Pool2 = pool && p.OutH() >= 2 && p.OutW() >= 2
			want := func() []float32 {
				winoPortable = true
				defer func() { winoPortable = false }()
				return winoRun(q, x, w, 2)
			}()
			perfSameBits(t, fmt.Sprintf("%+v/pool %v", tc, q.Pool2), winoRun(q, x, w, 2), want)
		}
	}
}

// TestConv2DWinogradNCHWNoAllocs: a repeat call, packed or not, with and
// without the pool, on one and two threads, makes no Go allocations.
func TestConv2DWinogradNCHWNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations are counted without the race detector")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	r := rand.New(rand.NewPCG(15, 16))
	p := winoCases[0].params()
	p.N = 2
	x := winoRandom(r, p.N*p.C*p.H*p.W)
	w := winoRandom(r, p.O*p.C*9)
	p.Epilogue = Epilogue{Act: ActRelu, Bias32: winoRandom(r, p.O)}
	packed := make([]float32, Conv2DPackedLen(p))
	PackConv2D(p, w, packed)
	for _, pool := range []bool{false, true} {
		for _, pk := range [][]float32{nil, packed} {
			for _, th := range []int{1, 2} {
				q := p
				q.Pool2, q.Packed = pool, pk
				out := make([]float32, p.N*p.O*p.OutH()*p.OutW())
				ws := make([]float32, Conv2DWorkspaceFor(q, th, true))
				Conv2D(q, x, w, out, ws, th)
				if a := testing.AllocsPerRun(20, func() { Conv2D(q, x, w, out, ws, th) }); a != 0 {
					t.Errorf("pool %v packed %v threads %d: %v allocations per call", pool, pk != nil, th, a)
				}
			}
		}
	}
}

// BenchmarkConvWinogradNCHW compares the direct kernel with the Winograd
// path on the small CNN's layers (bias, ReLU and the 2×2 pool fused, the
// weights packed once): -bench ConvWinogradNCHW -cpu 1 (or 2).
func BenchmarkConvWinogradNCHW(b *testing.B) {
	r := rand.New(rand.NewPCG(17, 18))
	for _, tc := range []struct {
		name string
		p    Conv2DParams
		act  Activation
		pool bool
	}{
		{"cnn2", winoCase{1, 32, 16, 16, 64, 1}.params(), ActRelu, true},
		{"cnn1", winoCase{1, 3, 32, 32, 32, 1}.params(), ActRelu, true},
		{"64x64_28", winoCase{1, 64, 28, 28, 64, 1}.params(), ActRelu, true},
		// The deployed detector's NCHW 3×3 layers at 320×320: the
		// 24-channel stage 0 and the box heads to 68 channels.
		{"det_24x24_80", winoCase{1, 24, 80, 80, 24, 1}.params(), ActSilu, false},
		{"det_384x68_10", winoCase{1, 384, 10, 10, 68, 1}.params(), ActNone, false},
		{"det_192x68_20", winoCase{1, 192, 20, 20, 68, 1}.params(), ActNone, false},
		{"det_96x68_40", winoCase{1, 96, 40, 40, 68, 1}.params(), ActNone, false},
	} {
		for _, batch := range []int{1, 8, 64} {
			for _, wino := range []bool{false, true} {
				p := tc.p
				p.N, p.Winograd, p.Pool2 = batch, wino, tc.pool
				p.Epilogue = Epilogue{Act: tc.act, Bias32: winoRandom(r, p.O)}
				x := winoRandom(r, p.N*p.C*p.H*p.W)
				w := winoRandom(r, p.O*p.C*9)
				if n := Conv2DPackedLen(p); n > 0 {
					p.Packed = make([]float32, n)
					PackConv2D(p, w, p.Packed)
				}
				th := runtime.GOMAXPROCS(0)
				out := make([]float32, p.N*p.O*p.OutH()*p.OutW())
				ws := make([]float32, Conv2DWorkspaceFor(p, th, true))
				b.Run(fmt.Sprintf("%s/batch=%d/winograd=%v", tc.name, batch, wino), func(b *testing.B) {
					for b.Loop() {
						Conv2D(p, x, w, out, ws, th)
					}
				})
			}
		}
	}
}
