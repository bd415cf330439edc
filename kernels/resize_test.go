package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestResizeNearestSameBits: nearest resizing (every axis one tap of
// weight 1), whose rows Resize copies three ways (repeating the row
// before, repeating elements by an integer factor, gathering; and, for
// upsampling of the last two axes, by input rows with the 2× row copy in
// vector loops for float32), gives
// exactly the elements the taps name, or the extrapolation value outside,
// on 1, 2 and 3 threads.
func TestResizeNearestSameBits(t *testing.T) {
	nearest := ResizeSpec{Mode: ResizeNearest, Transform: Asymmetric, Nearest: Floor}
	half := ResizeSpec{Mode: ResizeNearest, Transform: HalfPixel, Nearest: RoundPreferFloor}
	crop := ResizeSpec{Mode: ResizeNearest, Transform: TFCropAndResize, Nearest: RoundPreferFloor}
	type axis struct {
		spec       ResizeSpec
		in, out    int
		scale      float64
		roi0, roi1 float64
		notResized bool
	}
	for _, c := range []struct {
		name string
		axes []axis
	}{
		{"2× upsampling (ppyoloe_s's neck)", []axis{{notResized: true, in: 2}, {notResized: true, in: 3}, {spec: nearest, in: 5, out: 10, scale: 2}, {spec: nearest, in: 7, out: 14, scale: 2}}},
		{"2× of 20×20 (the neck's larger one)", []axis{{notResized: true, in: 2}, {notResized: true, in: 3}, {spec: nearest, in: 20, out: 40, scale: 2}, {spec: nearest, in: 20, out: 40, scale: 2}}},
		{"2× of 10×10 (the neck's smaller one)", []axis{{notResized: true, in: 5}, {spec: nearest, in: 10, out: 20, scale: 2}, {spec: nearest, in: 10, out: 20, scale: 2}}},
		{"2× of widths 16 and 12", []axis{{notResized: true, in: 3}, {spec: nearest, in: 2, out: 4, scale: 2}, {spec: nearest, in: 16, out: 32, scale: 2}}},
		{"2× along the last axis only, width 13", []axis{{notResized: true, in: 3}, {notResized: true, in: 6}, {spec: nearest, in: 13, out: 26, scale: 2}}},
		{"3× down, 2× across, widths 3 and 1", []axis{{notResized: true, in: 2}, {spec: nearest, in: 3, out: 9, scale: 3}, {spec: nearest, in: 3, out: 6, scale: 2}}},
		{"2× of width 1", []axis{{spec: nearest, in: 4, out: 8, scale: 2}, {spec: nearest, in: 1, out: 2, scale: 2}}},
		{"2× of one row of 12", []axis{{spec: nearest, in: 12, out: 24, scale: 2}}},
		{"2× along a leading axis too", []axis{{spec: nearest, in: 2, out: 4, scale: 2}, {notResized: true, in: 3}, {spec: nearest, in: 9, out: 18, scale: 2}, {spec: nearest, in: 9, out: 18, scale: 2}}},
		{"3× along the last axis, 2× along the one before", []axis{{notResized: true, in: 3}, {spec: nearest, in: 4, out: 8, scale: 2}, {spec: nearest, in: 5, out: 15, scale: 3}}},
		{"last axis kept, first upsampled", []axis{{spec: nearest, in: 3, out: 9, scale: 3}, {notResized: true, in: 6}}},
		{"downsampling", []axis{{notResized: true, in: 2}, {spec: nearest, in: 9, out: 4, scale: 0.5}, {spec: nearest, in: 8, out: 4, scale: 0.5}}},
		{"by 1.5, half pixel", []axis{{spec: half, in: 4, out: 6, scale: 1.5}, {spec: half, in: 6, out: 9, scale: 1.5}}},
		{"crop with extrapolation", []axis{{notResized: true, in: 2}, {spec: crop, in: 5, out: 7, scale: 1.4, roi0: -0.3, roi1: 1.2}, {spec: crop, in: 6, out: 8, scale: 8.0 / 6, roi0: 0.1, roi1: 1.4}}},
	} {
		axes := make([]ResizeAxis, len(c.axes))
		in, out := 1, 1
		for i, a := range c.axes {
			if a.notResized {
				axes[i] = ResizeIdentity(a.in)
			} else {
				axes[i] = ResizeTaps(a.spec, a.in, a.out, a.scale, a.roi0, a.roi1)
			}
			in *= axes[i].In
			out *= axes[i].Out
		}
		r := rand.New(rand.NewPCG(51, 52))
		x := make([]float32, in)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		const extrapolation = -7.5
		want := make([]float32, out)
		pos := make([]int, len(axes))
		for o := range out {
			rem, off, outside := o, 0, false
			for i := len(axes) - 1; i >= 0; i-- {
				pos[i] = rem % axes[i].Out
				rem /= axes[i].Out
			}
			stride := 1
			for i := len(axes) - 1; i >= 0; i-- {
				a := axes[i]
				outside = outside || a.Outside != nil && a.Outside[pos[i]]
				off += a.Index[pos[i]] * stride
				stride *= a.In
			}
			want[o] = x[off]
			if outside {
				want[o] = extrapolation
			}
		}
		x64 := make([]float64, in)
		for i, v := range x {
			x64[i] = float64(v)
		}
		for _, th := range []int{1, 2, 3} {
			got := make([]float32, out)
			Resize(axes, x, got, extrapolation, th)
			got64 := make([]float64, out)
			Resize(axes, x64, got64, extrapolation, th)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) || got64[i] != float64(want[i]) {
					t.Fatalf("%s, %d threads: out[%d] = %v (float64 %v), want %v", c.name, th, i, got[i], got64[i], want[i])
				}
			}
		}
	}
}

// BenchmarkResizeNearest2x times ppyoloe_s's larger upsampling at batch
// 8: 96 channels of 20×20 to 40×40, one thread.
func BenchmarkResizeNearest2x(b *testing.B) {
	s := ResizeSpec{Mode: ResizeNearest, Transform: Asymmetric, Nearest: Floor}
	axes := []ResizeAxis{ResizeIdentity(8), ResizeIdentity(96), ResizeTaps(s, 20, 40, 2, 0, 1), ResizeTaps(s, 20, 40, 2, 0, 1)}
	x, out := make([]float32, 8*96*20*20), make([]float32, 8*96*40*40)
	perfLoop(b, func() { Resize(axes, x, out, 0, 1) })
}
