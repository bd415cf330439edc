package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// ppyoloeDeployConvs are the distinct convolutions of the deployed
// ppyoloe_s at 320×320 (`gopir print --model ppyoloe_s --deploy`: RepVGG
// blocks folded, so every 3×3 has its bias), batch 1 (N is set per run),
// with how many layers have each shape; the 1×1 layers on 1×1 maps (the
// attention) are left out.
var ppyoloeDeployConvs = []struct {
	name  string
	count int
	p     Conv2DParams
}{
	{"3x16_3x3s2_320", 1, Conv2DParams{C: 3, H: 320, W: 320, O: 16, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}},
	{"16x16_3x3_160", 1, Conv2DParams{C: 16, H: 160, W: 160, O: 16, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"16x32_3x3_160", 1, Conv2DParams{C: 16, H: 160, W: 160, O: 32, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"32x48_3x3s2_160", 1, Conv2DParams{C: 32, H: 160, W: 160, O: 48, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}},
	{"48x24_1x1_80", 2, Conv2DParams{C: 48, H: 80, W: 80, O: 24, KH: 1, KW: 1}},
	{"24x24_3x3_80", 2, Conv2DParams{C: 24, H: 80, W: 80, O: 24, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"48x64_1x1_80", 1, Conv2DParams{C: 48, H: 80, W: 80, O: 64, KH: 1, KW: 1}},
	{"64x96_3x3s2_80", 1, Conv2DParams{C: 64, H: 80, W: 80, O: 96, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}},
	{"96x48_1x1_40", 2, Conv2DParams{C: 96, H: 40, W: 40, O: 48, KH: 1, KW: 1}},
	{"48x48_3x3_40", 6, Conv2DParams{C: 48, H: 40, W: 40, O: 48, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"96x128_1x1_40", 1, Conv2DParams{C: 96, H: 40, W: 40, O: 128, KH: 1, KW: 1}},
	{"224x48_1x1_40", 2, Conv2DParams{C: 224, H: 40, W: 40, O: 48, KH: 1, KW: 1}},
	{"96x96_1x1_40", 3, Conv2DParams{C: 96, H: 40, W: 40, O: 96, KH: 1, KW: 1}},
	{"96x68_3x3_40", 1, Conv2DParams{C: 96, H: 40, W: 40, O: 68, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"96x6_3x3_40", 1, Conv2DParams{C: 96, H: 40, W: 40, O: 6, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"96x96_3x3s2_40", 1, Conv2DParams{C: 96, H: 40, W: 40, O: 96, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}},
	{"128x192_3x3s2_40", 1, Conv2DParams{C: 128, H: 40, W: 40, O: 192, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}},
	{"96x96_3x3_20", 8, Conv2DParams{C: 96, H: 20, W: 20, O: 96, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"192x192_1x1_20", 4, Conv2DParams{C: 192, H: 20, W: 20, O: 192, KH: 1, KW: 1}},
	{"192x96_1x1_20", 3, Conv2DParams{C: 192, H: 20, W: 20, O: 96, KH: 1, KW: 1}},
	{"288x96_1x1_20", 2, Conv2DParams{C: 288, H: 20, W: 20, O: 96, KH: 1, KW: 1}},
	{"448x96_1x1_20", 2, Conv2DParams{C: 448, H: 20, W: 20, O: 96, KH: 1, KW: 1}},
	{"192x256_1x1_20", 1, Conv2DParams{C: 192, H: 20, W: 20, O: 256, KH: 1, KW: 1}},
	{"192x68_3x3_20", 1, Conv2DParams{C: 192, H: 20, W: 20, O: 68, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"192x6_3x3_20", 1, Conv2DParams{C: 192, H: 20, W: 20, O: 6, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"192x192_3x3s2_20", 1, Conv2DParams{C: 192, H: 20, W: 20, O: 192, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}},
	{"256x384_3x3s2_20", 1, Conv2DParams{C: 256, H: 20, W: 20, O: 384, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}},
	{"192x192_3x3_10", 6, Conv2DParams{C: 192, H: 10, W: 10, O: 192, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"384x384_1x1_10", 4, Conv2DParams{C: 384, H: 10, W: 10, O: 384, KH: 1, KW: 1}},
	{"384x192_1x1_10", 3, Conv2DParams{C: 384, H: 10, W: 10, O: 192, KH: 1, KW: 1}},
	{"576x192_1x1_10", 2, Conv2DParams{C: 576, H: 10, W: 10, O: 192, KH: 1, KW: 1}},
	{"512x192_1x1_10", 2, Conv2DParams{C: 512, H: 10, W: 10, O: 192, KH: 1, KW: 1}},
	{"384x512_1x1_10", 1, Conv2DParams{C: 384, H: 10, W: 10, O: 512, KH: 1, KW: 1}},
	{"768x192_1x1_10", 1, Conv2DParams{C: 768, H: 10, W: 10, O: 192, KH: 1, KW: 1}},
	{"384x68_3x3_10", 1, Conv2DParams{C: 384, H: 10, W: 10, O: 68, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"384x6_3x3_10", 1, Conv2DParams{C: 384, H: 10, W: 10, O: 6, KH: 3, KW: 3, PH: 1, PW: 1}},
}

// BenchmarkConvPPYOLOEDeploy times each convolution of the deployed
// ppyoloe_s (ppyoloeDeployConvs) forward with its fused epilogue (bias
// and SiLU, as `gopir run` fuses them), weights packed once as at
// inference, at batch 1 and 8, on GOMAXPROCS threads: as Conv2D runs it
// (inplace) and with every im2col panel packed (packed; see
// conv_gemm_inplace.go). cpu-ns/op is the calling thread's CPU time, and
// the other metrics come from it: net-cpu-ms is the layer's share of one
// inference (× how many layers have the shape). Select with -bench
// 'ConvPPYOLOEDeploy/b=<N>/<layer>/<mode>'.
func BenchmarkConvPPYOLOEDeploy(b *testing.B) {
	for _, n := range []int{1, 8} {
		for _, l := range ppyoloeDeployConvs {
			p, x, w, out := convDeployLayer(l.p, n)
			flops := 2 * float64(p.N*p.O*p.OutH()*p.OutW()*p.C*p.KH*p.KW)
			for _, packed := range []bool{false, true} {
				mode := "inplace"
				if packed {
					mode = "packed"
				}
				b.Run(fmt.Sprintf("b=%d/%s/%s", n, l.name, mode), func(b *testing.B) {
					defer func() { convInPlaceOff = false }()
					convInPlaceOff = packed
					threads := runtime.GOMAXPROCS(0)
					ws := make([]float32, Conv2DWorkspaceFor(p, threads, true))
					ns := perfLoopCPU(b, func() { Conv2D(p, x, w, out, ws, threads) })
					b.ReportMetric(flops/ns, "cpu-GFLOP/s")
					b.ReportMetric(float64(l.count)*ns/1e6, "net-cpu-ms")
				})
			}
		}
	}
}

// convDeployLayer is the layer p of ppyoloe_s at batch n as inference
// runs it: input, weights, output, its bias and SiLU, and its weights
// packed once.
func convDeployLayer(p Conv2DParams, n int) (q Conv2DParams, x, w, out []float32) {
	q = convGemmParams(p)
	q.N = n
	r := rand.New(rand.NewPCG(1, 2))
	x = convDeployValues(r, q.N*q.C*q.H*q.W, 1)
	w = convDeployValues(r, q.filterSize(), math.Sqrt(2/float64(q.C*q.KH*q.KW)))
	out = make([]float32, q.N*q.O*q.OutH()*q.OutW())
	q.Epilogue = Epilogue{Act: ActSilu, Bias32: convDeployValues(r, q.O, 0.1)}
	if n := Conv2DPackedLen(q); n > 0 {
		q.Packed = make([]float32, n)
		PackConv2D(q, w, q.Packed)
	}
	return q, x, w, out
}

// convDeployValues returns n normal values of standard deviation sd: the
// inputs, He-scaled weights and small biases of a trained network's
// layer, whose outputs stay within SiLU's vector range. (perfRandom's
// magnitudes, 1e-4 to 1e2, made sums under −80 common, and SiLU takes
// the scalar float64 formula on every block of 16 that holds one: it
// timed the stem's epilogue, not its convolution.)
func convDeployValues(r *rand.Rand, n int, sd float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * sd)
	}
	return v
}
