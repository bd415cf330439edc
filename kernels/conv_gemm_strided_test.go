package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/gopir/gopir/internal/allocs"
)

// convStridedCases are column-strided convolutions that the strided
// product takes: the stem's, the downsampling layers' and (column stride
// 1) the detector's stage layers' shapes, small,
// with tiles in place and at every border (padding on both sides, a last
// tile short of 14, an output row that ends mid-block, rows of 10), depths over one
// slice, groups, dilation, row stride 1, a 1×3 kernel, several images.
var convStridedCases = []struct {
	name string
	p    Conv2DParams
}{
	{"stem", Conv2DParams{N: 2, C: 3, H: 33, W: 41, O: 16, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}},
	{"stem32", Conv2DParams{N: 2, C: 3, H: 33, W: 41, O: 32, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}},
	{"down48", Conv2DParams{N: 1, C: 32, H: 12, W: 62, O: 48, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}},
	{"deep", Conv2DParams{N: 2, C: 70, H: 7, W: 40, O: 32, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}},
	{"groups2", Conv2DParams{N: 2, C: 8, H: 6, W: 44, O: 64, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1, Groups: 2}},
	{"dilated_rows1", Conv2DParams{N: 2, C: 5, H: 7, W: 45, O: 32, KH: 2, KW: 3, SH: 1, SW: 2, PW: 2, DW: 2}},
	{"1x3", Conv2DParams{N: 3, C: 7, H: 8, W: 40, O: 32, KH: 1, KW: 3, SH: 2, SW: 2, PW: 1}},
	{"narrow", Conv2DParams{N: 3, C: 16, H: 20, W: 19, O: 32, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}},
	{"pad_wide", Conv2DParams{N: 1, C: 4, H: 9, W: 50, O: 48, KH: 5, KW: 5, SH: 2, SW: 2, PH: 3, PW: 3}},
	{"deep80", Conv2DParams{N: 2, C: 70, H: 7, W: 58, O: 80, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}},     // 2 + 3 vectors
	{"down48_rows", Conv2DParams{N: 2, C: 9, H: 9, W: 21, O: 48, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}}, // 9 interior positions a row
	{"stem7", Conv2DParams{N: 2, C: 3, H: 22, W: 31, O: 64, KH: 7, KW: 7, SH: 2, SW: 2, PH: 3, PW: 3}},      // ResNet's stem, an odd width
	{"stage48", Conv2DParams{N: 2, C: 48, H: 11, W: 40, O: 48, KH: 3, KW: 3, PH: 1, PW: 1}},                 // stride 1: even and odd positions
	{"stage96", Conv2DParams{N: 2, C: 96, H: 8, W: 40, O: 96, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"s1_row41", Conv2DParams{N: 2, C: 40, H: 8, W: 41, O: 32, KH: 3, KW: 3, PH: 1, PW: 1}},     // rows of 41: odd positions one fewer
	{"s1_odd", Conv2DParams{N: 2, C: 7, H: 6, W: 66, O: 32, KH: 3, KW: 5, SH: 2, PH: 2, PW: 1}}, // 61 positions in place a row, rows stride 2
}

// TestConvStridedSameBits: a column-strided convolution computed by the
// strided product, reading the weights packed for it, gives the bits of
// the plain product, without an epilogue and with the detector's bias +
// SiLU or a residual, for 1 to 3 threads, with padded rows where the
// sample is small enough for them and with border tiles.
func TestConvStridedSameBits(t *testing.T) {
	if convStridedKernels(sgemmActive.Load()) == nil {
		t.Skip("no strided kernels for this GEMM kernel: the plain product runs, which the conv tests check")
	}
	r := rand.New(rand.NewPCG(41, 42))
	for _, tc := range convStridedCases {
		p := convGemmParams(tc.p)
		if !convGemmStridedOK(p, sgemmActive.Load()) || p.fwdAlgo(true) != convGemm {
			t.Fatalf("%s: not a strided product", tc.name)
		}
		x := perfRandom(r, p.N*p.C*p.H*p.W, false)
		w := perfRandom(r, p.O*p.C/p.Groups*p.KH*p.KW, false)
		n := p.N * p.O * p.OutH() * p.OutW()
		bias, res := perfRandom(r, p.O, false), perfRandom(r, n, false)
		nan := make([]float32, len(w))
		for i := range nan {
			nan[i] = float32(math.NaN())
		}
		for _, ep := range []struct {
			name string
			e    Epilogue
		}{{"none", Epilogue{}}, {"bias_silu", Epilogue{Act: ActSilu, Bias32: bias}},
			{"bias_res_relu", Epilogue{Act: ActRelu, Bias32: bias, Residual32: res}}} {
			q := p
			q.Epilogue = ep.e
			want := make([]float32, n)
			convStridedOff = true
			conv2DGemm(q, x, w, want, 1)
			convStridedOff = false
			if f := Conv2DPackForm(q); f != ConvPackTrans {
				t.Fatalf("%s: pack form %d, want the transposed one", tc.name, f)
			}
			q.Packed = make([]float32, Conv2DPackedLen(q))
			PackConv2D(q, w, q.Packed)
			for _, padOff := range []bool{false, true} {
				convStridedPadOff = padOff
				for _, th := range []int{1, 2, 3} {
					got := make([]float32, n)
					for i := range got {
						got[i] = float32(math.NaN())
					}
					conv2DGemm(q, x, nan, got, th) // the packed copy only
					perfSameBits(t, fmt.Sprintf("%s/%s/padOff=%v/threads=%d", tc.name, ep.name, padOff, th), got, want)
				}
				convStridedPadOff = false
			}
		}
	}
}

// TestConvStridedAllocatesNothing: once warm, the strided product makes
// no Go allocation, on one thread and two, with the epilogue, with padded
// rows and with border tiles, at column stride 2 and 1.
func TestConvStridedAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop objects at random")
	}
	for _, c := range []int{1, 2, 12, 13} { // 32 channels; 48, three vectors in one pass; stride 1, 48 and 96
		p := convGemmParams(convStridedCases[c].p)
		if !convGemmStridedOK(p, sgemmActive.Load()) {
			t.Skip("no strided kernels for this GEMM kernel")
		}
		r := rand.New(rand.NewPCG(43, 44))
		x := perfRandom(r, p.N*p.C*p.H*p.W, false)
		w := perfRandom(r, p.O*p.C*p.KH*p.KW, false)
		p.Epilogue = Epilogue{Act: ActSilu, Bias32: perfRandom(r, p.O, false)}
		p.Packed = make([]float32, Conv2DPackedLen(p))
		PackConv2D(p, w, p.Packed)
		out := make([]float32, p.N*p.O*p.OutH()*p.OutW())
		for _, padOff := range []bool{false, true} {
			convStridedPadOff = padOff
			for _, th := range []int{1, 2} {
				conv2DGemm(p, x, w, out, th)
				if n := allocs.PerRun(20, func() { conv2DGemm(p, x, w, out, th) }); n != 0 {
					t.Errorf("%s padOff=%v threads=%d: %v allocations per call, want 0", convStridedCases[c].name, padOff, th, n)
				}
			}
			convStridedPadOff = false
		}
	}
}

// TestConvStrided3KernelSameBits: each three-vector strided kernel
// stores the bits of the two-vector kernel followed by the one-vector
// kernel on the next panel, for depths with and without an unrolled
// tail, beta 0 (C not read: NaNs there stay out) and 1.
func TestConvStrided3KernelSameBits(t *testing.T) {
	kern := sgemmActive.Load()
	ks, k3 := convStridedKernels(kern), convStrided3Kernels(kern)
	if k3 == nil {
		t.Skip("no three-vector strided kernels for this GEMM kernel")
	}
	if len(k3) != convStrided3Max {
		t.Fatalf("%d three-vector kernels, want %d", len(k3), convStrided3Max)
	}
	r := rand.New(rand.NewPCG(45, 46))
	const ldc = 48 + 5 // C's rows wider than the tile: the kernels keep to theirs
	for h := 1; h <= convStrided3Max; h++ {
		for _, k := range []int{1, 3, 4, 9, 30} {
			a := perfRandom(r, 2*h+64*k, true)
			koff := make([]int32, 4*k)
			for s := range k {
				koff[4*s] = int32(r.IntN(64 * k))
			}
			b := perfRandom(r, 2*32*k, true) // two panels of 32 columns, 32 apart per step
			for _, beta := range []float32{0, 1} {
				c0 := perfRandom(r, h*ldc, true)
				if beta == 0 {
					for i := range c0 {
						c0[i] = float32(math.NaN())
					}
				}
				want, got := append([]float32(nil), c0...), append([]float32(nil), c0...)
				ks[h-1][1](k, &a[0], &koff[0], &b[0], &want[0], ldc, 1, beta)
				ks[h-1][0](k, &a[0], &koff[0], &b[32*k], &want[32], ldc, 1, beta)
				k3[h-1](k, &a[0], &koff[0], &b[0], &b[32*k], &got[0], ldc, 1, beta)
				perfSameBits(t, fmt.Sprintf("h=%d/k=%d/beta=%v", h, k, beta), got, want)
			}
		}
	}
}

// BenchmarkConvStrided3 times ppyoloe_s's 32→48 3×3/2 on 160×160 (bias
// and SiLU, weights packed once) with its three vectors of output
// channels in one pass (w3) and as two and one (2+1).
func BenchmarkConvStrided3(b *testing.B) {
	for _, n := range []int{1, 8} {
		for _, off := range []bool{false, true} {
			p, x, w, out := convDeployLayer(ppyoloeDeployConvs[3].p, n)
			name := map[bool]string{false: "w3", true: "2+1"}[off]
			b.Run(fmt.Sprintf("b=%d/%s", n, name), func(b *testing.B) {
				convStrided3Off = off
				defer func() { convStrided3Off = false }()
				threads := runtime.GOMAXPROCS(0)
				ws := make([]float32, Conv2DWorkspaceFor(p, threads, true))
				perfLoopCPU(b, func() { Conv2D(p, x, w, out, ws, threads) })
			})
		}
	}
}

// TestConvStridedScatter: the block of Cᵀ lands in the output planes as
// the loop puts it, for every count of positions up to three blocks of
// 16 (the last one partial), one to three blocks of channels and strides
// wider than the block, and nothing around it is written.
func TestConvStridedScatter(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 48))
	for _, cols := range []int{16, 32, 48} {
		for rows := 0; rows <= 48; rows++ {
			ldd, lds := rows+r.IntN(20), cols+r.IntN(3)
			src := perfRandom(r, max(rows, 1)*lds, true)
			got, want := make([]float32, cols*ldd+7), make([]float32, cols*ldd+7)
			for i := range got {
				got[i], want[i] = float32(math.NaN()), float32(math.NaN())
			}
			convStridedScatter(got, src, ldd, lds, rows, cols)
			convStridedScatterGo(want, src, ldd, lds, rows, cols)
			perfSameBits(t, fmt.Sprintf("rows=%d/cols=%d", rows, cols), got, want)
		}
	}
}
