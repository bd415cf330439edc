package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

// ppyoloeConvs are the distinct convolution shapes of ppyoloe_s's training
// step at batch 8 and 320×320 (models/ppyoloe), named after a layer that
// has them.
var ppyoloeConvs = []struct {
	name string
	p    Conv2DParams
}{
	{"stem1_16x16_3x3_160", Conv2DParams{N: 8, C: 16, H: 160, W: 160, O: 16, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"stem2_16x32_3x3_160", Conv2DParams{N: 8, C: 16, H: 160, W: 160, O: 32, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"s0down_32x48_3x3s2_160", Conv2DParams{N: 8, C: 32, H: 160, W: 160, O: 48, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}},
	{"s0c1_48x24_1x1_80", Conv2DParams{N: 8, C: 48, H: 80, W: 80, O: 24, KH: 1, KW: 1}},
	{"s0b_24x24_3x3_80", Conv2DParams{N: 8, C: 24, H: 80, W: 80, O: 24, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"s0c3_48x64_1x1_80", Conv2DParams{N: 8, C: 48, H: 80, W: 80, O: 64, KH: 1, KW: 1}},
	{"s1down_64x96_3x3s2_80", Conv2DParams{N: 8, C: 64, H: 80, W: 80, O: 96, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}},
	{"s1b_48x48_3x3_40", Conv2DParams{N: 8, C: 48, H: 40, W: 40, O: 48, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"s1c1_96x48_1x1_40", Conv2DParams{N: 8, C: 96, H: 40, W: 40, O: 48, KH: 1, KW: 1}},
	{"f2c1_224x48_1x1_40", Conv2DParams{N: 8, C: 224, H: 40, W: 40, O: 48, KH: 1, KW: 1}},
	{"h3stem_96x96_1x1_40", Conv2DParams{N: 8, C: 96, H: 40, W: 40, O: 96, KH: 1, KW: 1}},
	{"h3cls_96x6_3x3_40", Conv2DParams{N: 8, C: 96, H: 40, W: 40, O: 6, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"h3reg_96x68_3x3_40", Conv2DParams{N: 8, C: 96, H: 40, W: 40, O: 68, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"s2down_128x192_3x3s2_40", Conv2DParams{N: 8, C: 128, H: 40, W: 40, O: 192, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}},
	{"s2b_96x96_3x3_20", Conv2DParams{N: 8, C: 96, H: 20, W: 20, O: 96, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"s2c1_192x96_1x1_20", Conv2DParams{N: 8, C: 192, H: 20, W: 20, O: 96, KH: 1, KW: 1}},
	{"f1c1_448x96_1x1_20", Conv2DParams{N: 8, C: 448, H: 20, W: 20, O: 96, KH: 1, KW: 1}},
	{"h4reg_192x68_3x3_20", Conv2DParams{N: 8, C: 192, H: 20, W: 20, O: 68, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"s3down_256x384_3x3s2_20", Conv2DParams{N: 8, C: 256, H: 20, W: 20, O: 384, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}},
	{"s3b_192x192_3x3_10", Conv2DParams{N: 8, C: 192, H: 10, W: 10, O: 192, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"p0c1_768x192_1x1_10", Conv2DParams{N: 8, C: 768, H: 10, W: 10, O: 192, KH: 1, KW: 1}},
	{"h5reg_384x68_3x3_10", Conv2DParams{N: 8, C: 384, H: 10, W: 10, O: 68, KH: 3, KW: 3, PH: 1, PW: 1}},
}

// BenchmarkConvGradPPYOLOE times, per ppyoloe_s layer shape, the forward
// convolution (fwd), the input gradient (dx), the filter gradient (dw)
// and, as the bound, one Sgemm of the same size on operands in memory
// (sgemm: O × N·OH·OW × C·KH·KW). GOMAXPROCS threads; with -cpu 1 the
// cpu-ns/op metric is the steadier figure. Select with
// -bench 'ConvGradPPYOLOE/<layer>/<kernel>'.
func BenchmarkConvGradPPYOLOE(b *testing.B) {
	for _, l := range ppyoloeConvs {
		p := convGemmParams(l.p)
		threads := runtime.GOMAXPROCS(0)
		r := rand.New(rand.NewPCG(1, 2))
		x := perfRandom(r, p.N*p.C*p.H*p.W, false)
		w := perfRandom(r, p.filterSize(), false)
		dy := perfRandom(r, p.N*p.O*p.OutH()*p.OutW(), false)
		flops := 2 * float64(p.N*p.O*p.OutH()*p.OutW()*p.C*p.KH*p.KW)
		report := func(b *testing.B) {
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		}
		b.Run(fmt.Sprintf("%s/fwd", l.name), func(b *testing.B) {
			out := make([]float32, len(dy))
			ws := make([]float32, Conv2DWorkspaceFor(p, threads, true))
			perfLoop(b, func() { Conv2D(p, x, w, out, ws, threads) })
			report(b)
		})
		b.Run(fmt.Sprintf("%s/dx", l.name), func(b *testing.B) {
			dx := make([]float32, len(x))
			ws := make([]float32, Conv2DGradInputWorkspaceFor(p, threads, true))
			perfLoop(b, func() { Conv2DGradInput(p, dy, w, dx, ws, threads) })
			report(b)
		})
		b.Run(fmt.Sprintf("%s/dw", l.name), func(b *testing.B) {
			dw := make([]float32, len(w))
			ws := make([]float32, Conv2DGradFilterWorkspaceFor(p, threads, true))
			perfLoop(b, func() { Conv2DGradFilter(p, dy, x, dw, ws, threads) })
			report(b)
		})
		b.Run(fmt.Sprintf("%s/dw-old", l.name), func(b *testing.B) {
			convFilterGemmOff = true
			defer func() { convFilterGemmOff = false }()
			dw := make([]float32, len(w))
			ws := make([]float32, Conv2DGradFilterWorkspaceFor(p, threads, true))
			perfLoop(b, func() { Conv2DGradFilter(p, dy, x, dw, ws, threads) })
			report(b)
		})
		b.Run(fmt.Sprintf("%s/dx-scalarcol2im", l.name), func(b *testing.B) {
			col2imStride2Off = true
			defer func() { col2imStride2Off = false }()
			dx := make([]float32, len(x))
			ws := make([]float32, Conv2DGradInputWorkspaceFor(p, threads, true))
			perfLoop(b, func() { Conv2DGradInput(p, dy, w, dx, ws, threads) })
			report(b)
		})
		b.Run(fmt.Sprintf("%s/dx-old", l.name), func(b *testing.B) {
			convGradInputConvOff = true
			defer func() { convGradInputConvOff = false }()
			dx := make([]float32, len(x))
			ws := make([]float32, Conv2DGradInputWorkspaceFor(p, threads, true))
			perfLoop(b, func() { Conv2DGradInput(p, dy, w, dx, ws, threads) })
			report(b)
		})
		b.Run(fmt.Sprintf("%s/dx-nodirect", l.name), func(b *testing.B) {
			convDirectOff.bwd = true
			defer func() { convDirectOff.bwd = false }()
			dx := make([]float32, len(x))
			ws := make([]float32, Conv2DGradInputWorkspaceFor(p, threads, true))
			perfLoop(b, func() { Conv2DGradInput(p, dy, w, dx, ws, threads) })
			report(b)
		})
		b.Run(fmt.Sprintf("%s/sgemm", l.name), func(b *testing.B) {
			k, q := p.C*p.KH*p.KW, p.N*p.OutH()*p.OutW()
			col := perfRandom(r, k*q, false)
			out := make([]float32, p.O*q)
			perfLoop(b, func() { Sgemm(false, false, p.O, q, k, 1, w, k, col, q, 0, out, q, threads) })
			report(b)
		})
	}
}

// BenchmarkConvFilterLenet compares the filter gradient's kernels on
// LeNet's second convolution (6→16 5×5 on 14×14, batch 64), which the
// batched GEMM takes: gemm against the direct kernel (direct).
func BenchmarkConvFilterLenet(b *testing.B) {
	p := perfLenetConvs[1].p
	threads := runtime.GOMAXPROCS(0)
	r := rand.New(rand.NewPCG(1, 2))
	x := perfRandom(r, p.N*p.C*p.H*p.W, false)
	dy := perfRandom(r, p.N*p.O*p.OutH()*p.OutW(), false)
	for _, off := range []bool{false, true} {
		name := "gemm"
		if off {
			name = "direct"
		}
		b.Run(name, func(b *testing.B) {
			convFilterGemmOff = off
			defer func() { convFilterGemmOff = false }()
			dw := make([]float32, p.filterSize())
			ws := make([]float32, Conv2DGradFilterWorkspaceFor(p, threads, true))
			perfLoop(b, func() { Conv2DGradFilter(p, dy, x, dw, ws, threads) })
		})
	}
}
