package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// BenchmarkConvDeployThreads times the convolutions of the inference
// benchmark's networks (convBenchLayers) as an optimized inference runs
// them: Conv2D's own choice of kernel, weights packed once, bias and ReLU
// fused, at batch 1 and 8, on GOMAXPROCS threads. It reports wall time
// (ns/op), so that -cpu 1,2 shows per layer what a second goroutine gains
// or loses (issue 16: no handoff where one thread is faster); run the two
// thread counts alternately, on an idle machine: a second goroutine that
// finds its core taken only adds its handoff. Select with -bench
// 'ConvDeployThreads/<layer>/b=<N>$'.
func BenchmarkConvDeployThreads(b *testing.B) {
	for _, l := range convBenchLayers {
		for _, n := range []int{1, 8} {
			p := convGemmParams(l.p)
			p.N = n
			r := rand.New(rand.NewPCG(1, 2))
			x := convDeployValues(r, p.N*p.C*p.H*p.W, 1)
			w := convDeployValues(r, p.filterSize(), math.Sqrt(2/float64(p.C*p.KH*p.KW)))
			out := make([]float32, p.N*p.O*p.OutH()*p.OutW())
			p.Epilogue = Epilogue{Act: ActRelu, Bias32: convDeployValues(r, p.O, 0.1)}
			if n := Conv2DPackedLen(p); n > 0 {
				p.Packed = make([]float32, n)
				PackConv2D(p, w, p.Packed)
			}
			b.Run(fmt.Sprintf("%s/b=%d", l.name, n), func(b *testing.B) {
				threads := runtime.GOMAXPROCS(0)
				ws := make([]float32, Conv2DWorkspaceFor(p, threads, true))
				for b.Loop() {
					Conv2D(p, x, w, out, ws, threads)
				}
			})
		}
	}
}
