package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestConvDirectPackedSameBits: Conv2D on the direct kernel with its
// weights packed once (PackConv2D, form ConvPackDirect) gives the bits of
// the call that reorders them itself, with no epilogue, the kernel's bias
// and ReLU, the epilogue pass and the 2×2 pool, on 1 and 2 threads; the
// weights themselves are then not read. A copy for another tile, form,
// depth or group count, a short one and the GEMM's panels are ignored,
// not misread.
func TestConvDirectPackedSameBits(t *testing.T) {
	if !convRowOK() {
		t.Skip("no AVX-512: no direct kernel")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	r := rand.New(rand.NewPCG(65, 66))
	for _, p := range []Conv2DParams{
		{N: 1, C: 3, H: 32, W: 32, O: 32, KH: 3, KW: 3, PH: 1, PW: 1},               // the small CNN's first layer
		{N: 8, C: 32, H: 16, W: 16, O: 64, KH: 3, KW: 3, PH: 1, PW: 1},              // its second
		{N: 2, C: 5, H: 13, W: 21, O: 23, KH: 3, KW: 3, PH: 1, PW: 1},               // 16 + 7 channels
		{N: 2, C: 4, H: 11, W: 9, O: 6, KH: 5, KW: 5, PH: 2, PW: 2},                 // LeNet-like
		{N: 1, C: 6, H: 10, W: 18, O: 12, KH: 3, KW: 3, PH: 2, PW: 2, DH: 2, DW: 2}, // dilated
		{N: 2, C: 8, H: 7, W: 17, O: 10, KH: 3, KW: 3, PH: 1, PW: 1, Groups: 2},     // groups of 5 channels
	} {
		p = convGemmParams(p)
		if Conv2DPackForm(p) != ConvPackDirect {
			t.Fatalf("%+v: form %d, want the direct kernel's", p, Conv2DPackForm(p))
		}
		x := perfRandom(r, p.N*p.C*p.H*p.W, true)
		w := perfRandom(r, p.O*p.C/p.Groups*p.KH*p.KW, true)
		nan := make([]float32, len(w))
		for i := range nan {
			nan[i] = float32(math.NaN())
		}
		bias := perfRandom(r, p.O, true)
		packed := make([]float32, Conv2DPackedLen(p))
		for i := range packed {
			packed[i] = float32(math.NaN())
		}
		PackConv2D(p, w, packed)
		gemm := p
		gemm.Packed = nil
		for _, v := range []struct {
			name string
			ep   Epilogue
			pool bool
		}{{"plain", Epilogue{}, false}, {"relu", Epilogue{Act: ActRelu, Bias32: bias}, false},
			{"silu", Epilogue{Act: ActSilu, Bias32: bias}, false}, {"relu_pool", Epilogue{Act: ActRelu, Bias32: bias}, true}} {
			q := p
			q.Epilogue, q.Pool2 = v.ep, v.pool
			elems := p.N * p.O * p.OutH() * p.OutW()
			if v.pool {
				elems = p.N * p.O * (p.OutH() / 2) * (p.OutW() / 2)
			}
			for _, th := range []int{1, 2} {
				run := func(w, packed []float32) []float32 {
					qp := q
					qp.Packed = packed
					out := make([]float32, elems)
					Conv2D(qp, x, w, out, make([]float32, Conv2DWorkspaceFor(qp, th, true)), th)
					return out
				}
				what := fmt.Sprintf("%+v/%s/threads=%d", p, v.name, th)
				want := run(w, nil)
				perfSameBits(t, what+"/packed", run(nan, packed), want)
				spoilt := map[string]func([]float32) []float32{
					"other_tile":   func(b []float32) []float32 { b[1] = fromBits[float32](toBits(b[1]) + 1); return b },
					"gemm_form":    func(b []float32) []float32 { b[2] = fromBits[float32](uint32(ConvPackPlain)); return b },
					"other_depth":  func(b []float32) []float32 { b[3] = fromBits[float32](toBits(b[3]) + 1); return b },
					"other_groups": func(b []float32) []float32 { b[5] = fromBits[float32](toBits(b[5]) + 1); return b },
					"bad_mark":     func(b []float32) []float32 { b[0] = 0; return b },
					"short":        func(b []float32) []float32 { return b[:len(b)-1] },
				}
				for name, spoil := range spoilt {
					perfSameBits(t, what+"/"+name, run(w, spoil(append([]float32(nil), packed...))), want)
				}
			}
		}
	}
}

// TestConvDirectPackedOtherTile: weights packed while another tile was in
// force are not the order the call reads: they are ignored.
func TestConvDirectPackedOtherTile(t *testing.T) {
	if !convRowOK() {
		t.Skip("no AVX-512: no direct kernel")
	}
	p := convGemmParams(Conv2DParams{N: 1, C: 32, H: 16, W: 16, O: 64, KH: 3, KW: 3, PH: 1, PW: 1})
	r := rand.New(rand.NewPCG(67, 68))
	x := perfRandom(r, p.N*p.C*p.H*p.W, false)
	w := perfRandom(r, p.O*p.C*p.KH*p.KW, false)
	convForce.set, convForce.algo = true, convDirect
	defer func() { convForce.set = false }()
	convDirectTileForce.ob, convDirectTileForce.rows = 4, 4
	packed := make([]float32, Conv2DPackedLen(p))
	PackConv2D(p, w, packed)
	convDirectTileForce.ob, convDirectTileForce.rows = 0, 0
	n := p.N * p.O * p.OutH() * p.OutW()
	want, got := make([]float32, n), make([]float32, n)
	ws := make([]float32, Conv2DWorkspaceFor(p, 1, true))
	Conv2D(p, x, w, want, ws, 1)
	p.Packed = packed
	Conv2D(p, x, w, got, ws, 1)
	perfSameBits(t, "packed for 4-channel tiles, run with 8", got, want)
}

// TestConvDirectPackedNoAllocs: a call that reads packed weights makes no
// Go allocation.
func TestConvDirectPackedNoAllocs(t *testing.T) {
	if !convRowOK() {
		t.Skip("no AVX-512: no direct kernel")
	}
	p := convGemmParams(Conv2DParams{N: 1, C: 3, H: 32, W: 32, O: 32, KH: 3, KW: 3, PH: 1, PW: 1})
	r := rand.New(rand.NewPCG(69, 70))
	x := perfRandom(r, p.N*p.C*p.H*p.W, false)
	w := perfRandom(r, p.O*p.C*p.KH*p.KW, false)
	p.Packed = make([]float32, Conv2DPackedLen(p))
	PackConv2D(p, w, p.Packed)
	out := make([]float32, p.N*p.O*p.OutH()*p.OutW())
	ws := make([]float32, Conv2DWorkspaceFor(p, 1, true))
	if a := testing.AllocsPerRun(20, func() { Conv2D(p, x, w, out, ws, 1) }); a != 0 {
		t.Fatalf("%v Go allocations per call", a)
	}
}

// BenchmarkConvDirectPacked compares the direct kernel and the batched
// GEMM on the small CNN's layers (bias and ReLU in the call), each with
// its weights packed per call and packed once (PackConv2D), for the
// direct-or-GEMM choice at inference.
func BenchmarkConvDirectPacked(b *testing.B) {
	for _, l := range convBenchLayers[:2] {
		for _, n := range []int{1, 8, 64} {
			for _, algo := range []string{"direct", "gemm"} {
				for _, once := range []bool{false, true} {
					b.Run(fmt.Sprintf("%s/batch=%d/%s/packed_once=%v", l.name, n, algo, once), func(b *testing.B) {
						p := convGemmParams(l.p)
						p.N = n
						p.Epilogue = Epilogue{Act: ActRelu, Bias32: perfFill(p.O, 3)}
						convForce.set, convForce.algo = true, map[string]convAlgo{"direct": convDirect, "gemm": convGemm}[algo]
						defer func() { convForce.set = false }()
						x := perfFill(p.N*p.C*p.H*p.W, 7)
						w := perfFill(p.O*p.C*p.KH*p.KW, 5)
						out := make([]float32, p.N*p.O*p.OutH()*p.OutW())
						threads := runtime.GOMAXPROCS(0)
						if once {
							p.Packed = make([]float32, Conv2DPackedLen(p))
							PackConv2D(p, w, p.Packed)
						}
						ws := make([]float32, Conv2DWorkspaceFor(p, threads, true))
						perfLoop(b, func() { Conv2D(p, x, w, out, ws, threads) })
					})
				}
			}
		}
	}
}
