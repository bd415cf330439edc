package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gopir/gopir/internal/allocs"
)

// convInPlaceCases have panels that the convolution GEMM reads in place
// (conv_gemm_inplace.go) beside panels it packs: "same" 3×3 rows wide
// enough for interior panels, depths over one kc slice (later slices add
// onto C), 1×1 kernels whose panels span output rows, row strides and
// dilations, groups, and output channel counts that leave every height
// of edge tile.
var convInPlaceCases = []struct {
	name string
	p    Conv2DParams
}{
	{"3x3_same", Conv2DParams{N: 2, C: 5, H: 6, W: 70, O: 33, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"3x3_two_slices", Conv2DParams{N: 1, C: 64, H: 4, W: 80, O: 20, KH: 3, KW: 3, PH: 1, PW: 1}},
	{"1x1_rows", Conv2DParams{N: 3, C: 7, H: 9, W: 15, O: 16, KH: 1, KW: 1}},
	{"1x1_deep", Conv2DParams{N: 2, C: 600, H: 4, W: 16, O: 29, KH: 1, KW: 1}},
	{"dilated", Conv2DParams{N: 1, C: 3, H: 9, W: 90, O: 14, KH: 3, KW: 3, PH: 2, PW: 2, DH: 2, DW: 2}},
	{"row_stride2", Conv2DParams{N: 2, C: 4, H: 9, W: 70, O: 15, KH: 3, KW: 3, SH: 2, PH: 1, PW: 1}},
	{"groups2", Conv2DParams{N: 1, C: 6, H: 5, W: 70, O: 58, KH: 3, KW: 3, PH: 1, PW: 1, Groups: 2}},
	{"one_output", Conv2DParams{N: 1, C: 9, H: 3, W: 100, O: 1, KH: 3, KW: 1, PH: 1}},
}

// TestConvGemmInPlaceSameBits: reading panels in place gives the bits of
// packing them, with and without an epilogue, on one and two threads, and
// the cases do read some panels in place (where the CPU has the kernels).
func TestConvGemmInPlaceSameBits(t *testing.T) {
	defer func() { convInPlaceOff = false }()
	kern := sgemmActive.Load()
	r := rand.New(rand.NewPCG(31, 32))
	for _, tc := range convInPlaceCases {
		p := convGemmParams(tc.p)
		if !p.convGemmOK() {
			t.Fatalf("%s: not on the GEMM path", tc.name)
		}
		ohw := p.OutH() * p.OutW()
		convInPlaceOff = false
		if in := convInPlacePanels(p, kern); kern.indirect != nil && in == 0 {
			t.Fatalf("%s: no panel read in place", tc.name)
		} else {
			t.Logf("%s: %d of %d panels in place", tc.name, in, ceilDiv(p.N*ohw, kern.nr)*p.Groups)
		}
		x := perfRandom(r, p.N*p.C*p.H*p.W, false)
		w := perfRandom(r, p.O*p.C/p.Groups*p.KH*p.KW, false)
		bias := perfRandom(r, p.O, false)
		for _, epi := range []Epilogue{{}, {Act: ActSilu, Bias32: bias}} {
			ep := p
			ep.Epilogue = epi
			for _, th := range []int{1, 2} {
				out := func(off bool) []float32 {
					convInPlaceOff = off
					o := make([]float32, p.N*p.O*ohw)
					conv2DGemm(ep, x, w, o, th)
					return o
				}
				what := fmt.Sprintf("%s/epilogue=%v/threads=%d", tc.name, epi.on(), th)
				perfSameBits(t, what, out(false), out(true))
			}
		}
	}
}

// convInPlacePanels counts the panels of p (at multiples of nr over the
// batch's output positions, as conv2DGemm's blocks start) that it reads
// in place.
func convInPlacePanels(p Conv2DParams, kern *gemmKernel[float32]) int {
	j := &convGemmJob{p: p, kern: kern, ohw: p.OutH() * p.OutW()}
	q, nr := p.N*j.ohw, kern.nr
	n := 0
	for q0 := 0; q0 < q; q0 += nr {
		w := min(nr, q-q0)
		s := convColsStride(w)
		cols := convColTab(p, q0, w, make([]int32, 3*s))
		if _, ok := j.inPlace(cols, s, w, q0%j.ohw); ok {
			n++
		}
	}
	return n * p.Groups
}

// TestConvGemmInPlaceAllocatesNothing: once warm, a convolution whose
// panels are read in place makes no Go allocation, on one thread and two.
func TestConvGemmInPlaceAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop objects at random")
	}
	p := convGemmParams(convInPlaceCases[0].p)
	r := rand.New(rand.NewPCG(33, 34))
	x := perfRandom(r, p.N*p.C*p.H*p.W, false)
	w := perfRandom(r, p.O*p.C*p.KH*p.KW, false)
	p.Epilogue = Epilogue{Act: ActSilu, Bias32: perfRandom(r, p.O, false)}
	out := make([]float32, p.N*p.O*p.OutH()*p.OutW())
	for _, th := range []int{1, 2} {
		conv2DGemm(p, x, w, out, th)
		if n := allocs.PerRun(20, func() { conv2DGemm(p, x, w, out, th) }); n != 0 {
			t.Errorf("threads=%d: %v allocations per call, want 0", th, n)
		}
	}
}
