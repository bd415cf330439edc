package kernels

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// BenchmarkConvResNetStrided times resnet18ish's stride-2 convolutions
// (convBenchLayers: the 7×7/2 stem, each stage's 3×3/2 and 1×1/2
// downsampling) as inference runs them: bias and ReLU fused, weights
// packed once, at the inference table's batches, on GOMAXPROCS threads.
// Select with -bench 'ConvResNetStrided/b=<N>/<layer>'.
func BenchmarkConvResNetStrided(b *testing.B) {
	for _, n := range []int{1, 8, 64} {
		for _, l := range convBenchLayers {
			if l.p.SW != 2 || !strings.HasPrefix(l.name, "r18") {
				continue
			}
			p, x, w, out := convDeployLayer(l.p, n)
			p.Epilogue.Act = ActRelu
			b.Run(fmt.Sprintf("b=%d/%s", n, l.name), func(b *testing.B) {
				threads := runtime.GOMAXPROCS(0)
				ws := make([]float32, Conv2DWorkspaceFor(p, threads, true))
				perfLoopCPU(b, func() { Conv2D(p, x, w, out, ws, threads) })
			})
		}
	}
}
