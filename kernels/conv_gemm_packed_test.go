package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestConvPackedWeightsSameBits: Conv2D with its weights packed once
// (PackConv2D, in the form Conv2DPackForm names) gives the bits of the
// call that packs them itself, in both orientations, with small scratch
// blocks, with an epilogue and for 1 to 3 threads; a copy of the other
// orientation, of another kernel or of other dimensions is ignored, not
// misread.
func TestConvPackedWeightsSameBits(t *testing.T) {
	defer func(e int) { convGemmScratchElems, convGemmOrient = e, 0 }(convGemmScratchElems)
	r := rand.New(rand.NewPCG(31, 32))
	for _, tc := range convGemmCases {
		p := convGemmParams(tc.p)
		if p.fwdAlgo(true) != convGemm {
			continue
		}
		x := perfRandom(r, p.N*p.C*p.H*p.W, false)
		w := perfRandom(r, p.O*p.C/p.Groups*p.KH*p.KW, false)
		bias := perfRandom(r, p.O, false)
		n := p.N * p.O * p.OutH() * p.OutW()
		for _, v := range []struct {
			name    string
			orient  int8
			scratch int
			epi     bool
		}{{"auto", 0, 128 * 1024, false}, {"plain", 1, 128 * 1024, false}, {"transposed", -1, 128 * 1024, true},
			{"plain_epilogue", 1, 128 * 1024, true}, {"small_blocks", 1, 700, false}} {
			convGemmOrient, convGemmScratchElems = v.orient, v.scratch
			q := p
			if v.epi {
				q.Epilogue = Epilogue{Act: ActSilu, Bias32: bias}
			}
			form := Conv2DPackForm(q)
			if want := map[int8]int{1: ConvPackPlain, -1: ConvPackTrans}[v.orient]; v.orient != 0 && form != want {
				t.Fatalf("%s/%s: form %d, want %d", tc.name, v.name, form, want)
			}
			packed := make([]float32, Conv2DPackedLen(q))
			for i := range packed {
				packed[i] = float32(math.NaN())
			}
			PackConv2D(q, w, packed)
			want := make([]float32, n)
			conv2DGemm(q, x, w, want, 1)
			for _, th := range []int{1, 2, 3} {
				what := fmt.Sprintf("%s/%s/threads=%d", tc.name, v.name, th)
				qp := q
				qp.Packed = packed
				got := make([]float32, n)
				// w's values are not read when the packed copy is used:
				// a NaN weight would show through.
				nan := make([]float32, len(w))
				for i := range nan {
					nan[i] = float32(math.NaN())
				}
				conv2DGemm(qp, x, nan, got, th)
				perfSameBits(t, what, got, want)
			}
			// Copies that are not for this call: read as absent.
			other := map[string]func([]float32) []float32{
				"other_orientation": func(b []float32) []float32 {
					b[2] = fromBits[float32](uint32(ConvPackPlain + ConvPackTrans - form))
					return b
				},
				"other_kernel": func(b []float32) []float32 { b[1] = fromBits[float32](999); return b },
				"other_depth":  func(b []float32) []float32 { b[3] = fromBits[float32](uint32(p.C*p.KH*p.KW + 1)); return b },
				"short":        func(b []float32) []float32 { return b[:len(b)-1] },
			}
			for name, spoil := range other {
				qp := q
				qp.Packed = spoil(append([]float32(nil), packed...))
				got := make([]float32, n)
				conv2DGemm(qp, x, w, got, 2)
				perfSameBits(t, tc.name+"/"+v.name+"/"+name, got, want)
			}
		}
	}
}

// TestConvPackFormNone: convolutions that another kernel computes, and
// empty ones, read no packed weights.
func TestConvPackFormNone(t *testing.T) {
	for _, p := range []Conv2DParams{
		{N: 2, C: 3, H: 8, W: 8, O: 32, KH: 3, KW: 3, PH: 1, PW: 1},           // shallow: direct
		{N: 2, C: 8, H: 9, W: 8, O: 8, KH: 3, KW: 3, PH: 1, PW: 1, Groups: 8}, // depthwise
		{N: 0, C: 16, H: 8, W: 8, O: 32, KH: 3, KW: 3, PH: 1, PW: 1},          // no images
		{N: 2, C: 16, H: 2, W: 2, O: 32, KH: 3, KW: 3},                        // no output positions
		{N: 2, C: 0, H: 8, W: 8, O: 32, KH: 3, KW: 3},                         // no depth
	} {
		p = convGemmParams(p)
		if p.N*p.OutH()*p.OutW() > 0 && p.fwdAlgo(true) == convGemm {
			continue // the direct kernel is not there (purego): the GEMM takes it
		}
		if f, n := Conv2DPackForm(p), Conv2DPackedLen(p); f != ConvPackNone || n != 0 {
			t.Errorf("%+v: form %d, %d elements; want none", p, f, n)
		}
	}
}
