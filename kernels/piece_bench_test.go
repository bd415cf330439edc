package kernels

import (
	"runtime"
	"testing"
)

// pieceLenetPools are lenet's two pools on a piece of 12 samples, the
// size remat's split runs them at when lenet is fitted to half its peak.
var pieceLenetPools = []struct {
	name string
	p    Pool2DParams
}{
	{"block1", Pool2DParams{N: 12, C: 6, H: 28, W: 28, KH: 2, KW: 2, SH: 2, SW: 2}},
	{"block2", Pool2DParams{N: 12, C: 16, H: 10, W: 10, KH: 2, KW: 2, SH: 2, SW: 2}},
}

// BenchmarkPieceKernels times the small kernels of lenet's fitted step on
// one piece of 12 samples, on GOMAXPROCS threads (run it with -cpu 1,2):
// ReLU's gradient, the pools without indices and their gradients, and the
// bias gradients' running sums over the batch.
func BenchmarkPieceKernels(b *testing.B) {
	for _, c := range pieceLenetPools {
		p := c.p
		n, on := p.N*p.C*p.H*p.W, p.N*p.C*p.OutH()*p.OutW()
		x, dy, out := perfFill(n, 7), perfFill(on, 5), make([]float32, on)
		dx := make([]float32, n)
		b.Run("relu_grad/"+c.name, func(b *testing.B) {
			th := runtime.GOMAXPROCS(0)
			y := perfFill(n, 3)
			perfLoop(b, func() { ReluGrad(dx, y, x, th) })
		})
		b.Run("max_pool2d_values/"+c.name, func(b *testing.B) {
			th := runtime.GOMAXPROCS(0)
			perfLoop(b, func() { MaxPool2DValues(p, x, out, th) })
		})
		b.Run("max_pool2d_grad_x/"+c.name, func(b *testing.B) {
			th := runtime.GOMAXPROCS(0)
			perfLoop(b, func() { MaxPool2DGradX(p, dy, x, dx, th) })
		})
		b.Run("reduce_sum_batch_into/"+c.name, func(b *testing.B) {
			th := runtime.GOMAXPROCS(0)
			acc, tmp := make([]float32, p.C), make([]float32, p.C)
			shape := []int{p.N, p.C, p.H, p.W}
			perfLoop(b, func() { ReduceSumBatchInto(th, acc, tmp, x, shape, []int{0, 2, 3}) })
		})
	}
}
