package kernels

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// nchwcBenchLayers are the layers the blocked layout can run of the
// deployed ppyoloe_s (ppyoloeDeployConvs with whole blocks of output
// channels and blocked or 3-channel inputs; bias and SiLU) and of
// resnet18ish (convBenchLayers' r18 layers; bias and ReLU).
func nchwcBenchLayers() (names []string, ps []Conv2DParams) {
	for _, l := range ppyoloeDeployConvs {
		if b := nchwcBenchBlock(); l.p.O%b == 0 && (l.p.C%b == 0 || l.p.C == 3) {
			names, ps = append(names, "det_"+l.name), append(ps, l.p)
		}
	}
	for _, l := range convBenchLayers {
		if strings.HasPrefix(l.name, "r18") {
			names, ps = append(names, l.name), append(ps, l.p)
		}
	}
	return names, ps
}

// BenchmarkConvNCHWc times each of nchwcBenchLayers as inference runs it,
// at batch 1 and 8 on GOMAXPROCS threads, in NCHW (Conv2D, weights packed
// once) and in the blocked layout (ConvNCHWc on the input reordered and
// the weights packed once), with the same epilogue. cpu-ns/op is the
// calling thread's CPU time. Select with -bench
// 'ConvNCHWc/b=<N>/<layer>/<nchw|nchwc|winograd>' (winograd: ConvNCHWc
// with p.Winograd, on the 3×3 stride-1 layers of a blocked input).
func BenchmarkConvNCHWc(b *testing.B) {
	names, ps := nchwcBenchLayers()
	blk := nchwcBenchBlock()
	for _, n := range []int{1, 8} {
		for i, l := range ps {
			p, x, w, out := convDeployLayer(l, n)
			if strings.HasPrefix(names[i], "r18") {
				p.Epilogue.Act = ActRelu
			}
			blockedIn := p.C%blk == 0
			xc := x
			if blockedIn {
				xc = toNCHWc(x, p.N, p.C, p.H*p.W, blk)
			}
			packed := make([]float32, PackConvNCHWcLen(p))
			PackConvNCHWc(p, blk, blockedIn, w, packed)
			flops := 2 * float64(p.N*p.O*p.OutH()*p.OutW()*p.C*p.KH*p.KW)
			threads := runtime.GOMAXPROCS(0)
			b.Run(fmt.Sprintf("b=%d/%s/nchw", n, names[i]), func(b *testing.B) {
				ws := make([]float32, Conv2DWorkspaceFor(p, threads, true))
				ns := perfLoopCPU(b, func() { Conv2D(p, x, w, out, ws, threads) })
				b.ReportMetric(flops/ns, "cpu-GFLOP/s")
			})
			b.Run(fmt.Sprintf("b=%d/%s/nchwc", n, names[i]), func(b *testing.B) {
				ws := make([]float32, ConvNCHWcWorkspace(p, blk, blockedIn, threads))
				ns := perfLoopCPU(b, func() { ConvNCHWc(p, blk, blockedIn, xc, packed, out, ws, threads) })
				b.ReportMetric(flops/ns, "cpu-GFLOP/s")
			})
			if winocOK(p, blk, blockedIn) != nil {
				continue
			}
			wp := p
			wp.Winograd = true
			wpacked := make([]float32, PackConvNCHWcLen(wp))
			PackConvNCHWc(wp, blk, true, w, wpacked)
			b.Run(fmt.Sprintf("b=%d/%s/winograd", n, names[i]), func(b *testing.B) {
				ws := make([]float32, ConvNCHWcWorkspace(wp, blk, true, threads))
				ns := perfLoopCPU(b, func() { ConvNCHWc(wp, blk, true, xc, wpacked, out, ws, threads) })
				b.ReportMetric(flops/ns, "cpu-GFLOP/s")
			})
		}
	}
}

// nchwcBenchBlock is the channel block the benchmarks run the blocked
// layout with: this machine's, or 16 where it has no vector kernels.
func nchwcBenchBlock() int {
	if b := NCHWcBlock(); b != 0 {
		return b
	}
	return 16
}
