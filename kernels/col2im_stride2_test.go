package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestCol2imStride2SameBits checks that col2imRows with column stride 2
// gives the scalar loop's bits on the AVX-512 path: kernel widths 1–5,
// paddings up to past the kernel, dilations 1–2, rows narrower and wider
// than a chunk of 16, odd and even, blocks of output rows, and terms and
// inputs holding ±0, ±Inf and NaN. Without AVX-512 there is nothing to
// compare.
func TestCol2imStride2SameBits(t *testing.T) {
	if !col2imStride2OK() {
		t.Skip("no AVX-512 col2im on this CPU")
	}
	r := rand.New(rand.NewPCG(41, 42))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	fill := func(v []float32) {
		for i := range v {
			v[i] = float32(r.NormFloat64())
			if r.IntN(20) == 0 {
				v[i] = special[r.IntN(len(special))]
			}
		}
	}
	cases := 0
	for range 400 {
		p := Conv2DParams{N: 1, C: 1 + r.IntN(3), H: 1 + r.IntN(9), W: 1 + r.IntN(45), O: 1,
			KH: 1 + r.IntN(3), KW: 1 + r.IntN(5), SH: 1 + r.IntN(2), SW: 2,
			PH: r.IntN(3), PW: r.IntN(4), DH: 1 + r.IntN(2), DW: 1 + r.IntN(2), Groups: 1}
		if p.OutH() <= 0 || p.OutW() <= 0 {
			continue
		}
		cases++
		y0 := r.IntN(p.OutH())
		y1 := y0 + 1 + r.IntN(p.OutH()-y0)
		col := make([]float32, p.C*p.KH*p.KW*(y1-y0)*p.OutW())
		fill(col)
		x := make([]float32, p.C*p.H*p.W)
		fill(x)
		want := append([]float32(nil), x...)
		col2imStride2Off = true
		col2imRows(p, p.C, col, want, y0, y1)
		col2imStride2Off = false
		col2imRows(p, p.C, col, x, y0, y1)
		perfSameBits(t, "col2im", x, want)
	}
	if cases < 300 {
		t.Fatalf("only %d cases", cases)
	}
}

// BenchmarkCol2imStride2 times col2imRows on the column blocks of
// ppyoloe_s's 3×3/2 input gradients (one image, as Conv2DGradInput's
// blocks cover it), the AVX-512 loop against the scalar one.
func BenchmarkCol2imStride2(b *testing.B) {
	for _, l := range ppyoloeConvs {
		p := convGemmParams(l.p)
		if p.SW != 2 {
			continue
		}
		rb := p.gradInputRowBlock()
		col := perfRandom(rand.New(rand.NewPCG(1, 2)), p.C*p.KH*p.KW*rb*p.OutW(), false)
		x := make([]float32, p.C*p.H*p.W)
		for _, off := range []bool{false, true} {
			name := "avx512"
			if off {
				name = "scalar"
			}
			b.Run(l.name+"/"+name, func(b *testing.B) {
				col2imStride2Off = off
				defer func() { col2imStride2Off = false }()
				perfLoop(b, func() {
					for y0 := 0; y0 < p.OutH(); y0 += rb {
						col2imRows(p, p.C, col, x, y0, min(y0+rb, p.OutH()))
					}
				})
			})
		}
	}
}
