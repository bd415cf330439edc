package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/gopir/gopir/internal/allocs"
)

// TestConvDirectSlicesSameBitsAnyTile: a direct convolution summed in the
// GEMM's depth slices (resnet18ish's layer 1, two slices, and one of
// three) gives the GEMM's bits, NaN payloads compared as NaNs, whichever
// tile and strip the direct kernel runs (row groups with a shorter last
// call, one row per call, strips of one tile row), with no epilogue, the
// kernel's bias and ReLU, and bias, residual and ReLU after it, on 1 and 2
// threads.
func TestConvDirectSlicesSameBitsAnyTile(t *testing.T) {
	if !convRowOK() {
		t.Skip("no AVX-512: no direct kernel")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	kc := sgemmActive.Load().kc
	r := rand.New(rand.NewPCG(71, 72))
	for _, p := range []Conv2DParams{
		{N: 2, C: 64, H: 16, W: 16, O: 64, KH: 3, KW: 3, PH: 1, PW: 1},
		{N: 1, C: 2*kc/9 + 7, H: 17, W: 16, O: 40, KH: 3, KW: 3, PH: 1, PW: 1},
	} {
		p = convGemmParams(p)
		depth := p.C * p.KH * p.KW
		if !p.convDirectFwd() || p.convDirectSlice() >= depth {
			t.Fatalf("%+v: not on the direct kernel in slices", p)
		}
		n := p.N * p.O * p.OutH() * p.OutW()
		x := perfRandom(r, p.N*p.C*p.H*p.W, true)
		w := perfRandom(r, p.O*depth, false)
		bias, res := perfRandom(r, p.O, false), perfRandom(r, n, false)
		for _, ep := range []Epilogue{{}, {Act: ActRelu, Bias32: bias}, {Act: ActRelu, Bias32: bias, Residual32: res}} {
			for _, th := range []int{1, 2} {
				fp := p
				fp.Epilogue = ep
				run := func(algo convAlgo, tile [3]int) []float32 {
					convForce.set, convForce.algo = true, algo
					convDirectTileForce.ob, convDirectTileForce.rows, convDirectStripForce = tile[0], tile[1], tile[2]
					defer func() {
						convForce.set = false
						convDirectTileForce.ob, convDirectTileForce.rows, convDirectStripForce = 0, 0, 0
					}()
					out := make([]float32, n)
					Conv2D(fp, x, w, out, make([]float32, Conv2DWorkspaceFor(fp, th, true)), th)
					return out
				}
				want := run(convGemm, [3]int{})
				for _, tile := range [][3]int{{}, {8, 3}, {5, 5}, {16, 1}, {8, 2, 1}} {
					perfSameBits(t, fmt.Sprintf("%+v/act=%v/res=%v/threads=%d/tile=%v", p, ep.Act, ep.Residual32 != nil, th, tile),
						run(convDirect, tile), want)
				}
			}
		}
	}
}

// TestConvDirectSlicesAllocateNothing: once warm, the direct kernel in
// depth slices makes no Go allocation, with its weights packed once and
// not, on one thread and two.
func TestConvDirectSlicesAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop objects at random")
	}
	if !convRowOK() {
		t.Skip("no AVX-512: no direct kernel")
	}
	p := convGemmParams(Conv2DParams{N: 1, C: 64, H: 16, W: 16, O: 64, KH: 3, KW: 3, PH: 1, PW: 1})
	r := rand.New(rand.NewPCG(73, 74))
	x := perfRandom(r, p.N*p.C*p.H*p.W, false)
	w := perfRandom(r, p.O*p.C*p.KH*p.KW, false)
	p.Epilogue = Epilogue{Act: ActRelu, Bias32: perfRandom(r, p.O, false)}
	out := make([]float32, p.N*p.O*p.OutH()*p.OutW())
	packed := p
	packed.Packed = make([]float32, Conv2DPackedLen(p))
	PackConv2D(p, w, packed.Packed)
	for _, q := range []Conv2DParams{p, packed} {
		for _, th := range []int{1, 2} {
			ws := make([]float32, Conv2DWorkspaceFor(q, th, true))
			Conv2D(q, x, w, out, ws, th)
			if n := allocs.PerRun(50, func() { Conv2D(q, x, w, out, ws, th) }); n != 0 {
				t.Errorf("packed=%v threads=%d: %v allocations per call, want 0", q.Packed != nil, th, n)
			}
		}
	}
}
