package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// convGemmCases cover the batched implicit-GEMM convolution's blockings:
// output maps smaller than a tile (scratch blocks) and larger (tiles
// straight into the output, some spanning images), depths over one kc
// slice, more output channels than one mc block, 1×1 kernels with and
// without stride, padding wider than the kernel, dilations, groups, odd
// sizes.
var convGemmCases = []struct {
	name string
	p    Conv2DParams
}{
	{"1x1", Conv2DParams{N: 3, C: 5, H: 7, W: 9, O: 20, KH: 1, KW: 1}},
	{"1x1_stride2", Conv2DParams{N: 2, C: 17, H: 9, W: 8, O: 33, KH: 1, KW: 1, SH: 2, SW: 2}},
	{"3x3_2x2map_deep", Conv2DParams{N: 5, C: 70, H: 2, W: 2, O: 48, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"3x3_2x2map_batch1", Conv2DParams{N: 1, C: 64, H: 2, W: 2, O: 200, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"3x3_4x4map", Conv2DParams{N: 7, C: 12, H: 4, W: 4, O: 30, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"3x3_6x6_straddle", Conv2DParams{N: 4, C: 9, H: 6, W: 6, O: 19, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"3x3_big_deep", Conv2DParams{N: 2, C: 60, H: 11, W: 13, O: 37, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"tall_m", Conv2DParams{N: 2, C: 3, H: 5, W: 7, O: 181, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"7x7_stride2", Conv2DParams{N: 2, C: 3, H: 19, W: 17, O: 21, KH: 7, KW: 7, SH: 2, SW: 2, PH: 3, PW: 3}},
	{"3x3_stride2_wide", Conv2DParams{N: 1, C: 3, H: 5, W: 300, O: 20, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}},
	{"strided_odd", Conv2DParams{N: 3, C: 4, H: 10, W: 11, O: 18, KH: 3, KW: 2, SH: 2, SW: 3, PH: 1, PW: 0}},
	{"pad_wider", Conv2DParams{N: 2, C: 3, H: 3, W: 4, O: 17, KH: 2, KW: 3, PH: 3, PW: 4}},
	{"dilated", Conv2DParams{N: 2, C: 5, H: 9, W: 10, O: 22, KH: 3, KW: 3, PH: 2, PW: 1, DH: 2, DW: 3}},
	{"groups2", Conv2DParams{N: 3, C: 8, H: 5, W: 6, O: 34, KH: 3, KW: 3, PH: 1, PW: 1, Groups: 2}},
	{"groups3_1x1", Conv2DParams{N: 2, C: 9, H: 3, W: 3, O: 51, KH: 1, KW: 1, Groups: 3}},
	{"one_channel", Conv2DParams{N: 4, C: 1, H: 8, W: 8, O: 20, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"one_output", Conv2DParams{N: 3, C: 6, H: 5, W: 5, O: 1, KH: 3, KW: 3}},
	{"1x1_map", Conv2DParams{N: 9, C: 40, H: 1, W: 1, O: 24, KH: 1, KW: 1}},
	{"rows16", Conv2DParams{N: 3, C: 5, H: 6, W: 16, O: 21, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"rows37", Conv2DParams{N: 2, C: 4, H: 5, W: 37, O: 18, KH: 3, KW: 5, PH: 1, PW: 2, DW: 2}},
	{"stride2_8wide", Conv2DParams{N: 3, C: 5, H: 16, W: 16, O: 20, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}}, // vectors of two output rows
	{"stride2_40wide", Conv2DParams{N: 1, C: 3, H: 6, W: 80, O: 20, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}}, // a third vector in two rows
	{"1x1_stride2_8wide", Conv2DParams{N: 2, C: 7, H: 16, W: 16, O: 24, KH: 1, KW: 1, SH: 2, SW: 2}},
	{"3x3_10x10_wide_transposed", Conv2DParams{N: 2, C: 20, H: 10, W: 10, O: 48, KH: 3, KW: 3, PH: 1, PW: 1}}, // 200 positions
	{"1x1_10x10_wide_transposed", Conv2DParams{N: 1, C: 30, H: 10, W: 10, O: 64, KH: 1, KW: 1}},
}

// convGemmParams fills the defaults of a case (unit strides and
// dilations, one group).
func convGemmParams(p Conv2DParams) Conv2DParams {
	for _, f := range []*int{&p.SH, &p.SW, &p.DH, &p.DW, &p.Groups} {
		*f = max(*f, 1)
	}
	return p
}

// TestConvGemmMatchesReference checks conv2DGemm against float64 sums
// within float32 rounding, in both orientations of the product and with
// small scratch blocks, for 1, 2 and 3 threads, which must agree bitwise;
// every output element must be written.
func TestConvGemmMatchesReference(t *testing.T) {
	defer func(e int) { convGemmScratchElems, convGemmOrient = e, 0 }(convGemmScratchElems)
	r := rand.New(rand.NewPCG(21, 22))
	for _, tc := range convGemmCases {
		p := convGemmParams(tc.p)
		x := perfRandom(r, p.N*p.C*p.H*p.W, false)
		w := perfRandom(r, p.O*p.C/p.Groups*p.KH*p.KW, false)
		want, mag, _, _, _, _ := perfConvRef(p, x, w, make([]float32, p.N*p.O*p.OutH()*p.OutW()))
		for _, v := range []struct {
			name    string
			orient  int8
			scratch int
		}{{"auto", 0, 128 * 1024}, {"plain", 1, 128 * 1024}, {"transposed", -1, 128 * 1024}, {"small_blocks", 1, 700}} {
			convGemmOrient, convGemmScratchElems = v.orient, v.scratch
			var first []float32
			for _, th := range []int{1, 2, 3} {
				got := make([]float32, len(want))
				for i := range got {
					got[i] = float32(math.NaN())
				}
				conv2DGemm(p, x, w, got, th)
				what := fmt.Sprintf("%s/%s/threads=%d", tc.name, v.name, th)
				for i := range want {
					if d := math.Abs(float64(got[i]) - want[i]); !(d <= 1e-5*mag[i]+1e-30) {
						t.Fatalf("%s: [%d] = %v, want %v (±%g)", what, i, got[i], want[i], 1e-5*mag[i])
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
}

// TestConvPackMatchesIm2col checks the im2col packers — convPackGo and,
// where it runs, the AVX-512 convPackVec (gathers, runs and pairs) — against
// the explicit im2col matrix (Im2col) on panels of 1 to 32 columns taken
// anywhere in the matrix of padded, strided and dilated convolutions,
// including columns past its end (zeros).
func TestConvPackMatchesIm2col(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	probe := make([]float32, 32)
	vec := convPackVec(probe, make([]float32, 1), make([]int32, 4), 1, make([]int32, 3*convColsStride(1)), convColsStride(1), 1, 1, 1)
	var runs [4]int // panels the vector packer took with gathers, runs, pairs and pairs in two rows
	for _, tc := range convGemmCases {
		p := convGemmParams(tc.p)
		cg, ohw := p.C/p.Groups, p.OutH()*p.OutW()
		x := perfRandom(r, p.N*p.C*p.H*p.W, true)
		ktab := convKTab(p, make([]int32, 4*cg*p.KH*p.KW))
		kb := len(ktab) / 4
		// col[n] is image n's im2col matrix of group 0: kb × OH·OW.
		col := make([][]float32, p.N)
		for n := range col {
			col[n] = make([]float32, kb*ohw)
			Im2col(p, cg, x[n*p.C*p.H*p.W:], col[n])
		}
		q := p.N * ohw
		for trial := range 20 {
			w := 1 + r.IntN(32)
			q0, n := r.IntN(q), 1+r.IntN(q)
			n = min(n, q-q0)
			s := convColsStride(n)
			cols := convColTab(p, q0, n, make([]int32, 3*s))
			r0 := r.IntN(s - 16*((w+15)/16) + 1) // the panel's first column in the table
			// The first trials take panels from a column that is a multiple
			// of 8: on a map 8 wide, an output row's start.
			if trial < 5 {
				q0, r0 = q0&^7, 0
				n = min(q-q0, 32)
				s = convColsStride(n)
				cols = convColTab(p, q0, n, make([]int32, 3*s))
			}
			want := make([]float32, kb*w)
			for k := range kb {
				for l := range w {
					if c := r0 + l; c < n {
						want[k*w+l] = col[(q0+c)/ohw][k*ohw+(q0+c)%ohw]
					}
				}
			}
			what := fmt.Sprintf("%s trial %d (w=%d, columns %d+%d)", tc.name, trial, w, q0, r0)
			got := make([]float32, kb*w)
			for i := range got {
				got[i] = float32(math.NaN())
			}
			convPackGo(got, x, ktab, kb, cols[r0:], s, w, p.H, p.W)
			perfSameBits(t, what+" Go", got, want)
			if !vec {
				continue
			}
			for i := range got {
				got[i] = float32(math.NaN())
			}
			convPackVec(got, x, ktab, kb, cols[r0:], s, w, p.H, p.W)
			perfSameBits(t, what+" vector", got, want)
			switch nv := (w + 15) / 16; {
			case convPackRuns(cols[r0:], s, nv, 1):
				runs[1]++
			case convPackRuns(cols[r0:], s, nv, 2):
				runs[2]++
			case convPackHalves(cols[r0:], s, nv):
				runs[3]++
			default:
				runs[0]++
			}
		}
	}
	if vec && (runs[0] < 50 || runs[1] < 50 || hasBMI2 && (runs[2] < 10 || runs[3] < 10)) {
		t.Fatalf("panels packed by gathers, runs, pairs and pairs in two rows: %v, want at least 50, 50, 10 and 10", runs)
	}
}

// convBenchLayers are the convolutions of the inference benchmark's
// networks (bench/run -inference): the small CNN and resnet18ish at
// 3×64×64, batch 1 where it is 1.
var convBenchLayers = []struct {
	name string
	p    Conv2DParams
}{
	{"cnn1", Conv2DParams{C: 3, H: 32, W: 32, O: 32, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"cnn2", Conv2DParams{C: 32, H: 16, W: 16, O: 64, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"r18_stem", Conv2DParams{C: 3, H: 64, W: 64, O: 64, KH: 7, KW: 7, SH: 2, SW: 2, PH: 3, PW: 3}},
	{"r18_l1", Conv2DParams{C: 64, H: 16, W: 16, O: 64, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"r18_l2a", Conv2DParams{C: 64, H: 16, W: 16, O: 128, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}},
	{"r18_l2ds", Conv2DParams{C: 64, H: 16, W: 16, O: 128, KH: 1, KW: 1, SH: 2, SW: 2}},
	{"r18_l2", Conv2DParams{C: 128, H: 8, W: 8, O: 128, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"r18_l3a", Conv2DParams{C: 128, H: 8, W: 8, O: 256, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}},
	{"r18_l3ds", Conv2DParams{C: 128, H: 8, W: 8, O: 256, KH: 1, KW: 1, SH: 2, SW: 2}},
	{"r18_l3", Conv2DParams{C: 256, H: 4, W: 4, O: 256, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"r18_l4a", Conv2DParams{C: 256, H: 4, W: 4, O: 512, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}},
	{"r18_l4ds", Conv2DParams{C: 256, H: 4, W: 4, O: 512, KH: 1, KW: 1, SH: 2, SW: 2}},
	{"r18_l4", Conv2DParams{C: 512, H: 2, W: 2, O: 512, KH: 3, KW: 3, PH: 1, PW: 1}},
}

// BenchmarkConvAlgo times Conv2D on the benchmark networks' layers at
// batch 1 and 64 with two float32 algorithms: im2col (the per-image path)
// and gemm (conv_gemm.go); and, as the bound a convolution kernel built
// on this GEMM can approach, sgemm: one Sgemm of the same size (O ×
// N·OH·OW × C·KH·KW) on operands already in memory. GOMAXPROCS threads;
// with -cpu 1 the cpu-ns/op metric (perfLoop) is the steadier figure.
func BenchmarkConvAlgo(b *testing.B) {
	for _, l := range convBenchLayers {
		for _, n := range []int{1, 64} {
			for _, algo := range []string{"im2col", "gemm", "sgemm"} {
				b.Run(fmt.Sprintf("%s/batch=%d/%s", l.name, n, algo), func(b *testing.B) {
					p := convGemmParams(l.p)
					p.N = n
					convForce.set, convForce.algo = true, map[string]convAlgo{"im2col": convIm2col, "gemm": convGemm}[algo]
					defer func() { convForce.set = false }()
					threads := runtime.GOMAXPROCS(0)
					r := rand.New(rand.NewPCG(1, 2))
					x := perfRandom(r, p.N*p.C*p.H*p.W, false)
					w := perfRandom(r, p.O*p.C/p.Groups*p.KH*p.KW, false)
					out := make([]float32, p.N*p.O*p.OutH()*p.OutW())
					if algo == "sgemm" {
						k, q := p.C*p.KH*p.KW, p.N*p.OutH()*p.OutW()
						col := perfRandom(r, k*q, false)
						perfLoop(b, func() { Sgemm(false, false, p.O, q, k, 1, w, k, col, q, 0, out, q, threads) })
						return
					}
					ws := make([]float32, Conv2DWorkspaceFor(p, threads, true))
					perfLoop(b, func() { Conv2D(p, x, w, out, ws, threads) })
				})
			}
		}
	}
}

// TestConv2DZeroSizes runs Conv2D through its dispatch on shapes with an
// empty dimension, in float32 and float64: an empty output is left alone,
// a non-empty output of an empty input or depth is all zeros.
func TestConv2DZeroSizes(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Conv2DParams
	}{
		{"no_images", Conv2DParams{N: 0, C: 3, H: 5, W: 5, O: 20, KH: 3, KW: 3, PH: 1, PW: 1}},
		{"no_outputs", Conv2DParams{N: 2, C: 3, H: 5, W: 5, O: 0, KH: 3, KW: 3}},
		{"no_channels", Conv2DParams{N: 2, C: 0, H: 4, W: 4, O: 20, KH: 3, KW: 3, PH: 1, PW: 1}},
		{"empty_rows_padded", Conv2DParams{N: 2, C: 3, H: 0, W: 6, O: 20, KH: 1, KW: 3, PH: 2, PW: 1}},
		{"kernel_too_big", Conv2DParams{N: 2, C: 3, H: 2, W: 2, O: 20, KH: 3, KW: 3}},
		{"depthwise_no_images", Conv2DParams{N: 0, C: 4, H: 3, W: 3, O: 4, KH: 3, KW: 3, Groups: 4}},
		{"depthwise_empty_input_padded", Conv2DParams{N: 2, C: 4, H: 3, W: 0, O: 4, KH: 3, KW: 1, PW: 2, Groups: 4}},
	} {
		p := convGemmParams(tc.p)
		n := p.N * p.O * p.OutH() * p.OutW()
		for _, th := range []int{1, 2} {
			out := make([]float32, n+1)
			for i := range out {
				out[i] = float32(math.NaN())
			}
			Conv2D(p, make([]float32, p.N*p.C*p.H*p.W), make([]float32, p.O*p.C/p.Groups*p.KH*p.KW), out[:n],
				make([]float32, Conv2DWorkspaceFor(p, th, true)), th)
			out64 := make([]float64, n)
			Conv2D(p, make([]float64, p.N*p.C*p.H*p.W), make([]float64, p.O*p.C/p.Groups*p.KH*p.KW), out64,
				make([]float64, Conv2DWorkspaceFor(p, th, false)), th)
			for i := range n {
				if out[i] != 0 || out64[i] != 0 {
					t.Fatalf("%s threads=%d: out[%d] = %v / %v, want 0", tc.name, th, i, out[i], out64[i])
				}
			}
			if !math.IsNaN(float64(out[n])) {
				t.Fatalf("%s: Conv2D wrote past its output", tc.name)
			}
		}
	}
}

// TestConvKernelsAllocateNothing: once warm, a one-goroutine Conv2D on
// the batched GEMM (plain and transposed) and the depthwise kernel makes
// no Go heap allocation (their buffers come from pools), so that a
// serving loop's steady state stays allocation-free.
func TestConvKernelsAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop objects at random")
	}
	for _, p := range []Conv2DParams{
		{N: 4, C: 16, H: 8, W: 8, O: 32, KH: 3, KW: 3, PH: 1, PW: 1},
		{N: 1, C: 64, H: 2, W: 2, O: 128, KH: 3, KW: 3, PH: 1, PW: 1},
		{N: 1, C: 24, H: 10, W: 10, O: 192, KH: 3, KW: 3, PH: 1, PW: 1}, // transposed past convGemmTransMax
		{N: 2, C: 8, H: 9, W: 8, O: 8, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1, Groups: 8},
	} {
		p = convGemmParams(p)
		x := make([]float32, p.N*p.C*p.H*p.W)
		w := make([]float32, p.O*p.C/p.Groups*p.KH*p.KW)
		out := make([]float32, p.N*p.O*p.OutH()*p.OutW())
		ws := make([]float32, Conv2DWorkspaceFor(p, 1, true))
		x64, w64, out64 := make([]float64, len(x)), make([]float64, len(w)), make([]float64, len(out))
		ws64 := make([]float64, Conv2DWorkspaceFor(p, 1, false))
		if n := testing.AllocsPerRun(100, func() { Conv2D(p, x, w, out, ws, 1) }); n != 0 {
			t.Errorf("%+v float32: %v allocations per call", p, n)
		}
		if p.depthwise() {
			if n := testing.AllocsPerRun(100, func() { Conv2D(p, x64, w64, out64, ws64, 1) }); n != 0 {
				t.Errorf("%+v float64: %v allocations per call", p, n)
			}
		}
	}
}

// The deeper convolutions that convDirectWide gives the direct kernel
// get from it the batched GEMM's bits (the same chains of fused
// multiply-adds over the same depth slices, each later slice added onto
// the sums before), with and without an epilogue, on 1 and 2 threads,
// with the weights packed once for each or not; and the rule takes them
// (and leaves three blocks over a large sample to the GEMM).
func TestConvDirectWideMatchesGemm(t *testing.T) {
	if !convRowOK() {
		t.Skip("no AVX-512: no direct kernel")
	}
	r := rand.New(rand.NewPCG(31, 32))
	kc := sgemmActive.Load().kc
	for _, p := range []Conv2DParams{
		{N: 8, C: 32, H: 16, W: 16, O: 64, KH: 3, KW: 3, PH: 1, PW: 1},                       // the small CNN's second layer at batch 8
		{N: 8, C: kc / 9, H: 8, W: 32, O: 40, KH: 3, KW: 3, PH: 1, PW: 1},                    // the deepest one slice allows
		{N: 12, C: 24, H: 12, W: 16, O: 36, KH: 3, KW: 3, PH: 1, PW: 1, Groups: 2},           // groups
		{N: 4, C: 20, H: 18, W: 34, O: 32, KH: 5, KW: 3, PH: 1, PW: 0, DH: 1, DW: 1},         // unpadded columns, 5 rows
		{N: 2, C: 16, H: 70, W: 64, O: 32, KH: 3, KW: 3, PH: 1, PW: 1},                       // ppyoloe_s's 16→32: two blocks, a sample over convDirectWideSample
		{N: 1, C: 24, H: 61, W: 80, O: 24, KH: 3, KW: 3, PH: 1, PW: 1},                       // its 24→24: 16 + 8 channels
		{N: 3, C: 64, H: 16, W: 16, O: 64, KH: 3, KW: 3, PH: 1, PW: 1},                       // resnet18ish's layer 1: two slices
		{N: 2, C: kc/9 + 1, H: 5, W: 32, O: 40, KH: 3, KW: 3, PH: 1, PW: 1},                  // one step past one slice
		{N: 1, C: 2*kc/9 + 7, H: 16, W: 16, O: 24, KH: 3, KW: 3, PH: 1, PW: 1},               // three slices
		{N: 2, C: 2 * (kc/9 + 3), H: 8, W: 16, O: 34, KH: 3, KW: 3, PH: 1, PW: 1, Groups: 2}, // two slices per group
	} {
		p = convGemmParams(p)
		if !p.convDirectFwd() || p.O/p.Groups <= convDirectMaxCh || p.C/p.Groups*p.KH*p.KW <= convDirectMaxDepth {
			t.Fatalf("%+v: not a wide direct convolution", p)
		}
		x := perfRandom(r, p.N*p.C*p.H*p.W, true)
		w := perfRandom(r, p.O*p.C/p.Groups*p.KH*p.KW, false)
		bias := perfRandom(r, p.O, false)
		for _, ep := range []Epilogue{{}, {Act: ActRelu, Bias32: bias}, {Act: ActSilu, Bias32: bias}} {
			for _, th := range []int{1, 2} {
				for _, packed := range []bool{false, true} {
					fp := p
					fp.Epilogue = ep
					run := func(algo convAlgo) []float32 {
						convForce.set, convForce.algo = true, algo
						defer func() { convForce.set = false }()
						fp := fp
						if packed {
							fp.Packed = make([]float32, Conv2DPackedLen(fp))
							PackConv2D(fp, w, fp.Packed)
						}
						out := make([]float32, p.N*p.O*p.OutH()*p.OutW())
						Conv2D(fp, x, w, out, make([]float32, Conv2DWorkspaceFor(fp, th, true)), th)
						return out
					}
					perfSameBits(t, fmt.Sprintf("%+v threads %d epilogue %v packed %v", p, th, ep.on(), packed), run(convDirect), run(convGemm))
				}
			}
		}
	}
	l1 := convGemmParams(Conv2DParams{N: 64, C: 64, H: 16, W: 16, O: 64, KH: 3, KW: 3, PH: 1, PW: 1})
	if !l1.convDirectFwd() || l1.convDirectSlice() >= 576 {
		t.Fatalf("%+v: not on the direct kernel in slices", l1)
	}
	big := convGemmParams(Conv2DParams{N: 1, C: 16, H: 70, W: 64, O: 48, KH: 3, KW: 3, PH: 1, PW: 1})
	if big.convDirectFwd() {
		t.Fatalf("%+v: three blocks over a large sample went to the direct kernel", big)
	}
}

// TestConvGemmWideTransposedSameBits: past convGemmTransMax positions
// (the detector's 10×10 maps at batch 1 to 3), the transposed product
// that convGemmTransposed now picks gives the plain product's bits, with
// weights packed once for each, with the epilogues inference fuses (bias
// and SiLU; bias, residual and ReLU), on 1 and 2 threads; and the rule
// leaves column-strided products, large blocks and whole vectors of
// positions as they were.
func TestConvGemmWideTransposedSameBits(t *testing.T) {
	defer func() { convGemmOrient = 0 }()
	kern := sgemmActive.Load()
	if kern.lanes < 16 {
		t.Skip("no 16-lane kernel: the rule's cases are not these")
	}
	r := rand.New(rand.NewPCG(41, 42))
	for _, p := range []Conv2DParams{
		{N: 1, C: 24, H: 10, W: 10, O: 192, KH: 3, KW: 3, PH: 1, PW: 1},
		{N: 2, C: 40, H: 10, W: 10, O: 96, KH: 3, KW: 3, PH: 1, PW: 1},
		{N: 3, C: 64, H: 10, W: 10, O: 64, KH: 1, KW: 1},
		{N: 1, C: 600, H: 10, W: 10, O: 48, KH: 1, KW: 1}, // depth over two slices
		{N: 5, C: 8, H: 6, W: 6, O: 32, KH: 3, KW: 3, PH: 1, PW: 1},
	} {
		p = convGemmParams(p)
		if p.N*p.OutH()*p.OutW() <= convGemmTransMax || !convGemmTransposed(p, kern) {
			t.Fatalf("%+v: not a wide transposed product", p)
		}
		x := convDeployValues(r, p.N*p.C*p.H*p.W, 1)
		w := convDeployValues(r, p.filterSize(), math.Sqrt(2/float64(p.C*p.KH*p.KW)))
		n := p.N * p.O * p.OutH() * p.OutW()
		bias, res := convDeployValues(r, p.O, 0.1), convDeployValues(r, n, 1)
		for _, ep := range []Epilogue{{}, {Act: ActSilu, Bias32: bias}, {Act: ActRelu, Bias32: bias, Residual32: res}} {
			for _, th := range []int{1, 2} {
				run := func(orient int8) []float32 {
					convGemmOrient = orient
					defer func() { convGemmOrient = 0 }()
					q := p
					q.Epilogue = ep
					q.Packed = make([]float32, Conv2DPackedLen(q))
					PackConv2D(q, w, q.Packed)
					out := make([]float32, n)
					Conv2D(q, x, w, out, make([]float32, Conv2DWorkspaceFor(q, th, true)), th)
					return out
				}
				perfSameBits(t, fmt.Sprintf("%+v epilogue %v threads %d", p, ep.Act, th), run(0), run(1))
			}
		}
	}
	for _, p := range []Conv2DParams{
		{N: 1, C: 8, H: 20, W: 20, O: 192, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}, // the strided product's
		{N: 7, C: 8, H: 10, W: 10, O: 192, KH: 3, KW: 3, PH: 1, PW: 1},               // Cᵀ over convGemmTransWide
		{N: 1, C: 8, H: 16, W: 16, O: 64, KH: 3, KW: 3, PH: 1, PW: 1},                // whole vectors of positions
	} {
		if p = convGemmParams(p); convGemmTransposed(p, kern) {
			t.Errorf("%+v: transposed", p)
		}
	}
}
