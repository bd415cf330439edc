package kernels

import (
	"fmt"
	"runtime"
	"testing"
)

// The blocked layout's data movement beside its NCHW counterparts, on the
// detector's and ResNet's maps: BenchmarkNCHWcLayout…/nchw is the plain
// kernel on the same tensor, …/nchwc the blocked one, each on
// GOMAXPROCS threads (-cpu 2 for two).

// nchwcBenchMaps are the maps the reorders are timed on: the detector's
// (16–384 channels on 160×160 … 10×10) and ResNet's (64–512 on 32×32 …
// 2×2), as n, c, h·w.
var nchwcBenchMaps = [][3]int{
	{1, 32, 160 * 160}, {1, 96, 40 * 40}, {1, 384, 10 * 10},
	{8, 64, 32 * 32}, {8, 512, 2 * 2},
}

// BenchmarkNCHWcLayoutReorder times both reorders; …/copy is a plain copy
// of the same tensor, the floor a reorder can reach.
func BenchmarkNCHWcLayoutReorder(b *testing.B) {
	threads := runtime.GOMAXPROCS(0)
	for _, s := range nchwcBenchMaps {
		n, c, hw := s[0], s[1], s[2]
		x, y := make([]float32, n*c*hw), make([]float32, n*c*hw)
		for i := range x {
			x[i] = float32(i%17) - 8
		}
		name := fmt.Sprintf("%dx%dx%d", n, c, hw)
		b.Run(name+"/copy", func(b *testing.B) { perfLoop(b, func() { copy(y, x) }) })
		b.Run(name+"/to", func(b *testing.B) { perfLoop(b, func() { ReorderToNCHWc(x, y, n, c, hw, nchwcBenchBlock(), threads) }) })
		b.Run(name+"/from", func(b *testing.B) {
			perfLoop(b, func() { ReorderFromNCHWc(x, y, n, c, hw, nchwcBenchBlock(), threads) })
		})
	}
}

// BenchmarkNCHWcLayoutMaxPool times the detector's SPP pools and ResNet's
// pools against MaxPool2DValues on the same maps.
func BenchmarkNCHWcLayoutMaxPool(b *testing.B) {
	threads := runtime.GOMAXPROCS(0)
	for _, c := range []struct {
		name string
		p    Pool2DParams
	}{
		{"spp5_1x192x10x10", Pool2DParams{N: 1, C: 192, H: 10, W: 10, KH: 5, KW: 5, SH: 1, SW: 1, PH: 2, PW: 2}},
		{"spp9_1x192x10x10", Pool2DParams{N: 1, C: 192, H: 10, W: 10, KH: 9, KW: 9, SH: 1, SW: 1, PH: 4, PW: 4}},
		{"spp13_1x192x10x10", Pool2DParams{N: 1, C: 192, H: 10, W: 10, KH: 13, KW: 13, SH: 1, SW: 1, PH: 6, PW: 6}},
		{"spp13_8x192x10x10", Pool2DParams{N: 8, C: 192, H: 10, W: 10, KH: 13, KW: 13, SH: 1, SW: 1, PH: 6, PW: 6}},
		{"3x3s2_1x64x32x32", Pool2DParams{N: 1, C: 64, H: 32, W: 32, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}},
		{"3x3s2_8x64x32x32", Pool2DParams{N: 8, C: 64, H: 32, W: 32, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}},
		{"2x2s2_8x64x32x32", Pool2DParams{N: 8, C: 64, H: 32, W: 32, KH: 2, KW: 2, SH: 2, SW: 2}},
	} {
		p := c.p
		x := make([]float32, p.N*p.C*p.H*p.W)
		for i := range x {
			x[i] = float32(i%29) - 14
		}
		out := make([]float32, p.N*p.C*p.OutH()*p.OutW())
		b.Run(c.name+"/nchw", func(b *testing.B) { perfLoop(b, func() { MaxPool2DValues(p, x, out, threads) }) })
		b.Run(c.name+"/nchwc", func(b *testing.B) { perfLoop(b, func() { MaxPoolNCHWc(p, nchwcBenchBlock(), x, out, threads) }) })
	}
}

// BenchmarkNCHWcLayoutUpsample times the detector's nearest ×2
// upsamplings against Resize on the same maps.
func BenchmarkNCHWcLayoutUpsample(b *testing.B) {
	threads := runtime.GOMAXPROCS(0)
	s := ResizeSpec{Mode: ResizeNearest, Transform: Asymmetric, Nearest: Floor}
	for _, m := range [][4]int{{1, 192, 10, 10}, {1, 96, 20, 20}, {8, 96, 20, 20}} {
		n, c, h, w := m[0], m[1], m[2], m[3]
		axes := []ResizeAxis{ResizeIdentity(n), ResizeIdentity(c), ResizeTaps(s, h, 2*h, 2, 0, 1), ResizeTaps(s, w, 2*w, 2, 0, 1)}
		x, out := make([]float32, n*c*h*w), make([]float32, 4*n*c*h*w)
		name := fmt.Sprintf("%dx%dx%dx%d", n, c, h, w)
		b.Run(name+"/nchw", func(b *testing.B) { perfLoop(b, func() { Resize(axes, x, out, 0, threads) }) })
		b.Run(name+"/nchwc", func(b *testing.B) {
			perfLoop(b, func() { UpsampleNearestNCHWc(x, out, n, c, h, w, nchwcBenchBlock(), 2, 2, threads) })
		})
	}
}

// BenchmarkNCHWcLayoutMean times the attention's and the global pool's
// mean over the pixels, [N,C,H,W] over axes 2, 3 against
// [N,C/16,H,W,16] over the same axes.
func BenchmarkNCHWcLayoutMean(b *testing.B) {
	threads := runtime.GOMAXPROCS(0)
	for _, m := range [][4]int{{1, 48, 80, 80}, {1, 96, 40, 40}, {1, 192, 20, 20}, {1, 384, 10, 10}, {8, 192, 20, 20}, {8, 512, 2, 2}} {
		n, c, h, w := m[0], m[1], m[2], m[3]
		x, out := make([]float32, n*c*h*w), make([]float32, n*c)
		for i := range x {
			x[i] = float32(i%13) - 6
		}
		name := fmt.Sprintf("%dx%dx%dx%d", n, c, h, w)
		for _, v := range []struct {
			layout string
			shape  []int
		}{{"nchw", []int{n, c, h, w}}, {"nchwc", []int{n, c / nchwcBenchBlock(), h, w, nchwcBenchBlock()}}} {
			b.Run(name+"/"+v.layout, func(b *testing.B) {
				perfLoop(b, func() {
					if err := Reduce(ReduceMean, threads, out, x, v.shape, []int{2, 3}); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
	}
}

// BenchmarkNCHWcLayoutGate times the attention's gate, the map times its
// per-channel weights: [N,C,H,W]·[N,C,1,1] against
// [N,C/16,H,W,16]·[N,C/16,1,1,16].
func BenchmarkNCHWcLayoutGate(b *testing.B) {
	threads := runtime.GOMAXPROCS(0)
	for _, m := range [][4]int{{1, 48, 80, 80}, {1, 96, 40, 40}, {1, 192, 20, 20}, {1, 384, 10, 10}, {8, 192, 20, 20}} {
		n, c, h, w := m[0], m[1], m[2], m[3]
		x, g, out := make([]float32, n*c*h*w), make([]float32, n*c), make([]float32, n*c*h*w)
		for i := range x {
			x[i] = float32(i%13) - 6
		}
		for i := range g {
			g[i] = float32(i%5) * 0.25
		}
		name := fmt.Sprintf("%dx%dx%dx%d", n, c, h, w)
		b16 := nchwcBenchBlock()
		for _, v := range []struct {
			layout string
			xs, gs []int
		}{
			{"nchw", []int{n, c, h, w}, []int{n, c, 1, 1}},
			{"nchwc", []int{n, c / b16, h, w, b16}, []int{n, c / b16, 1, 1, b16}},
		} {
			b.Run(name+"/"+v.layout, func(b *testing.B) {
				perfLoop(b, func() {
					if err := Binary(BinMul, threads, out, v.xs, x, v.xs, g, v.gs); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
	}
}
