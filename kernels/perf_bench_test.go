package kernels

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
)

// perfLoop runs f b.N times and reports, besides wall time, the CPU time
// of the calling thread per op (cpu-ns/op): on a loaded machine it tracks
// the work a single-threaded kernel does much better than wall time.
func perfLoop(b *testing.B, f func()) { perfLoopCPU(b, f) }

// perfLoopCPU is perfLoop returning the CPU nanoseconds per call.
func perfLoopCPU(b *testing.B, f func()) float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var r0, r1 syscall.Rusage
	f()
	b.ResetTimer()
	syscall.Getrusage(1, &r0) // RUSAGE_THREAD
	for range b.N {
		f()
	}
	syscall.Getrusage(1, &r1)
	ns := float64(r1.Utime.Nano()+r1.Stime.Nano()-r0.Utime.Nano()-r0.Stime.Nano()) / float64(b.N)
	b.ReportMetric(ns, "cpu-ns/op")
	return ns
}

// The training-step kernels of LeNet on MNIST (batch 64), one thread and
// two, for profiling: go test -run - -bench Perf ./kernels/.

var perfLenetConvs = []struct {
	name string
	p    Conv2DParams
}{
	{"conv1", Conv2DParams{N: 64, C: 1, H: 28, W: 28, O: 6, KH: 5, KW: 5, SH: 1, SW: 1, PH: 2, PW: 2, DH: 1, DW: 1, Groups: 1}},
	{"conv2", Conv2DParams{N: 64, C: 6, H: 14, W: 14, O: 16, KH: 5, KW: 5, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1}},
}

func perfFill(n int, seed int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32((i*seed)%13)/6 - 1
	}
	return x
}

func BenchmarkPerfConv(b *testing.B) {
	for _, tc := range perfLenetConvs {
		p := tc.p
		x := perfFill(p.N*p.C*p.H*p.W, 7)
		w := perfFill(p.O*p.C*p.KH*p.KW, 5)
		dy := perfFill(p.N*p.O*p.OutH()*p.OutW(), 3)
		for _, th := range []int{1, 2} {
			for _, off := range []bool{false, true} {
				path := "/direct"
				if off {
					path = "/gemm"
				}
				b.Run(tc.name+"/fwd/t"+string(rune('0'+th))+path, func(b *testing.B) {
					convDirectOff.fwd = off
					defer func() { convDirectOff.fwd = false }()
					out := make([]float32, len(dy))
					ws := make([]float32, Conv2DWorkspace(p, th))
					perfLoop(b, func() { Conv2D(p, x, w, out, ws, th) })
				})
			}
			for _, off := range []bool{false, true} {
				path := "/direct"
				if off {
					path = "/gemm"
				}
				b.Run(tc.name+"/dx/t"+string(rune('0'+th))+path, func(b *testing.B) {
					convDirectOff.bwd = off
					defer func() { convDirectOff.bwd = false }()
					dx := make([]float32, len(x))
					ws := make([]float32, Conv2DGradInputWorkspace(p, th))
					perfLoop(b, func() { Conv2DGradInput(p, dy, w, dx, ws, th) })
				})
			}
			for _, off := range []bool{false, true} {
				path := "/direct"
				if off {
					path = "/gemm"
				}
				b.Run(tc.name+"/dw/t"+string(rune('0'+th))+path, func(b *testing.B) {
					convDirectOff.filter = off
					defer func() { convDirectOff.filter = false }()
					dw := make([]float32, len(w))
					ws := make([]float32, Conv2DGradFilterWorkspace(p, th))
					perfLoop(b, func() { Conv2DGradFilter(p, dy, x, dw, ws, th) })
				})
			}
		}
	}
}

func BenchmarkPerfPool(b *testing.B) {
	for _, sz := range [][3]int{{6, 28, 28}, {16, 10, 10}} {
		p := Pool2DParams{N: 64, C: sz[0], H: sz[1], W: sz[2], KH: 2, KW: 2, SH: 2, SW: 2}
		x := perfFill(p.N*p.C*p.H*p.W, 7)
		n := p.N * p.C * p.OutH() * p.OutW()
		out, idx := make([]float32, n), make([]int64, n)
		b.Run("max"+string(rune('0'+sz[1]/10)), func(b *testing.B) {
			perfLoop(b, func() { MaxPool2D(p, x, out, idx, 1) })
		})
		dx := make([]float32, len(x))
		b.Run("maxgrad"+string(rune('0'+sz[1]/10)), func(b *testing.B) {
			perfLoop(b, func() { MaxPool2DGrad(p.N*p.C, p.H*p.W, p.OutH()*p.OutW(), out, idx, dx, 1) })
		})
	}
}

// BenchmarkConvSmallCNN times the small CNN's two convolutions (bench/run
// -inference's cnn: 3→32 on 32×32 and 32→64 on 16×16, each with its bias
// and ReLU fused) as Conv2D picks their kernel, at the batches of the
// inference table, alone, followed by the 2×2 max pool, and with the pool
// fused (Pool2); with -cpu 1 the cpu-ns/op metric is the steadier one.
func BenchmarkConvSmallCNN(b *testing.B) {
	for _, l := range convBenchLayers[:2] {
		for _, n := range []int{1, 8, 64} {
			p := l.p
			p.N, p.SH, p.SW, p.DH, p.DW, p.Groups = n, 1, 1, 1, 1, 1
			p.Epilogue = Epilogue{Act: ActRelu, Bias32: perfFill(p.O, 3)}
			x := perfFill(p.N*p.C*p.H*p.W, 7)
			w := perfFill(p.O*p.C*p.KH*p.KW, 5)
			out := make([]float32, p.N*p.O*p.OutH()*p.OutW())
			threads := runtime.GOMAXPROCS(0)
			ws := make([]float32, Conv2DWorkspace(p, threads))
			b.Run(fmt.Sprintf("%s/batch=%d", l.name, n), func(b *testing.B) {
				perfLoop(b, func() { Conv2D(p, x, w, out, ws, threads) })
			})
			// The 2×2 max pool after it: as a second call, and fused.
			pp := p.convPoolParams()
			pooled := make([]float32, pp.N*pp.C*pp.OutH()*pp.OutW())
			b.Run(fmt.Sprintf("%s/batch=%d/then_pool", l.name, n), func(b *testing.B) {
				perfLoop(b, func() {
					Conv2D(p, x, w, out, ws, threads)
					MaxPool2DValues(pp, out, pooled, threads)
				})
			})
			fp := p
			fp.Pool2 = true
			fws := make([]float32, Conv2DWorkspace(fp, threads))
			b.Run(fmt.Sprintf("%s/batch=%d/pooled", l.name, n), func(b *testing.B) {
				perfLoop(b, func() { Conv2D(fp, x, w, pooled, fws, threads) })
			})
		}
	}
}
