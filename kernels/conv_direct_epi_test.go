package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestConvDirectEpiMatchesPasses checks that the direct forward kernel
// with its epilogue in registers (convRowsEpi) stores exactly the bits of
// the plain kernel followed by epiPlanes (NaN payloads and signed zeros
// included), on shapes that exercise partial channel blocks, row counts
// that are not a multiple of the kernel's rows, partial vectors, groups,
// dilation and both thread counts; and that other epilogues keep the
// passes.
func TestConvDirectEpiMatchesPasses(t *testing.T) {
	if !convRowOK() {
		t.Skip("no AVX-512: no direct kernel")
	}
	r := rand.New(rand.NewPCG(41, 42))
	for _, p := range []Conv2DParams{
		{N: 3, C: 3, H: 32, W: 32, O: 32, KH: 3, KW: 3, PH: 1, PW: 1},               // the small CNN's first layer
		{N: 8, C: 32, H: 16, W: 16, O: 64, KH: 3, KW: 3, PH: 1, PW: 1},              // its second, wide
		{N: 2, C: 5, H: 13, W: 21, O: 23, KH: 3, KW: 3, PH: 1, PW: 1},               // 16 + 7 channels, 21 columns
		{N: 2, C: 4, H: 11, W: 9, O: 6, KH: 5, KW: 5, PH: 2, PW: 2},                 // 6 channels: 4 rows a call, 11 = 2·4 + 3
		{N: 2, C: 6, H: 10, W: 18, O: 12, KH: 3, KW: 3, PH: 2, PW: 2, DH: 2, DW: 2}, // dilated
		{N: 3, C: 8, H: 7, W: 17, O: 10, KH: 3, KW: 3, PH: 1, PW: 1, Groups: 2},     // groups of 5 channels
		{N: 1, C: 1, H: 1, W: 3, O: 1, KH: 1, KW: 3},                                // one row, one channel, one column
	} {
		p = convGemmParams(p)
		if !p.convDirectFwd() {
			t.Fatalf("%+v: not on the direct kernel", p)
		}
		x := perfRandom(r, p.N*p.C*p.H*p.W, true)
		w := perfRandom(r, p.O*p.C/p.Groups*p.KH*p.KW, false)
		bias := perfRandom(r, p.O, true)
		elems := p.N * p.O * p.OutH() * p.OutW()
		for _, ep := range []Epilogue{
			{Act: ActRelu, Bias32: bias},
			{Bias32: bias},
			{Act: ActRelu}, // no bias: the passes
			{Act: ActRelu, Bias32: bias, Residual32: perfRandom(r, elems, true)}, // a residual: the passes
			{Act: ActSigmoid, Bias32: bias},                                      // another activation: the passes
		} {
			for _, th := range []int{1, 2} {
				fp := p
				fp.Epilogue = ep
				run := func(off bool) []float32 {
					convDirectOff.epi = off
					defer func() { convDirectOff.epi = false }()
					out := make([]float32, elems)
					for i := range out {
						out[i] = float32(math.NaN())
					}
					Conv2D(fp, x, w, out, make([]float32, Conv2DWorkspaceFor(fp, th, true)), th)
					return out
				}
				if want := ep.Residual32 == nil && ep.Bias32 != nil && ep.Act != ActSigmoid; fp.convDirectEpi() != want {
					t.Fatalf("%+v: epilogue in the kernel %v, want %v", fp, fp.convDirectEpi(), want)
				}
				got, exp := run(false), run(true)
				for i := range exp {
					if math.Float32bits(got[i]) != math.Float32bits(exp[i]) {
						t.Fatalf("%+v threads %d act %d bias %v: out[%d] = %#x, want %#x", p, th, ep.Act, ep.Bias32 != nil,
							i, math.Float32bits(got[i]), math.Float32bits(exp[i]))
					}
				}
			}
		}
	}
}

// TestConvDirectEpiZeroSizesAndNoAllocs runs the fused direct path on
// empty shapes (nothing to do, no panic) and checks that a call makes no
// Go allocation: its rows loop needs no memory beyond the workspace that
// Conv2DWorkspaceFor declares, the same as without the fused epilogue.
func TestConvDirectEpiZeroSizesAndNoAllocs(t *testing.T) {
	for _, p := range []Conv2DParams{
		{N: 0, C: 3, H: 8, W: 8, O: 16, KH: 3, KW: 3, PH: 1, PW: 1},
		{N: 2, C: 3, H: 8, W: 8, O: 0, KH: 3, KW: 3, PH: 1, PW: 1},
		{N: 2, C: 3, H: 0, W: 8, O: 16, KH: 3, KW: 3},
	} {
		p = convGemmParams(p)
		p.Epilogue = Epilogue{Act: ActRelu, Bias32: make([]float32, p.O)}
		Conv2D(p, nil, make([]float32, p.O*p.C*p.KH*p.KW), nil, nil, 1)
	}
	if !convRowOK() {
		t.Skip("no AVX-512: no direct kernel")
	}
	p := convGemmParams(Conv2DParams{N: 2, C: 3, H: 32, W: 32, O: 32, KH: 3, KW: 3, PH: 1, PW: 1})
	p.Epilogue = Epilogue{Act: ActRelu, Bias32: perfFill(p.O, 3)}
	x, w := perfFill(p.N*p.C*p.H*p.W, 7), perfFill(p.O*p.C*p.KH*p.KW, 5)
	out := make([]float32, p.N*p.O*p.OutH()*p.OutW())
	for _, th := range []int{1, 2} {
		ws := make([]float32, Conv2DWorkspaceFor(p, th, true))
		if a := testing.AllocsPerRun(20, func() { Conv2D(p, x, w, out, ws, th) }); a != 0 {
			t.Errorf("threads %d: %v allocations per call, want 0", th, a)
		}
	}
}
