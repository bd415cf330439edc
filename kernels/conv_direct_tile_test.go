package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestConvDirectTilesSameBits: the direct forward gives the same bits,
// NaN payloads included, whichever tile of output channels and rows it
// calls the kernel with and whichever strip of rows each tile computes
// before the next (a block of 16 channels in one call per row, over the
// whole map, as before tiles, is the reference), with no epilogue, the
// kernel's bias and ReLU, and the epilogue passes, on 1 and 2 threads.
func TestConvDirectTilesSameBits(t *testing.T) {
	if !convRowOK() {
		t.Skip("no AVX-512: no direct kernel")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	r := rand.New(rand.NewPCG(63, 64))
	tiles := [][3]int{{16, 1, 1000}, {8, 3}, {8, 2}, {6, 4}, {5, 5}, {4, 6}, {4, 4}, {3, 6}, {2, 6}, {1, 6}, {7, 4}, {12, 2}}
	for _, p := range []Conv2DParams{
		{N: 2, C: 3, H: 32, W: 32, O: 32, KH: 3, KW: 3, PH: 1, PW: 1},               // the small CNN's first layer
		{N: 8, C: 32, H: 16, W: 16, O: 64, KH: 3, KW: 3, PH: 1, PW: 1},              // its second
		{N: 2, C: 5, H: 13, W: 21, O: 23, KH: 3, KW: 3, PH: 1, PW: 1},               // 16 + 7 channels, 21 columns
		{N: 2, C: 4, H: 11, W: 9, O: 6, KH: 5, KW: 5, PH: 2, PW: 2},                 // LeNet-like, 6 channels
		{N: 1, C: 6, H: 10, W: 18, O: 12, KH: 3, KW: 3, PH: 2, PW: 2, DH: 2, DW: 2}, // dilated
		{N: 2, C: 8, H: 7, W: 17, O: 10, KH: 3, KW: 3, PH: 1, PW: 1, Groups: 2},     // groups of 5 channels
		{N: 1, C: 16, H: 40, W: 40, O: 16, KH: 3, KW: 3, PH: 1, PW: 1},              // cut into bands on 2 threads
		{N: 2, C: 16, H: 70, W: 64, O: 24, KH: 3, KW: 3, PH: 1, PW: 1},              // a large sample: 16 + 8 channels interleaved on strips
	} {
		p = convGemmParams(p)
		if !p.convDirectFwd() {
			t.Fatalf("%+v: not on the direct kernel", p)
		}
		if p.H == 70 && !p.convDirectStripBlocks() {
			t.Fatalf("%+v: blocks not interleaved on strips", p)
		}
		x := perfRandom(r, p.N*p.C*p.H*p.W, true)
		w := perfRandom(r, p.O*p.C/p.Groups*p.KH*p.KW, true)
		bias := perfRandom(r, p.O, true)
		elems := p.N * p.O * p.OutH() * p.OutW()
		for _, ep := range []Epilogue{{}, {Act: ActRelu, Bias32: bias}, {Act: ActSilu, Bias32: bias}} {
			for _, th := range []int{1, 2} {
				fp := p
				fp.Epilogue = ep
				run := func(tile [3]int) []float32 {
					convDirectTileForce.ob, convDirectTileForce.rows, convDirectStripForce = tile[0], tile[1], tile[2]
					defer func() { convDirectTileForce.ob, convDirectTileForce.rows, convDirectStripForce = 0, 0, 0 }()
					out := make([]float32, elems)
					Conv2D(fp, x, w, out, make([]float32, Conv2DWorkspaceFor(fp, th, true)), th)
					return out
				}
				want := run(tiles[0])
				// {}: the tile and strip Conv2D picks; then other strips.
				for _, tile := range append(tiles[1:], [3]int{}, [3]int{0, 0, 1}, [3]int{8, 3, 2}, [3]int{4, 4, 3}) {
					what := fmt.Sprintf("%+v/act=%v/threads=%d/tile=%v", p, ep.Act, th, tile)
					if ep.Act == ActSilu && th > 1 {
						// The tile's rows set the bands' edges, and the SiLU
						// pass run band by band may give a NaN another sign
						// than run on whole planes (its vector and scalar
						// tails differ): compare NaNs as NaNs.
						perfSameBits(t, what, run(tile), want)
						continue
					}
					convRowsStrictBits(t, what, run(tile), want)
				}
			}
		}
	}
}

// TestConvDirectBwdTilesSameBits: the direct input gradient gives the
// same bits, NaN payloads included, whichever tile of input channels and
// rows it calls the kernel with (16 channels a row at a time, as before
// tiles, is the reference), on 1 and 3 threads.
func TestConvDirectBwdTilesSameBits(t *testing.T) {
	if !convRowOK() {
		t.Skip("no AVX-512: no direct kernel")
	}
	r := rand.New(rand.NewPCG(65, 66))
	tiles := [][2]int{{16, 1}, {8, 3}, {8, 2}, {6, 4}, {5, 5}, {4, 6}, {3, 2}, {1, 6}, {12, 2}}
	for _, p := range []Conv2DParams{
		{N: 2, C: 6, H: 14, W: 14, O: 16, KH: 5, KW: 5},                             // LeNet's second layer
		{N: 2, C: 16, H: 20, W: 20, O: 16, KH: 3, KW: 3, PH: 1, PW: 1},              // ppyoloe_s's 16→16, smaller
		{N: 3, C: 13, H: 9, W: 21, O: 7, KH: 3, KW: 5, PH: 2, PW: 1},                // 13 channels, rows past dy
		{N: 1, C: 10, H: 11, W: 17, O: 4, KH: 3, KW: 3, PH: 2, PW: 2, DH: 2, DW: 2}, // dilated
		{N: 2, C: 8, H: 7, W: 18, O: 6, KH: 3, KW: 3, PH: 1, PW: 1, Groups: 2},      // groups of 4 channels
	} {
		p = convGemmParams(p)
		if !p.convDirectBwd() {
			t.Fatalf("%+v: not on the direct kernel", p)
		}
		dy := perfRandom(r, p.N*p.O*p.OutH()*p.OutW(), true)
		w := perfRandom(r, p.O*p.C/p.Groups*p.KH*p.KW, true)
		for _, th := range []int{1, 3} {
			run := func(tile [2]int) []float32 {
				convDirectTileForce.ob, convDirectTileForce.rows = tile[0], tile[1]
				defer func() { convDirectTileForce.ob, convDirectTileForce.rows = 0, 0 }()
				dx := make([]float32, p.N*p.C*p.H*p.W)
				Conv2DGradInput(p, dy, w, dx, make([]float32, Conv2DGradInputWorkspaceFor(p, th, true)), th)
				return dx
			}
			want := run(tiles[0])
			for _, tile := range append(tiles[1:], [2]int{}) { // {}: the tile Conv2DGradInput picks
				convRowsStrictBits(t, fmt.Sprintf("%+v/threads=%d/tile=%v", p, th, tile), run(tile), want)
			}
		}
	}
}

// BenchmarkConvDirectStrip times the direct forward with its bias and
// SiLU (the epilogue passes) or ReLU (in the kernel) on ppyoloe_s's
// 16→16 layer at 160×160 (a padded sample of 1.6 MB) and the small CNN's
// layers, with each tile of a block computing strips of 1, 4 or all
// (0) tile rows before the next.
func BenchmarkConvDirectStrip(b *testing.B) {
	layers := []struct {
		name string
		p    Conv2DParams
	}{{"stem16", ppyoloeDeployConvs[1].p}, convBenchLayers[0], convBenchLayers[1]}
	for _, l := range layers {
		for _, n := range []int{1, 8} {
			for _, act := range []Activation{ActSilu, ActRelu} {
				for _, strip := range []int{0, 1, 4} {
					p := convGemmParams(l.p)
					p.N = n
					p.Epilogue = Epilogue{Act: act, Bias32: perfFill(p.O, 3)}
					b.Run(fmt.Sprintf("%s/batch=%d/act=%d/strip=%d", l.name, n, act, strip), func(b *testing.B) {
						convDirectStripForce = strip
						defer func() { convDirectStripForce = 0 }()
						x, w := perfFill(p.N*p.C*p.H*p.W, 7), perfFill(p.O*p.C*p.KH*p.KW, 5)
						out := make([]float32, p.N*p.O*p.OutH()*p.OutW())
						threads := runtime.GOMAXPROCS(0)
						ws := make([]float32, Conv2DWorkspaceFor(p, threads, true))
						perfLoop(b, func() { Conv2D(p, x, w, out, ws, threads) })
					})
				}
			}
		}
	}
}

// BenchmarkConvDirectTile times the direct forward on the small CNN's
// layers (bias and ReLU fused) and LeNet's with each kernel tile of output
// channels × rows forced, and with the tile Conv2D picks ("auto"); with
// -cpu 1 the cpu-ns/op metric is the steadier one.
func BenchmarkConvDirectTile(b *testing.B) {
	layers := []struct {
		name string
		p    Conv2DParams
	}{convBenchLayers[0], convBenchLayers[1], perfLenetConvs[0], perfLenetConvs[1]}
	for _, l := range layers {
		for _, n := range []int{1, 64} {
			for _, tile := range [][2]int{{}, {16, 1}, {8, 3}, {8, 2}, {6, 4}, {5, 5}, {4, 6}, {4, 4}, {3, 6}, {2, 6}} {
				p := convGemmParams(l.p)
				p.N = n
				if tile[0] > min(16, p.O) {
					continue
				}
				p.Epilogue = Epilogue{Act: ActRelu, Bias32: perfFill(p.O, 3)}
				name := "auto"
				if tile[0] > 0 {
					name = fmt.Sprintf("%dx%d", tile[0], tile[1])
				}
				b.Run(fmt.Sprintf("%s/batch=%d/tile=%s", l.name, n, name), func(b *testing.B) {
					convDirectTileForce.ob, convDirectTileForce.rows = tile[0], tile[1]
					defer func() { convDirectTileForce.ob, convDirectTileForce.rows = 0, 0 }()
					x, w := perfFill(p.N*p.C*p.H*p.W, 7), perfFill(p.O*p.C*p.KH*p.KW, 5)
					out := make([]float32, p.N*p.O*p.OutH()*p.OutW())
					threads := runtime.GOMAXPROCS(0)
					ws := make([]float32, Conv2DWorkspaceFor(p, threads, true))
					perfLoop(b, func() { Conv2D(p, x, w, out, ws, threads) })
				})
			}
		}
	}
}
