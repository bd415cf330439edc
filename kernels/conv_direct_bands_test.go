package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/gopir/gopir/internal/allocs"
)

// TestConvDirectBandsSameBits: a direct convolution with fewer blocks of
// output channels than perfItemsPerWorker per goroutine, cut into bands
// of output rows on 2, 3 and 5 goroutines, gives the bits of one
// goroutine (one band) — with no epilogue, the kernel's bias and ReLU,
// and a bias, residual and SiLU applied band by band — and is cut into
// more than one band. The workspace starts as NaN and one goroutine's
// output must hold none, so a worker reading a padded element it had not
// written (a border left unzeroed, a row its band needs but did not
// copy) would show.
func TestConvDirectBandsSameBits(t *testing.T) {
	if !convRowOK() {
		t.Skip("no AVX-512: no direct kernel")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	r := rand.New(rand.NewPCG(51, 52))
	for _, p := range []Conv2DParams{
		{N: 1, C: 16, H: 40, W: 40, O: 16, KH: 3, KW: 3, PH: 1, PW: 1},     // ppyoloe_s's 16→16 layer, smaller
		{N: 1, C: 24, H: 10, W: 10, O: 6, KH: 3, KW: 3, PH: 1, PW: 1},      // a 6-channel head
		{N: 1, C: 384, H: 10, W: 10, O: 6, KH: 3, KW: 3, PH: 1, PW: 1},     // ppyoloe_s's, one band a goroutine
		{N: 1, C: 5, H: 23, W: 37, O: 11, KH: 5, KW: 3, PH: 2, PW: 0},      // rows not a multiple of the kernel's group
		{N: 1, C: 4, H: 17, W: 20, O: 20, KH: 3, KW: 3, PH: 1, PW: 1},      // two blocks, 16 and 4 channels
		{N: 1, C: 6, H: 9, W: 18, O: 8, KH: 3, KW: 3, DH: 2, PH: 2, PW: 1}, // dilated rows
		{N: 1, C: 3, H: 30, W: 20, O: 4, KH: 3, KW: 3, PH: 0, PW: 1},       // no rows of padding
		{N: 2, C: 4, H: 17, W: 20, O: 20, KH: 3, KW: 3, PH: 1, PW: 1},      // a goroutine's bands span blocks and samples
	} {
		p = convGemmParams(p)
		if !p.convDirectFwd() {
			t.Fatalf("%+v: not on the direct kernel", p)
		}
		if _, _, rows := p.convDirectItems(2); rows >= p.OutH() {
			t.Fatalf("%+v: one band on two goroutines", p)
		}
		ohw := p.OutH() * p.OutW()
		x := perfRandom(r, p.N*p.C*p.H*p.W, false)
		w := perfRandom(r, p.O*p.C*p.KH*p.KW, false)
		bias, res := perfRandom(r, p.O, false), perfRandom(r, p.N*p.O*ohw, false)
		for _, ep := range []Epilogue{{}, {Act: ActRelu, Bias32: bias}, {Act: ActSilu, Bias32: bias, Residual32: res}} {
			fp := p
			fp.Epilogue = ep
			run := func(th int) []float32 {
				out := make([]float32, p.N*p.O*ohw)
				ws := make([]float32, Conv2DWorkspaceFor(fp, th, true))
				for i := range ws {
					ws[i] = float32(math.NaN())
				}
				Conv2D(fp, x, w, out, ws, th)
				return out
			}
			want := run(1)
			for i, v := range want {
				if v != v {
					t.Fatalf("%+v/act=%v: one goroutine wrote NaN at %d from finite operands", p, ep.Act, i)
				}
			}
			for _, th := range []int{2, 3, 5} {
				perfSameBits(t, fmt.Sprintf("%+v/act=%v/threads=%d", p, ep.Act, th), run(th), want)
			}
		}
	}
}

// TestConvDirectItemsBandPerGoroutine: a sample with fewer blocks of
// output channels than goroutines is cut into one band of rows per
// goroutine (blocks × bands items, near-equal in whole row groups), and
// one with more keeps bands for perfItemsPerWorker items a goroutine.
func TestConvDirectItemsBandPerGoroutine(t *testing.T) {
	if !convRowOK() {
		t.Skip("no AVX-512: no direct kernel")
	}
	for _, c := range []struct {
		p       Conv2DParams
		threads int
		items   int
	}{
		{Conv2DParams{N: 1, C: 384, H: 10, W: 10, O: 6, KH: 3, KW: 3, PH: 1, PW: 1}, 2, 2},
		{Conv2DParams{N: 1, C: 192, H: 20, W: 20, O: 6, KH: 3, KW: 3, PH: 1, PW: 1}, 2, 2},
		{Conv2DParams{N: 1, C: 16, H: 40, W: 40, O: 16, KH: 3, KW: 3, PH: 1, PW: 1}, 3, 3},
		{Conv2DParams{N: 1, C: 4, H: 17, W: 20, O: 20, KH: 3, KW: 3, PH: 1, PW: 1}, 3, 4}, // two blocks, two bands
		{Conv2DParams{N: 1, C: 4, H: 17, W: 20, O: 20, KH: 3, KW: 3, PH: 1, PW: 1}, 2, 6}, // two blocks, bands for 4 items a goroutine
	} {
		p := convGemmParams(c.p)
		items, _, rows := p.convDirectItems(c.threads)
		if items != c.items {
			t.Errorf("%+v on %d goroutines: %d items of %d rows, want %d", c.p, c.threads, items, rows, c.items)
		}
	}
}

// TestConvDirectBandsAllocateNothing: once warm, a direct convolution
// cut into bands makes no Go allocation on two goroutines.
func TestConvDirectBandsAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop objects at random")
	}
	if !convRowOK() {
		t.Skip("no AVX-512: no direct kernel")
	}
	p := convGemmParams(Conv2DParams{N: 1, C: 16, H: 40, W: 40, O: 16, KH: 3, KW: 3, PH: 1, PW: 1})
	r := rand.New(rand.NewPCG(53, 54))
	x := perfRandom(r, p.N*p.C*p.H*p.W, false)
	w := perfRandom(r, p.O*p.C*p.KH*p.KW, false)
	p.Epilogue = Epilogue{Act: ActSilu, Bias32: perfRandom(r, p.O, false)}
	out := make([]float32, p.N*p.O*p.OutH()*p.OutW())
	ws := make([]float32, Conv2DWorkspaceFor(p, 2, true))
	if n := allocs.PerRun(20, func() { Conv2D(p, x, w, out, ws, 2) }); n != 0 {
		t.Errorf("%v allocations per call, want 0", n)
	}
}
