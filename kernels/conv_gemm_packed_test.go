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

// TestConvGemmGridSplitsWeights: with its weights packed once and few
// output positions (resnet18ish's layer 2 at batch 1, its 1×1
// downsample, a batch of three 4×4 maps with 45 channels), conv2DGemm splits
// the output channels between goroutines, not the columns, and gives the
// bits of one goroutine and of the unpacked weights on 2 and 3, with an
// epilogue; with many output positions (the same layer at batch 8) or
// without packed weights it splits as the GEMM's streaming case does
// (which splits the columns of the first two).
func TestConvGemmGridSplitsWeights(t *testing.T) {
	kern := sgemmActive.Load()
	r := rand.New(rand.NewPCG(33, 34))
	checked := 0
	for _, p := range []Conv2DParams{
		{N: 1, C: 128, H: 8, W: 8, O: 128, KH: 3, KW: 3, PH: 1, PW: 1},
		{N: 1, C: 64, H: 16, W: 16, O: 128, KH: 1, KW: 1, SH: 2, SW: 2},
		{N: 3, C: 40, H: 4, W: 4, O: 45, KH: 3, KW: 3, PH: 1, PW: 1},
	} {
		p = convGemmParams(p)
		if p.fwdAlgo(true) != convGemm || convGemmTransposed(p, kern) {
			continue // without the vector packer a strided 1×1 goes to im2col
		}
		checked++
		q := p.N * p.OutH() * p.OutW()
		if gr, gc := convGemmGrid(p.O, q, kern, 2, true, false); gr < 2 || gc != 1 {
			t.Errorf("%+v packed: %d×%d blocks, want the output channels split", p, gr, gc)
		}
		gr, gc := convGemmGrid(p.O, q, kern, 2, false, false)
		if wr, wc := gemmStreamItems(p.O, q, kern.mr, kern.nr, 2); gr != wr || gc != wc {
			t.Errorf("%+v unpacked: %d×%d blocks, want gemmStreamItems's %d×%d", p, gr, gc, wr, wc)
		}
		x := perfRandom(r, p.N*p.C*p.H*p.W, false)
		w := perfRandom(r, p.filterSize(), false)
		n := p.N * p.O * p.OutH() * p.OutW()
		p.Epilogue = Epilogue{Act: ActRelu, Bias32: perfRandom(r, p.O, false), Residual32: perfRandom(r, n, false)}
		want := make([]float32, n)
		conv2DGemm(p, x, w, want, 1)
		pp := p
		pp.Packed = make([]float32, Conv2DPackedLen(p))
		PackConv2D(pp, w, pp.Packed)
		for _, th := range []int{1, 2, 3} {
			got := make([]float32, n)
			for i := range got {
				got[i] = float32(math.NaN())
			}
			conv2DGemm(pp, x, w, got, th)
			perfSameBits(t, fmt.Sprintf("%+v packed, threads %d", p, th), got, want)
		}
	}
	if checked < 2 {
		t.Fatalf("%d of the cases on the plain batched GEMM, want at least 2", checked)
	}
	wide := convGemmParams(Conv2DParams{N: 8, C: 128, H: 8, W: 8, O: 128, KH: 3, KW: 3, PH: 1, PW: 1})
	q := wide.N * wide.OutH() * wide.OutW()
	gr, gc := convGemmGrid(wide.O, q, kern, 2, true, false)
	if wr, wc := gemmStreamItems(wide.O, q, kern.mr, kern.nr, 2); gr != wr || gc != wc {
		t.Errorf("batch 8: %d×%d blocks, want gemmStreamItems's %d×%d", gr, gc, wr, wc)
	}
}

// BenchmarkConvPackedFromMemory times resnet18ish's layers 3 and 4 at
// batch 1, one thread, with their weights packed once and coming from
// memory as in a whole network (44 MB of weights, more than the caches):
// each call reads the next of copies of the packed weights that add up to
// 64 MB. GB/s is the weights read per second of the calling thread's CPU
// time.
func BenchmarkConvPackedFromMemory(b *testing.B) {
	for _, l := range convBenchLayers {
		if l.name != "r18_l3" && l.name != "r18_l4a" && l.name != "r18_l4" {
			continue
		}
		p := convGemmParams(l.p)
		p.N = 1
		r := rand.New(rand.NewPCG(1, 2))
		x := convDeployValues(r, p.N*p.C*p.H*p.W, 1)
		w := convDeployValues(r, p.filterSize(), math.Sqrt(2/float64(p.C*p.KH*p.KW)))
		out := make([]float32, p.N*p.O*p.OutH()*p.OutW())
		p.Epilogue = Epilogue{Act: ActRelu, Bias32: convDeployValues(r, p.O, 0.1)}
		copies := make([][]float32, 64<<20/(4*len(w)))
		for i := range copies {
			copies[i] = make([]float32, Conv2DPackedLen(p))
			PackConv2D(p, w, copies[i])
		}
		b.Run(l.name, func(b *testing.B) {
			ws := make([]float32, Conv2DWorkspaceFor(p, 1, true))
			i := 0
			ns := perfLoopCPU(b, func() {
				q := p
				q.Packed = copies[i%len(copies)]
				i++
				Conv2D(q, x, w, out, ws, 1)
			})
			b.ReportMetric(float64(4*len(w))/ns, "GB/s")
		})
	}
}
