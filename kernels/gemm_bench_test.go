package kernels

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkGemm measures Sgemm on all cores for square sizes and for the
// shapes of a small MLP (batch 128) and of LeNet-5's second convolution as
// an im2col product (batch 128, 16 filters of 6×5×5 over 10×10 outputs).
func BenchmarkGemm(b *testing.B) {
	type shape struct {
		name           string
		transA, transB bool
		m, n, k        int
	}
	var shapes []shape
	for _, n := range []int{128, 256, 512, 1024} {
		shapes = append(shapes, shape{fmt.Sprintf("n=%d", n), false, false, n, n, n})
	}
	for _, l := range [][3]int{{128, 784, 512}, {128, 512, 256}, {128, 256, 10}} {
		batch, in, out := l[0], l[1], l[2]
		dims := fmt.Sprintf("%dx%dx%d", batch, in, out)
		shapes = append(shapes,
			shape{"mlp/" + dims, false, false, batch, out, in},           // Y = X·W
			shape{"mlp-bwd-data/" + dims, false, true, batch, in, out},   // dX = dY·Wᵀ
			shape{"mlp-bwd-weight/" + dims, true, false, in, out, batch}, // dW = Xᵀ·dY
		)
	}
	shapes = append(shapes,
		shape{"lenet-conv2/16x150x12800", false, false, 16, 12800, 150}, // W·im2col(X)
		shape{"lenet-conv2/12800x150x16", false, true, 12800, 16, 150},  // im2col(X)·Wᵀ
	)
	for _, s := range shapes {
		b.Run(s.name, func(b *testing.B) {
			// Read here, not above: -cpu sets GOMAXPROCS per leaf benchmark.
			threads := runtime.GOMAXPROCS(0)
			a := make([]float32, s.m*s.k)
			bm := make([]float32, s.k*s.n)
			c := make([]float32, s.m*s.n)
			for i := range a {
				a[i] = float32(i%7) - 3
			}
			for i := range bm {
				bm[i] = float32(i%5) - 2
			}
			lda, ldb := s.k, s.n
			if s.transA {
				lda = s.m
			}
			if s.transB {
				ldb = s.k
			}
			b.ResetTimer()
			for b.Loop() {
				Sgemm(s.transA, s.transB, s.m, s.n, s.k, 1, a, lda, bm, ldb, 0, c, s.n, threads)
			}
			b.ReportMetric(2*float64(s.m)*float64(s.n)*float64(s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkGemmPackedB measures x·Wᵀ with W packed once (GemmPackedB), as
// a weight at inference, beside the unpacked Sgemm, for the shapes of
// the exported MLP's first layer at batch 1, 8 and 64 and of a wider
// layer; threads is the thread count the call may use (the parallel
// threshold decides whether it does).
func BenchmarkGemmPackedB(b *testing.B) {
	for _, s := range [][3]int{{1, 128, 784}, {1, 10, 4096}, {8, 128, 784}, {64, 128, 784}, {8, 512, 512}} {
		m, n, k := s[0], s[1], s[2]
		x, w, c := make([]float32, m*k), make([]float32, n*k), make([]float32, m*n)
		for i := range w {
			w[i] = float32(i%5) - 2
		}
		pb := make([]float32, PackedGemmBLen[float32](k, n))
		PackGemmB(pb, true, k, n, w, k)
		for _, threads := range []int{1, 2} {
			for _, packed := range []bool{true, false} {
				name := fmt.Sprintf("%dx%dx%d/threads=%d/packed=%v", m, n, k, threads, packed)
				b.Run(name, func(b *testing.B) {
					for b.Loop() {
						if packed {
							GemmPackedB(false, true, m, n, k, 1, x, k, w, k, pb, 0, c, n, threads)
						} else {
							Sgemm(false, true, m, n, k, 1, x, k, w, k, 0, c, n, threads)
						}
					}
					b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}
