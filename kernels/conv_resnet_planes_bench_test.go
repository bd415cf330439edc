package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

// BenchmarkConvResNetPlanes times resnet18ish's stride-1 3×3 convolutions
// on small output planes (layer 2's 8×8, layer 3's 4×4, layer 4's 2×2) as
// inference runs them: bias and ReLU fused ("relu"), or, as the second
// convolution of a residual block, bias, the residual and ReLU ("res"),
// weights packed once, at batches 8 and 64, on GOMAXPROCS threads. Select
// with -bench 'ConvResNetPlanes/b=<N>/<layer>/<epilogue>'.
func BenchmarkConvResNetPlanes(b *testing.B) {
	for _, n := range []int{8, 64} {
		for _, l := range convBenchLayers {
			if l.name != "r18_l2" && l.name != "r18_l3" && l.name != "r18_l4" {
				continue
			}
			for _, withRes := range []bool{false, true} {
				p, x, w, out := convDeployLayer(l.p, n)
				p.Epilogue.Act = ActRelu
				name := "relu"
				if withRes {
					p.Epilogue.Residual32 = convDeployValues(rand.New(rand.NewPCG(3, 4)), len(out), 1)
					name = "res"
				}
				b.Run(fmt.Sprintf("b=%d/%s/%s", n, l.name, name), func(b *testing.B) {
					threads := runtime.GOMAXPROCS(0)
					ws := make([]float32, Conv2DWorkspaceFor(p, threads, true))
					perfLoopCPU(b, func() { Conv2D(p, x, w, out, ws, threads) })
				})
			}
		}
	}
}
