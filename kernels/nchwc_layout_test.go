package kernels

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"
)

// TestReorderNCHWc holds both reorders to the plain layout change and
// checks that one undoes the other.
func TestReorderNCHWc(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	shapes := [][3]int{{1, 16, 1}, {2, 32, 7}, {3, 48, 25}, {1, 64, 100}, {2, 16, 16}, {1, 32, 2*reorderSpan + 37}, {1, 16, 2048}, {2, 32, 3 * 1024}, {8, 512, 4}}
	for hw := 2; hw < 34; hw++ { // every tail of a tile
		shapes = append(shapes, [3]int{2, 32, hw})
	}
	shapes = append(shapes, [3]int{2, 24, 37}) // blocks of 8 only
	for _, s := range shapes {
		n, c, hw := s[0], s[1], s[2]
		x := randsF32(r, n*c*hw)
		for _, b := range nchwcBlocks {
			if c%b != 0 {
				continue
			}
			for _, threads := range []int{1, 2} {
				y := make([]float32, len(x))
				ReorderToNCHWc(x, y, n, c, hw, b, threads)
				if want := toNCHWc(x, n, c, hw, b); !slices.Equal(y, want) {
					t.Fatalf("%v block %d threads %d: ReorderToNCHWc differs from the layout change", s, b, threads)
				}
				back := make([]float32, len(x))
				ReorderFromNCHWc(y, back, n, c, hw, b, threads)
				if !slices.Equal(back, x) {
					t.Fatalf("%v block %d threads %d: ReorderFromNCHWc does not undo ReorderToNCHWc", s, b, threads)
				}
			}
		}
	}
}

// TestReorderPixelsVecRowsApart4KB checks the reorder from the blocked
// layout into rows a multiple of 4 KB apart, written a half block at a
// time, on tiles and a last partial tile, against the plain copy.
func TestReorderPixelsVecRowsApart4KB(t *testing.T) {
	const b, ld = 16, 1024
	r := rand.New(rand.NewSource(6))
	for _, px := range []int{5, 16, 37, 1024} {
		blocked := randsF32(r, px*b)
		plain := make([]float32, b*ld)
		if reorderPixelsVec(plain, blocked, ld, px, b, false) == 0 {
			t.Skip("no vector loop here")
		}
		for c := range b {
			for p := range ld {
				want := float32(0)
				if p < px {
					want = blocked[p*b+c]
				}
				if plain[c*ld+p] != want {
					t.Fatalf("%d pixels: channel %d pixel %d: got %v, want %v", px, c, p, plain[c*ld+p], want)
				}
			}
		}
	}
}

// TestMaxPoolNCHWcMatchesValues holds the blocked max pool to
// MaxPool2DValues bit for bit, NaNs and signed zeros included.
func TestMaxPoolNCHWcMatchesValues(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for _, p := range []Pool2DParams{
		{N: 1, C: 16, H: 10, W: 10, KH: 5, KW: 5, SH: 1, SW: 1, PH: 2, PW: 2},
		{N: 2, C: 32, H: 10, W: 9, KH: 13, KW: 13, SH: 1, SW: 1, PH: 6, PW: 6},
		{N: 1, C: 64, H: 17, W: 16, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1},
		{N: 3, C: 16, H: 8, W: 8, KH: 2, KW: 2, SH: 2, SW: 2},
		{N: 1, C: 192, H: 10, W: 10, KH: 9, KW: 9, SH: 1, SW: 1, PH: 4, PW: 4},
		{N: 2, C: 64, H: 32, W: 32, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1},
		{N: 1, C: 32, H: 9, W: 11, KH: 2, KW: 2, SH: 2, SW: 2},
		{N: 1, C: 16, H: 7, W: 13, KH: 3, KW: 5, SH: 3, SW: 2, PH: 0, PW: 2},
		{N: 2, C: 16, H: 6, W: 5, KH: 4, KW: 1, SH: 1, SW: 3, PH: 2, PW: 0},
		{N: 1, C: 16, H: 1, W: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1},
		{N: 1, C: 16, H: 3, W: 3, KH: 5, KW: 5, SH: 1, SW: 1, PH: 2, PW: 2},
		{N: 1, C: 16, H: 4, W: 4, KH: 2, KW: 2, SH: 1, SW: 1, PH: 2, PW: 2},
		{N: 1, C: 16, H: 5, W: 9, KH: 2, KW: 3, SH: 2, SW: 3, PH: 3, PW: 4},
		{N: 1, C: 16, H: 6, W: 2, KH: 3, KW: 7, SH: 1, SW: 1, PH: 1, PW: 3},
		{N: 2, C: 16, H: 5, W: 8, KH: 1, KW: 1, SH: 2, SW: 2},
		{N: 1, C: 16, H: 9, W: 6, KH: 3, KW: 2, SH: 2, SW: 3, PH: 1},
	} {
		t.Run(fmt.Sprintf("%dx%dx%dx%d_k%d_s%d", p.N, p.C, p.H, p.W, p.KH, p.SH), func(t *testing.T) {
			x := randsF32(r, p.N*p.C*p.H*p.W)
			for i := range x {
				switch r.Intn(40) {
				case 0:
					x[i] = float32(math.NaN())
				case 1:
					x[i] = float32(math.Copysign(0, -1))
				case 2:
					x[i] = 0
				}
			}
			hw, ohw := p.H*p.W, p.OutH()*p.OutW()
			want := make([]float32, p.N*p.C*ohw)
			MaxPool2DValues(p, x, want, 1)
			for _, b := range nchwcBlocks {
				for _, threads := range []int{1, 2} {
					out := make([]float32, len(want))
					MaxPoolNCHWc(p, b, toNCHWc(x, p.N, p.C, hw, b), out, threads)
					got := fromNCHWc(out, p.N, p.C, ohw, b)
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
							t.Fatalf("block %d threads %d: element %d: got %v, want %v", b, threads, i, got[i], want[i])
						}
					}
				}
			}
		})
	}
}

// TestUpsampleNearestNCHWc checks that every output pixel is the input
// pixel at the floor of its coordinates over the factors.
func TestUpsampleNearestNCHWc(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	n, c, h, w, fh, fw := 2, 32, 5, 7, 2, 3
	x := randsF32(r, n*c*h*w)
	for _, b := range nchwcBlocks {
		for _, threads := range []int{1, 2} {
			out := make([]float32, n*c*h*w*fh*fw)
			UpsampleNearestNCHWc(toNCHWc(x, n, c, h*w, b), out, n, c, h, w, b, fh, fw, threads)
			got := fromNCHWc(out, n, c, h*fh*w*fw, b)
			for i := 0; i < n*c; i++ {
				for y := 0; y < h*fh; y++ {
					for xo := 0; xo < w*fw; xo++ {
						if g, want := got[(i*h*fh+y)*w*fw+xo], x[(i*h+y/fh)*w+xo/fw]; g != want {
							t.Fatalf("block %d threads %d: plane %d (%d,%d): got %v, want %v", b, threads, i, y, xo, g, want)
						}
					}
				}
			}
		}
	}
}

// TestNCHWcLayoutThreadsNoAllocs runs the four on maps large enough to
// split over threads: two threads give what one gives, and neither
// allocates (the loops' jobs and the pool's scratch come from pools).
func TestNCHWcLayoutThreadsNoAllocs(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	n, c, h, w := 2, 96, 20, 20
	x := randsF32(r, n*c*h*w)
	spp := Pool2DParams{N: n, C: c, H: h, W: w, KH: 13, KW: 13, SH: 1, SW: 1, PH: 6, PW: 6}
	pool := Pool2DParams{N: n, C: c, H: h, W: w, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}
	for _, k := range []struct {
		name string
		out  int
		run  func(out []float32, threads int)
	}{
		{"to", len(x), func(out []float32, th int) { ReorderToNCHWc(x, out, n, c, h*w, 16, th) }},
		{"from", len(x), func(out []float32, th int) { ReorderFromNCHWc(x, out, n, c, h*w, 16, th) }},
		{"spp", len(x), func(out []float32, th int) { MaxPoolNCHWc(spp, 16, x, out, th) }},
		{"pool", n * c * pool.OutH() * pool.OutW(), func(out []float32, th int) { MaxPoolNCHWc(pool, 16, x, out, th) }},
		{"upsample", 4 * len(x), func(out []float32, th int) { UpsampleNearestNCHWc(x, out, n, c, h, w, 16, 2, 2, th) }},
		{"to8", len(x), func(out []float32, th int) { ReorderToNCHWc(x, out, n, c, h*w, 8, th) }},
		{"from8", len(x), func(out []float32, th int) { ReorderFromNCHWc(x, out, n, c, h*w, 8, th) }},
		{"pool8", n * c * pool.OutH() * pool.OutW(), func(out []float32, th int) { MaxPoolNCHWc(pool, 8, x, out, th) }},
		{"upsample8", 4 * len(x), func(out []float32, th int) { UpsampleNearestNCHWc(x, out, n, c, h, w, 8, 2, 2, th) }},
	} {
		one, two := make([]float32, k.out), make([]float32, k.out)
		k.run(one, 1)
		k.run(two, 2)
		for i := range one {
			if math.Float32bits(one[i]) != math.Float32bits(two[i]) {
				t.Fatalf("%s: element %d: two threads give %v, one %v", k.name, i, two[i], one[i])
			}
		}
		for _, threads := range []int{1, 2} {
			if raceEnabled {
				break // the race detector makes sync.Pool drop objects at random
			}
			if a := testing.AllocsPerRun(20, func() { k.run(two, threads) }); a != 0 {
				t.Fatalf("%s threads %d: %v allocations per call", k.name, threads, a)
			}
		}
	}
}
