package kernels

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
)

// nchwcBlocks are the channel blocks the tests run the blocked layout
// with: AVX2's and AVX-512's.
var nchwcBlocks = []int{8, 16}

// toNCHWc and fromNCHWc are the layout change with block b written out
// plainly, for the tests.
func toNCHWc(x []float32, n, c, hw, b int) []float32 {
	y := make([]float32, len(x))
	for i := 0; i < n; i++ {
		for ch := 0; ch < c; ch++ {
			for p := 0; p < hw; p++ {
				y[((i*(c/b)+ch/b)*hw+p)*b+ch%b] = x[(i*c+ch)*hw+p]
			}
		}
	}
	return y
}

func fromNCHWc(y []float32, n, c, hw, b int) []float32 {
	x := make([]float32, len(y))
	for i := 0; i < n; i++ {
		for ch := 0; ch < c; ch++ {
			for p := 0; p < hw; p++ {
				x[(i*c+ch)*hw+p] = y[((i*(c/b)+ch/b)*hw+p)*b+ch%b]
			}
		}
	}
	return x
}

func randsF32(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = r.Float32()*2 - 1
	}
	return v
}

// nchwcCases are convolutions of the shapes the blocked layout runs:
// the detector's and ResNet's, small enough for the reference.
var nchwcCases = []Conv2DParams{
	{N: 1, C: 3, H: 19, W: 21, O: 16, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1},
	{N: 2, C: 3, H: 17, W: 17, O: 32, KH: 7, KW: 7, SH: 2, SW: 2, PH: 3, PW: 3},
	{N: 1, C: 16, H: 12, W: 13, O: 32, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1},
	{N: 2, C: 32, H: 11, W: 9, O: 48, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1},
	{N: 1, C: 48, H: 10, W: 10, O: 16, KH: 1, KW: 1, SH: 1, SW: 1},
	{N: 1, C: 64, H: 1, W: 1, O: 64, KH: 1, KW: 1, SH: 1, SW: 1},
	{N: 3, C: 32, H: 7, W: 6, O: 64, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1},
	{N: 1, C: 16, H: 9, W: 9, O: 16, KH: 5, KW: 5, SH: 1, SW: 1, PH: 2, PW: 2},
	{N: 2, C: 24, H: 8, W: 9, O: 40, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1}, // blocks of 8 only
}

// TestConvNCHWcMatchesConv2D holds the blocked convolution, with every
// epilogue and either block, to Conv2D on the same values in NCHW.
func TestConvNCHWcMatchesConv2D(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i, p := range nchwcCases {
		p.DH, p.DW, p.Groups = 1, 1, 1
		for _, b := range nchwcBlocks {
			if p.O%b != 0 || p.C%8 == 0 && p.C%b != 0 {
				continue // channels the block does not hold
			}
			for _, act := range []Activation{ActNone, ActRelu, ActSilu} {
				for _, residual := range []bool{false, true} {
					name := fmt.Sprintf("%d/%dx%dx%dx%d->%d_k%d_s%d/b%d/act%d/res%v", i, p.N, p.C, p.H, p.W, p.O, p.KH, p.SH, b, act, residual)
					testConvNCHWc(t, r, name, p, b, act, residual)
				}
			}
		}
	}
}

// testConvNCHWc is one case of TestConvNCHWcMatchesConv2D.
func testConvNCHWc(t *testing.T, r *rand.Rand, name string, p Conv2DParams, b int, act Activation, residual bool) {
	t.Run(name, func(t *testing.T) {
		blockedIn := p.C%b == 0
		if err := ConvNCHWcCheck(p, b, blockedIn); err != nil {
			t.Fatal(err)
		}
		oh, ow := p.OutH(), p.OutW()
		x := randsF32(r, p.N*p.C*p.H*p.W)
		w := randsF32(r, p.O*p.C*p.KH*p.KW)
		bias := randsF32(r, p.O)
		var res []float32
		if residual {
			res = randsF32(r, p.N*p.O*oh*ow)
		}
		q := p
		q.Epilogue = Epilogue{Act: act, Bias32: bias, Residual32: res}
		want := make([]float32, p.N*p.O*oh*ow)
		Conv2D(q, x, w, want, make([]float32, Conv2DWorkspaceFor(q, 1, true)), 1)

		xin := x
		if blockedIn {
			xin = toNCHWc(x, p.N, p.C, p.H*p.W, b)
		}
		if residual {
			q.Epilogue.Residual32 = toNCHWc(res, p.N, p.O, oh*ow, b)
		}
		packed := make([]float32, PackConvNCHWcLen(p))
		PackConvNCHWc(p, b, blockedIn, w, packed)
		for _, threads := range []int{1, 2} {
			out := make([]float32, len(want))
			ConvNCHWc(q, b, blockedIn, xin, packed, out, make([]float32, ConvNCHWcWorkspace(q, b, blockedIn, threads)), threads)
			got := fromNCHWc(out, p.N, p.O, oh*ow, b)
			for j := range want {
				if d := math.Abs(float64(got[j] - want[j])); d > 1e-4*(1+math.Abs(float64(want[j]))) {
					t.Fatalf("threads %d: element %d: got %v, want %v", threads, j, got[j], want[j])
				}
			}
		}
	})
}

// TestConvNCHWcCheck names what the blocked convolution refuses.
func TestConvNCHWcCheck(t *testing.T) {
	ok := Conv2DParams{N: 1, C: 16, H: 4, W: 4, O: 16, KH: 3, KW: 3, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1}
	for _, b := range nchwcBlocks {
		if err := ConvNCHWcCheck(ok, b, true); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		edit      func(*Conv2DParams)
		b         int
		blockedIn bool
		want      string
	}{
		{func(p *Conv2DParams) { p.Groups = 2 }, 16, true, "groups 2"},
		{func(p *Conv2DParams) { p.DH = 2 }, 16, true, "dilations"},
		{func(p *Conv2DParams) { p.O = 24 }, 16, true, "24 output channels"},
		{func(p *Conv2DParams) { p.O = 12 }, 8, true, "12 output channels"},
		{func(p *Conv2DParams) { p.C = 3 }, 16, true, "3 input channels"},
		{func(p *Conv2DParams) { p.C = 20 }, 8, true, "20 input channels"},
		{func(p *Conv2DParams) { p.Pool2 = true }, 16, true, "pool"},
		{func(p *Conv2DParams) {}, 4, true, "channel block 4"},
	} {
		p := ok
		c.edit(&p)
		err := ConvNCHWcCheck(p, c.b, c.blockedIn)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want an error naming %q", err, c.want)
		}
	}
	p := ok
	p.C = 3
	if err := ConvNCHWcCheck(p, 16, false); err != nil {
		t.Errorf("an NCHW input of 3 channels: %v", err)
	}
}
