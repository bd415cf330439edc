package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// Col2im is the adjoint of Im2col: <Im2col(x), y> = <x, Col2im(y)>.
func TestConvIm2colAdjoint(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, p := range []Conv2DParams{
		{H: 5, W: 7, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},
		{H: 9, W: 8, KH: 3, KW: 2, SH: 2, SW: 3, PH: 1, PW: 0, DH: 2, DW: 1},
		{H: 4, W: 4, KH: 1, KW: 1, SH: 1, SW: 1, DH: 1, DW: 1},
		{H: 6, W: 11, KH: 4, KW: 5, SH: 3, SW: 2, PH: 2, PW: 2, DH: 1, DW: 2},
	} {
		ch := 3
		x := make([]float64, ch*p.H*p.W)
		y := make([]float64, ch*p.KH*p.KW*p.OutH()*p.OutW())
		for i := range x {
			x[i] = r.Float64()*2 - 1
		}
		for i := range y {
			y[i] = r.Float64()*2 - 1
		}
		col := make([]float64, len(y))
		for i := range col {
			col[i] = math.NaN() // Im2col must write every element
		}
		Im2col(p, ch, x, col)
		back := make([]float64, len(x))
		Col2im(p, ch, y, back)
		var lhs, rhs float64
		for i := range y {
			lhs += col[i] * y[i]
		}
		for i := range x {
			rhs += x[i] * back[i]
		}
		if math.IsNaN(lhs) || math.Abs(lhs-rhs) > 1e-9*(1+math.Abs(lhs)) {
			t.Fatalf("%+v: <im2col(x), y> = %v, <x, col2im(y)> = %v", p, lhs, rhs)
		}
	}
}

// Both work plans of the im2col path give bitwise the same result.
func TestConvPlansAgree(t *testing.T) {
	convForce.set, convForce.algo = true, convIm2col
	defer func() { convForce.set = false }()
	r := rand.New(rand.NewPCG(3, 4))
	p := Conv2DParams{N: 5, C: 4, H: 9, W: 8, O: 6, KH: 3, KW: 3, SH: 1, SW: 2, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 2}
	x := make([]float32, p.N*p.C*p.H*p.W)
	w := make([]float32, p.O*p.C/p.Groups*p.KH*p.KW)
	for i := range x {
		x[i] = r.Float32()
	}
	for i := range w {
		w[i] = r.Float32()
	}
	run := func(force bool, threads int) []float32 {
		conv2dForceGemmThreads = force
		defer func() { conv2dForceGemmThreads = false }()
		out := make([]float32, p.N*p.O*p.OutH()*p.OutW())
		Conv2D(p, x, w, out, make([]float32, Conv2DWorkspace(p, threads)), threads)
		return out
	}
	want := run(false, 1)
	for _, force := range []bool{false, true} {
		for _, th := range []int{2, 3, 16} {
			got := run(force, th)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("force=%v threads=%d: element %d = %v, want %v", force, th, i, got[i], want[i])
				}
			}
		}
	}
}

// BenchmarkConvPlan compares the two ways Conv2D's im2col path spreads
// work over GOMAXPROCS threads: samples in parallel with single-threaded
// GEMMs ("batch") or samples in turn with multi-threaded GEMMs ("gemm").
func BenchmarkConvPlan(b *testing.B) {
	for _, tc := range []struct {
		name string
		p    Conv2DParams
	}{
		{"lenet1_b64", Conv2DParams{N: 64, C: 1, H: 28, W: 28, O: 6, KH: 5, KW: 5, SH: 1, SW: 1, PH: 2, PW: 2, DH: 1, DW: 1, Groups: 1}},
		{"lenet2_b64", Conv2DParams{N: 64, C: 6, H: 14, W: 14, O: 16, KH: 5, KW: 5, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1}},
		{"resnet_b8", Conv2DParams{N: 8, C: 64, H: 56, W: 56, O: 64, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1}},
	} {
		for _, force := range []bool{false, true} {
			plan := "batch"
			if force {
				plan = "gemm"
			}
			b.Run(fmt.Sprintf("%s/%s", tc.name, plan), func(b *testing.B) {
				threads := runtime.GOMAXPROCS(0) // -cpu sets it per leaf
				p := tc.p
				conv2dForceGemmThreads = force
				convForce.set, convForce.algo = true, convIm2col
				defer func() { conv2dForceGemmThreads, convForce.set = false, false }()
				x := make([]float32, p.N*p.C*p.H*p.W)
				w := make([]float32, p.O*p.C/p.Groups*p.KH*p.KW)
				for i := range x {
					x[i] = float32(i%7) - 3
				}
				for i := range w {
					w[i] = float32(i%5) - 2
				}
				out := make([]float32, p.N*p.O*p.OutH()*p.OutW())
				ws := make([]float32, Conv2DWorkspace(p, threads))
				for b.Loop() {
					Conv2D(p, x, w, out, ws, threads)
				}
				flops := 2 * float64(len(out)) * float64(p.C/p.Groups*p.KH*p.KW)
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
