package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gopir/gopir/internal/allocs"
)

// convScatterShapes have output maps smaller than a panel, so that the
// plain product writes C through a scratch block and scatter copies it
// into out: 1×1, 2×2, 3×3 (planes that do not divide a panel) and 4×4
// maps, ResNet's 1×1/2 downsampling, one sample and several, output
// channel counts that leave edge tiles, and two depth slices.
var convScatterShapes = []Conv2DParams{
	{N: 5, C: 7, H: 1, W: 1, O: 19, KH: 1, KW: 1},
	{N: 9, C: 12, H: 2, W: 2, O: 33, KH: 3, KW: 3, PH: 1, PW: 1},
	{N: 7, C: 5, H: 3, W: 3, O: 17, KH: 3, KW: 3, PH: 1, PW: 1},
	{N: 3, C: 9, H: 4, W: 4, O: 40, KH: 3, KW: 3, PH: 1, PW: 1},
	{N: 11, C: 16, H: 4, W: 4, O: 30, KH: 1, KW: 1, SH: 2, SW: 2},
	{N: 1, C: 8, H: 5, W: 5, O: 21, KH: 1, KW: 1, SH: 2, SW: 2},
	{N: 4, C: 300, H: 2, W: 2, O: 20, KH: 3, KW: 3, PH: 1, PW: 1},
}

// TestConvGemmScatterEpilogueMatchesUnfused: the plain product on small
// maps, whose scatter applies the epilogue to its scratch block before
// copying it out (convEpiScratch), gives bit for bit the unfused result
// for every epilogue, on one thread and two, with scratch blocks of whole
// images and blocks that cut images (convGemmScratchElems small).
func TestConvGemmScatterEpilogueMatchesUnfused(t *testing.T) {
	defer func(o int8, e int) { convGemmOrient, convGemmScratchElems = o, e }(convGemmOrient, convGemmScratchElems)
	convGemmOrient = 1
	nr := sgemmActive.Load().nr
	r := rand.New(rand.NewPCG(51, 52))
	ran := 0
	for _, sp := range convScatterShapes {
		p := convGemmParams(sp)
		ohw := p.OutH() * p.OutW()
		if !p.convGemmOK() {
			t.Fatalf("%+v: not on the GEMM path", sp)
		}
		if ohw >= nr {
			continue // a panel fits the map with this kernel (purego's): no scratch block
		}
		ran++
		x := epiRand[float32](r, p.N*p.C*p.H*p.W)
		w := epiRand[float32](r, p.O*p.C*p.KH*p.KW)
		bias := epiRand[float32](r, p.O)
		res := epiRand[float32](r, p.N*p.O*ohw)
		for _, elems := range []int{128 * 1024, nr} {
			convGemmScratchElems = elems
			for _, c := range epiCases {
				for _, th := range []int{1, 2} {
					name := fmt.Sprintf("%+v scratch=%d bias=%v res=%v act=%d threads=%d", sp, elems, c.bias, c.res, c.act, th)
					want := make([]float32, p.N*p.O*ohw)
					conv2DGemm(p, x, w, want, th)
					var b, rs []float32
					if c.bias {
						b = bias
					}
					if c.res {
						rs = res
					}
					fp := p
					fp.Epilogue = epiOf(c.act, -0.5, 0.75, b, rs)
					epiReference(want, b, rs, c.act, fp.Epilogue.Min, fp.Epilogue.Max, p.O, ohw)
					got := make([]float32, len(want))
					for i := range got {
						got[i] = float32(math.NaN())
					}
					conv2DGemm(fp, x, w, got, th)
					if err := epiSameBits(got, want); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
				}
			}
		}
	}
	if ran == 0 {
		t.Fatalf("no shape has maps smaller than a panel of %d", nr)
	}
}

// TestConvGemmScatterAllocatesNothing: once warm, the scatter's epilogue
// (the whole of it on the scratch block, or its bias there and the rest
// in out) makes no Go allocation, on one thread and two.
func TestConvGemmScatterAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop objects at random")
	}
	p := convGemmParams(Conv2DParams{N: 16, C: 32, H: 4, W: 4, O: 64, KH: 1, KW: 1, SH: 2, SW: 2})
	r := rand.New(rand.NewPCG(53, 54))
	x := epiRand[float32](r, p.N*p.C*p.H*p.W)
	w := epiRand[float32](r, p.O*p.C)
	out := make([]float32, p.N*p.O*p.OutH()*p.OutW())
	bias, res := epiRand[float32](r, p.O), epiRand[float32](r, len(out))
	for _, ep := range []Epilogue{{Act: ActRelu, Bias32: bias}, {Act: ActSilu, Bias32: bias}, {Act: ActRelu, Bias32: bias, Residual32: res}} {
		p.Epilogue = ep
		for _, th := range []int{1, 2} {
			if n := allocs.PerRun(20, func() { conv2DGemm(p, x, w, out, th) }); n != 0 {
				t.Errorf("residual=%v act=%d threads=%d: %v allocations per call, want 0", ep.Residual32 != nil, ep.Act, th, n)
			}
		}
	}
}
