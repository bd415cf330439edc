package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// perfSpecial are values the vector loops must treat exactly as the Go
// loops: signed zeros, infinities, NaN, subnormals, extremes.
var perfSpecial = []float32{0, float32(math.Copysign(0, -1)), 1, -1, float32(math.Inf(1)), float32(math.Inf(-1)),
	float32(math.NaN()), 1e-45, -1e-45, 1e-38, math.MaxFloat32, -math.MaxFloat32, 3e-8, 1e30}

func perfRandom(r *rand.Rand, n int, special bool) []float32 {
	x := make([]float32, n)
	for i := range x {
		if special && r.IntN(8) == 0 {
			x[i] = perfSpecial[r.IntN(len(perfSpecial))]
		} else {
			x[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(7)-4)))
		}
	}
	return x
}

func perfSameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
			t.Fatalf("%s[%d] = %v (%#x), want %v (%#x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// TestAdamVectorMatchesGo checks that the AVX-512 Adam loop is bitwise the
// portable loop, for plain Adam and AdamW, over ordinary and special values.
func TestAdamVectorMatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 40 {
		n := 1 + r.IntN(300)
		special := trial%2 == 1
		p, g := perfRandom(r, n, special), perfRandom(r, n, special)
		m := perfRandom(r, n, special)
		v := perfRandom(r, n, false)
		for i := range v {
			v[i] = float32(math.Abs(float64(v[i])))
		}
		h := AdamHyper{LR: r.Float64() * 1e-2, Beta1: 0.9, Beta2: 0.999, Epsilon: 1e-8, Step: float64(1 + r.IntN(1000))}
		if trial%3 == 0 {
			h.Decoupled, h.WeightDecay = true, r.Float64()*0.1
		}
		if trial%5 == 0 {
			h.Beta1, h.Beta2, h.Epsilon = 0.5+r.Float64()/2, 0.9+r.Float64()/10, 1e-6
		}
		p2, g2, m2, v2 := append([]float32(nil), p...), append([]float32(nil), g...), append([]float32(nil), m...), append([]float32(nil), v...)
		AdamUpdate(p, g, m, v, h, 1)
		bc1 := 1 - math.Pow(h.Beta1, h.Step)
		bc2 := 1 - math.Pow(h.Beta2, h.Step)
		decay := 1.0
		if h.Decoupled {
			decay = 1 - h.LR*h.WeightDecay
		}
		c := &[8]float64{h.Beta1, 1 - h.Beta1, h.Beta2, 1 - h.Beta2, math.Sqrt(bc2), h.Epsilon, -(h.LR / bc1), decay}
		adamRef(p2, g2, m2, v2, c, false, 0)
		perfSameBits(t, "p", p, p2)
		perfSameBits(t, "m", m, m2)
		perfSameBits(t, "v", v, v2)
	}
}

// TestReluGradVectorMatchesGo checks the AVX-512 ReLU gradient against the
// portable loop, in place and not, for lengths around the vector widths.
func TestReluGradVectorMatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 15, 16, 17, 31, 32, 33, 48, 100, 1000} {
		y, dy := perfRandom(r, n, true), perfRandom(r, n, true)
		want := make([]float32, n)
		for i := range want {
			if y[i] > 0 {
				want[i] = dy[i]
			}
		}
		got := make([]float32, n)
		ReluGrad(got, y, dy, 1)
		perfSameBits(t, "out", got, want)
		inY := append([]float32(nil), y...)
		ReluGrad(inY, inY, dy, 2)
		perfSameBits(t, "out aliasing y", inY, want)
		inDY := append([]float32(nil), dy...)
		ReluGrad(inDY, y, inDY, 2)
		perfSameBits(t, "out aliasing dy", inDY, want)
	}
}

// TestMaxPool2x2MatchesGeneric checks the 2×2 stride-2 path of MaxPool2D
// against the general window scan, with ties, NaNs and odd sizes.
func TestMaxPool2x2MatchesGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, sz := range [][2]int{{2, 2}, {4, 6}, {5, 7}, {28, 28}, {10, 10}, {3, 9}, {2, 32}, {4, 34}, {6, 66}, {3, 65}, {8, 70}, {2, 31}, {4, 33}} {
		p := Pool2DParams{N: 2, C: 3, H: sz[0], W: sz[1], KH: 2, KW: 2, SH: 2, SW: 2}
		x := make([]float32, p.N*p.C*p.H*p.W)
		for i := range x {
			switch r.IntN(10) {
			case 0:
				x[i] = float32(math.NaN())
			case 1, 2:
				x[i] = 1 // ties
			default:
				x[i] = float32(r.IntN(5))
			}
		}
		n := p.N * p.C * p.OutH() * p.OutW()
		got, gotIdx := make([]float32, n), make([]int64, n)
		MaxPool2D(p, x, got, gotIdx, 2)
		// The general scan, as MaxPool2D runs it for other windows.
		want, wantIdx := make([]float32, n), make([]int64, n)
		oh, ow := p.OutH(), p.OutW()
		for pl := range p.N * p.C {
			xp := x[pl*p.H*p.W:]
			for y := range oh {
				for xo := range ow {
					bi := windowMax(&p, xp, y, xo)
					o := pl*oh*ow + y*ow + xo
					want[o], wantIdx[o] = xp[bi], int64(bi)
				}
			}
		}
		perfSameBits(t, "max", got, want)
		for i := range wantIdx {
			if gotIdx[i] != wantIdx[i] {
				t.Fatalf("%v: index %d = %d, want %d", sz, i, gotIdx[i], wantIdx[i])
			}
		}
	}
}

// perfIm2colRef and perfCol2imRef are the element-by-element forms of
// im2colRows and col2imRows.
func perfIm2colRef(p Conv2DParams, channels int, x, col []float32, y0, y1 int) {
	ow := p.OutW()
	ohw, hw := (y1-y0)*ow, p.H*p.W
	for c := range channels {
		for i := range p.KH {
			for j := range p.KW {
				row := col[((c*p.KH+i)*p.KW+j)*ohw:][:ohw]
				for y := y0; y < y1; y++ {
					for k := range ow {
						ih, iw := y*p.SH-p.PH+i*p.DH, k*p.SW-p.PW+j*p.DW
						v := float32(0)
						if ih >= 0 && ih < p.H && iw >= 0 && iw < p.W {
							v = x[c*hw+ih*p.W+iw]
						}
						row[(y-y0)*ow+k] = v
					}
				}
			}
		}
	}
}

func perfCol2imRef(p Conv2DParams, channels int, col, x []float32, y0, y1 int) {
	ow := p.OutW()
	ohw, hw := (y1-y0)*ow, p.H*p.W
	for c := range channels {
		for i := range p.KH {
			for j := range p.KW {
				row := col[((c*p.KH+i)*p.KW+j)*ohw:][:ohw]
				for y := y0; y < y1; y++ {
					for k := range ow {
						ih, iw := y*p.SH-p.PH+i*p.DH, k*p.SW-p.PW+j*p.DW
						if ih >= 0 && ih < p.H && iw >= 0 && iw < p.W {
							x[c*hw+ih*p.W+iw] += row[(y-y0)*ow+k]
						}
					}
				}
			}
		}
	}
}

// TestIm2colBlocksMatchReference checks im2colRows and col2imRows (block
// copies, AVX-512 for float32) bitwise against the element loops, over
// paddings, strides, dilations, widths around 16 and row ranges.
func TestIm2colBlocksMatchReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for trial := range 300 {
		p := Conv2DParams{H: 1 + r.IntN(20), W: 1 + r.IntN(40), KH: 1 + r.IntN(5), KW: 1 + r.IntN(5),
			SH: 1 + r.IntN(2), SW: 1 + r.IntN(2), DH: 1 + r.IntN(2), DW: 1 + r.IntN(2)}
		if trial%3 != 0 {
			p.SW = 1
		}
		p.PH, p.PW = r.IntN(p.KH), r.IntN(p.KW)
		oh, ow := p.OutH(), p.OutW()
		if oh <= 0 || ow <= 0 {
			continue
		}
		ch := 1 + r.IntN(3)
		y0 := r.IntN(oh)
		y1 := y0 + 1 + r.IntN(oh-y0)
		x := perfRandom(r, ch*p.H*p.W, false)
		n := ch * p.KH * p.KW * (y1 - y0) * ow
		got, want := make([]float32, n), make([]float32, n)
		for i := range got {
			got[i] = float32(math.NaN())
		}
		im2colRows(p, ch, x, got, y0, y1)
		perfIm2colRef(p, ch, x, want, y0, y1)
		perfSameBits(t, fmt.Sprintf("im2col %+v rows %d..%d", p, y0, y1), got, want)
		col := perfRandom(r, n, false)
		gx, wx := append([]float32(nil), x...), append([]float32(nil), x...)
		col2imRows(p, ch, col, gx, y0, y1)
		perfCol2imRef(p, ch, col, wx, y0, y1)
		perfSameBits(t, fmt.Sprintf("col2im %+v rows %d..%d", p, y0, y1), gx, wx)
	}
}

// TestReluF32MatchesGo checks the vector ReLU bitwise against Go's max,
// signalling and quiet NaNs and signed zeros included, in place and not.
func TestReluF32MatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{0, 1, 15, 16, 17, 100, 100_000} {
		x := perfRandom(r, n, true)
		for i := range x {
			if r.IntN(50) == 0 {
				x[i] = math.Float32frombits(0x7f800001 | uint32(r.IntN(1<<20))<<2) // signalling NaN
			}
			if r.IntN(50) == 0 {
				x[i] = math.Float32frombits(0xffc00000 | uint32(r.IntN(1<<20))) // negative quiet NaN
			}
		}
		want := make([]float32, n)
		for i, v := range x {
			want[i] = max(v, 0)
		}
		got := make([]float32, n)
		ReluF32(got, x, 2)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d [%d]: relu(%#x) = %#x, want %#x", n, i, math.Float32bits(x[i]), math.Float32bits(got[i]), math.Float32bits(want[i]))
			}
		}
		ReluF32(x, x, 2)
		perfSameBits(t, "in place", x, want)
	}
}

// TestMaxPool2DGradXMatchesIndices checks MaxPool2DGradX against
// MaxPool2DGrad with MaxPool2D's indices, bitwise, over window shapes
// (overlapping, padded, the 2×2 fast path), ties, NaNs and signed zeros.
func TestMaxPool2DGradXMatchesIndices(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for trial := range 200 {
		p := Pool2DParams{N: 1 + r.IntN(3), C: 1 + r.IntN(3), H: 1 + r.IntN(12), W: 1 + r.IntN(12),
			KH: 1 + r.IntN(3), KW: 1 + r.IntN(3)}
		p.SH, p.SW = 1+r.IntN(3), 1+r.IntN(3)
		p.PH, p.PW = r.IntN(p.KH/2+1), r.IntN(p.KW/2+1)
		if trial%3 == 0 {
			p.H, p.W = 2*(1+r.IntN(8))+r.IntN(2), 2*(1+r.IntN(20))+r.IntN(2)
			p.KH, p.KW, p.SH, p.SW, p.PH, p.PW = 2, 2, 2, 2, 0, 0
		}
		oh, ow := p.OutH(), p.OutW()
		if oh <= 0 || ow <= 0 {
			continue
		}
		x := make([]float32, p.N*p.C*p.H*p.W)
		for i := range x {
			switch r.IntN(12) {
			case 0:
				x[i] = float32(math.NaN())
			case 1, 2, 3:
				x[i] = 1
			default:
				x[i] = float32(r.IntN(7) - 3)
			}
		}
		n := p.N * p.C * oh * ow
		y, idx := make([]float32, n), make([]int64, n)
		MaxPool2D(p, x, y, idx, 1)
		dy := perfRandom(r, n, true)
		want := make([]float32, len(x))
		MaxPool2DGrad(p.N*p.C, p.H*p.W, oh*ow, dy, idx, want, 1)
		got := make([]float32, len(x))
		for i := range got {
			got[i] = float32(math.NaN()) // every element must be written
		}
		MaxPool2DGradX(p, dy, x, got, 2)
		perfSameBits(t, fmt.Sprintf("%+v", p), got, want)
	}
}

// perfConvRef computes conv2d and its input gradient in float64, term by
// term, and for each output element the sum of the terms' magnitudes (for
// a rounding bound).
func perfConvRef(p Conv2DParams, x, w, dy []float32) (out, outMag, dx, dxMag, dw, dwMag []float64) {
	oh, ow := p.OutH(), p.OutW()
	cg, og := p.C/p.Groups, p.O/p.Groups
	out, outMag = make([]float64, p.N*p.O*oh*ow), make([]float64, p.N*p.O*oh*ow)
	dx, dxMag = make([]float64, len(x)), make([]float64, len(x))
	dw, dwMag = make([]float64, len(w)), make([]float64, len(w))
	for n := range p.N {
		for o := range p.O {
			g := o / og
			for y := range oh {
				for xo := range ow {
					oi := ((n*p.O+o)*oh+y)*ow + xo
					for c := range cg {
						for i := range p.KH {
							for j := range p.KW {
								ih, iw := y*p.SH-p.PH+i*p.DH, xo*p.SW-p.PW+j*p.DW
								if ih < 0 || ih >= p.H || iw < 0 || iw >= p.W {
									continue
								}
								xi := ((n*p.C+g*cg+c)*p.H+ih)*p.W + iw
								wi := ((o*cg+c)*p.KH+i)*p.KW + j
								wv := float64(w[wi])
								dw[wi] += float64(dy[oi]) * float64(x[xi])
								dwMag[wi] += math.Abs(float64(dy[oi]) * float64(x[xi]))
								out[oi] += wv * float64(x[xi])
								outMag[oi] += math.Abs(wv * float64(x[xi]))
								dx[xi] += wv * float64(dy[oi])
								dxMag[xi] += math.Abs(wv * float64(dy[oi]))
							}
						}
					}
				}
			}
		}
	}
	return
}

// TestConvDirectMatchesReference checks the float32 direct kernels of
// Conv2D and Conv2DGradFilter (and Conv2DGradInput) against float64 sums
// within float32 rounding,
// over paddings, dilations, groups, channel counts around 16 and widths
// around the 16-lane rows, for 1 and 3 threads (bitwise the same).
func TestConvDirectMatchesReference(t *testing.T) {
	if !convRowOK() {
		t.Skip("this build has no direct convolution kernels (they need AVX-512 and not purego); Conv2D uses im2col + GEMM, tested elsewhere")
	}
	r := rand.New(rand.NewPCG(13, 14))
	checked := 0
	for trial := 0; checked < 60; trial++ {
		g := 1 + r.IntN(2)
		p := Conv2DParams{N: 1 + r.IntN(12), C: g * (1 + r.IntN(5)), O: g * (1 + r.IntN(20)), H: 1 + r.IntN(12), W: 1 + r.IntN(40),
			KH: 1 + r.IntN(5), KW: 1 + r.IntN(8), SH: 1, SW: 1, DH: 1 + r.IntN(2), DW: 1 + r.IntN(2), Groups: g}
		p.PH, p.PW = r.IntN(p.KH), r.IntN(p.KW)
		if trial%7 == 0 { // padding wider than the kernel: rows no kernel row reaches
			p.PH, p.PW = p.KH+r.IntN(3), r.IntN(p.KW+3)
		}
		if p.OutH() <= 0 || p.OutW() <= 0 || !p.convDirectFwd() && !p.convDirectFilter() && !p.convDirectBwd() {
			continue
		}
		checked++
		x := perfRandom(r, p.N*p.C*p.H*p.W, false)
		w := perfRandom(r, p.O*p.C/g*p.KH*p.KW, false)
		dy := perfRandom(r, p.N*p.O*p.OutH()*p.OutW(), false)
		out, outMag, dx, dxMag, dw, dwMag := perfConvRef(p, x, w, dy)
		check := func(what string, got []float32, want, mag []float64) {
			for i := range want {
				if d := math.Abs(float64(got[i]) - want[i]); d > 1e-5*mag[i]+1e-30 {
					t.Fatalf("%s %+v: [%d] = %v, want %v (±%g)", what, p, i, got[i], want[i], 1e-5*mag[i])
				}
			}
		}
		var prevOut, prevDX, prevDW []float32
		for _, th := range []int{1, 3} {
			if p.convDirectFwd() {
				got := make([]float32, len(out))
				Conv2D(p, x, w, got, make([]float32, Conv2DWorkspaceFor(p, th, true)), th)
				check("forward", got, out, outMag)
				if prevOut != nil {
					perfSameBits(t, "forward threads", got, prevOut)
				}
				prevOut = got
			}
			if p.convDirectBwd() || th == 1 {
				got := make([]float32, len(dx))
				for i := range got {
					got[i] = float32(math.NaN())
				}
				Conv2DGradInput(p, dy, w, got, make([]float32, Conv2DGradInputWorkspaceFor(p, th, true)), th)
				check("input gradient", got, dx, dxMag)
				if prevDX != nil {
					perfSameBits(t, "input gradient threads", got, prevDX)
				}
				prevDX = got
			}
			if p.convDirectFilter() {
				got := make([]float32, len(dw))
				for i := range got {
					got[i] = float32(math.NaN())
				}
				Conv2DGradFilter(p, dy, x, got, make([]float32, Conv2DGradFilterWorkspaceFor(p, th, true)), th)
				check("filter gradient", got, dw, dwMag)
				if prevDW != nil {
					perfSameBits(t, "filter gradient threads", got, prevDW)
				}
				prevDW = got
			}
		}
	}
}

// siluSpecial are inputs around the SiLU loops' branches: the clamp at
// ±120 (the gradient) and ±80 (the forward), the -Inf limit, the exponential's table edges, overflow of x·e^-x.
var siluSpecial = []float32{-80, 80, -80.00001, 79.99999, -79.99999, 80.00001, -120, 120, -119.99999, 120.00001, -121, 121, -88, 88, -87.5, 89, -104, -1000, 1000,
	0.0054152, -0.0054152, 0.5, -0.5, 20, -20, 1e-7, -1e-7}

// TestSiluVectorMatchesGo checks that the AVX-512 SiLU loops (forward and
// gradient) are bitwise the portable ones, over ordinary and special
// values, in place and not, for every length up to a few blocks.
func TestSiluVectorMatchesGo(t *testing.T) {
	if siluF32Vec(make([]float32, 8), make([]float32, 8)) == 0 {
		t.Skip("no AVX-512 loops here (CPU or build): the portable loops run alone")
	}
	r := rand.New(rand.NewPCG(3, 4))
	buf := make([]float64, 512)
	for trial := range 60 {
		n := 8 * (1 + r.IntN(64))
		x := perfRandom(r, n, trial%2 == 1)
		for i := range x {
			switch r.IntN(6) {
			case 0:
				x[i] = siluSpecial[r.IntN(len(siluSpecial))]
			case 1:
				x[i] = float32(r.NormFloat64() * 60)
			}
		}
		dy := perfRandom(r, n, trial%3 == 1)
		want, got := make([]float32, n), make([]float32, n)
		ewSiluGo32(want, x, buf)
		if k := siluF32Vec(got, x); k != n {
			t.Fatalf("siluF32Vec did %d of %d", k, n)
		}
		perfSameBits(t, "silu", got, want)
		ewgSiluGo32(want, x, dy, buf)
		if k := siluGradF32Vec(got, x, dy); k != n {
			t.Fatalf("siluGradF32Vec did %d of %d", k, n)
		}
		perfSameBits(t, "silu_grad", got, want)
		// in place: out is x, then dy
		in := append([]float32(nil), x...)
		siluGradF32Vec(in, in, dy)
		perfSameBits(t, "silu_grad over x", in, want)
		in = append([]float32(nil), dy...)
		siluGradF32Vec(in, x, in)
		perfSameBits(t, "silu_grad over dy", in, want)
		in = append([]float32(nil), x...)
		siluF32Vec(in, in)
		ewSiluGo32(want, x, buf)
		perfSameBits(t, "silu over x", in, want)
	}
	// lengths that are not multiples of 8 leave the tail to the caller
	if k := siluF32Vec(make([]float32, 13), make([]float32, 13)); k != 8 {
		t.Errorf("siluF32Vec on 13: did %d, want 8", k)
	}
}
