package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestEwGradActivations checks the derivatives against central differences
// of the forward functions, and the threaded path against one thread.
func TestEwGradActivations(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 3*ewgGrain + 17
	x, dy := make([]float64, n), make([]float64, n)
	for i := range x {
		x[i] = r.Float64()*16 - 8
		dy[i] = r.Float64()*2 - 1
	}
	for _, tc := range []struct {
		name string
		f    func(float64) float64
		run  func(threads int, out []float64) error
	}{
		{"gelu", ewGelu, func(th int, out []float64) error { return GeluGrad(th, out, x, dy, false) }},
		{"gelu tanh", ewGeluTanh, func(th int, out []float64) error { return GeluGrad(th, out, x, dy, true) }},
		{"silu", ewSilu, func(th int, out []float64) error { return SiluGrad(th, out, x, dy) }},
	} {
		one, four := make([]float64, n), make([]float64, n)
		if err := tc.run(1, one); err != nil {
			t.Fatal(err)
		}
		if err := tc.run(4, four); err != nil {
			t.Fatal(err)
		}
		for i := range x {
			if one[i] != four[i] {
				t.Fatalf("%s: [%d] differs between 1 and 4 threads", tc.name, i)
			}
			h := 1e-6
			fd := dy[i] * (tc.f(x[i]+h) - tc.f(x[i]-h)) / (2 * h)
			if math.Abs(one[i]-fd) > 1e-7*(1+math.Abs(fd)) {
				t.Errorf("%s'(%g)·%g = %g, finite difference %g", tc.name, x[i], dy[i], one[i], fd)
			}
		}
	}
	if err := SiluGrad(1, make([]float32, 2), make([]float32, 3), make([]float32, 2)); err == nil {
		t.Error("SiluGrad with mismatched lengths: no error")
	}
}

// TestEwGradBroadcastScale compares BroadcastScale with a direct loop.
func TestEwGradBroadcastScale(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	cases := []struct{ out, x []int }{
		{[]int{}, []int{}},
		{[]int{5}, []int{1}},
		{[]int{5}, []int{5}},
		{[]int{3, 4}, []int{3, 1}},
		{[]int{3, 4}, []int{1, 4}},
		{[]int{3, 4}, []int{1, 1}},
		{[]int{2, 3, 4, 5}, []int{2, 1, 4, 1}},
		{[]int{2, 3, 4, 5}, []int{1, 3, 1, 5}},
		{[]int{3, 0, 2}, []int{3, 1, 2}},
		{[]int{64, 700, 3}, []int{64, 1, 3}},
		{[]int{9, 1, 5000}, []int{1, 1, 5000}},
	}
	for _, tc := range cases {
		n, m := 1, 1
		for i := range tc.out {
			n *= tc.out[i]
			m *= tc.x[i]
		}
		x := make([]float64, m)
		for i := range x {
			x[i] = r.Float64()
		}
		want := make([]float64, n)
		idx := make([]int, len(tc.out))
		for k := range want {
			off := 0
			for i, st := len(tc.out)-1, 1; i >= 0; i-- {
				if tc.x[i] != 1 {
					off += idx[i] * st
				}
				st *= tc.x[i]
			}
			want[k] = x[off] * 0.25
			for i := len(idx) - 1; i >= 0; i-- {
				if idx[i]++; idx[i] < tc.out[i] {
					break
				}
				idx[i] = 0
			}
		}
		for _, th := range []int{1, 3} {
			got := make([]float64, n)
			if err := BroadcastScale(th, got, tc.out, x, tc.x, 0.25); err != nil {
				t.Fatalf("%v from %v: %v", tc.out, tc.x, err)
			}
			for k := range got {
				if got[k] != want[k] {
					t.Fatalf("%v from %v, %d threads: [%d] = %g, want %g", tc.out, tc.x, th, k, got[k], want[k])
				}
			}
		}
	}
	for _, bad := range []struct{ out, x []int }{
		{[]int{3, 4}, []int{4}},
		{[]int{3, 4}, []int{2, 4}},
	} {
		if err := BroadcastScale(1, make([]float64, 12), bad.out, make([]float64, 4), bad.x, 1); err == nil {
			t.Errorf("%v from %v: no error", bad.out, bad.x)
		}
	}
}

// TestEwGradSiluF32 checks the blocked float32 silu_grad against
// float32(dy·silu'(x)) from siluGradRef: within 4 ulps (silu' within 3,
// then the product's rounding) over ordinary values, the tails, zeros,
// ±Inf and NaN and the neighbourhood of the root of silu', with 1 and 4
// threads; under siluLo32, where the result is tiny or subnormal, within
// 2e-7 relative or 1e-38.
func TestEwGradSiluF32(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	n := 3*ewgGrain + 300
	x, dy := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 6)
		if i%4 == 0 {
			x[i] = siluRootHi32 + float32(r.NormFloat64()*0.3)
		}
		dy[i] = float32(r.Float64()*2 - 1)
	}
	special := []float32{0, float32(math.Copysign(0, -1)), 1e-30, -1e-30, 30, -30, 87, -87, 119, -119, 121, -121,
		1000, -1000, 3e38, -3e38, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		siluRootHi32, math.Nextafter32(siluRootHi32, 0), math.Nextafter32(siluRootHi32, -2), -80, 80, 81}
	copy(x[100:], special)
	for _, th := range []int{1, 4} {
		out := make([]float32, n)
		if err := SiluGrad(th, out, x, dy); err != nil {
			t.Fatal(err)
		}
		for i := range x {
			want := float32(float64(dy[i]) * siluGradRef(float64(x[i])))
			got := out[i]
			if math.IsNaN(float64(want)) {
				if !math.IsNaN(float64(got)) {
					t.Errorf("silu'(%g): %g, want NaN", x[i], got)
				}
				continue
			}
			if x[i] >= siluLo32 {
				if d := ewULPs(got, want); d > 4 {
					t.Errorf("%d threads: silu'(%g)·%g = %g, want %g (%d ulps)", th, x[i], dy[i], got, want, d)
				}
				continue
			}
			if d := math.Abs(float64(got - want)); d > 2e-7*math.Abs(float64(want)) && d > 1e-38 {
				t.Errorf("%d threads: silu'(%g)·%g = %g, want %g", th, x[i], dy[i], got, want)
			}
		}
	}
}

// siluGradRef is silu'(x) in float64 without the cancellation of
// s·(1 + x·(1−s)) near its root x0 ≈ −1.2785: for x < 0 as
// s·((1+x) − x·s), 1+x exact for the float32 inputs of the tests and x·s
// split exactly by an FMA, so that the only error left is s's (a few
// 1e-17 absolute); the float32 nearest x0 lies 1.3e-8 from it, where
// silu' is 2.8e-9, so the reference stays within 0.04 float32 ulps.
func siluGradRef(x float64) float64 {
	if math.IsInf(x, 0) {
		return ewgInfLimit(x)
	}
	s, sn := ewgSigmoidPair(x)
	if x >= 0 {
		return s * (1 + x*sn)
	}
	p := x * s
	return s * (((1 + x) - p) - math.FMA(x, s, -p))
}

// TestSiluGradF32Ulps bounds ewgSiluF32At, the float32 arithmetic of
// silu_grad, by 3 ulps of float32(siluGradRef(x)): every float32 in
// [−2.5, −0.5], where silu' cancels near its root and changes form, and
// a float32 in every 997 elsewhere from siluLo32 up, with +Inf.
func TestSiluGradF32Ulps(t *testing.T) {
	worst, at := int64(0), float32(0)
	check := func(x float32) {
		if d := ewULPs(ewgSiluF32At(x), float32(siluGradRef(float64(x)))); d > worst {
			worst, at = d, x
		}
	}
	for b := math.Float32bits(-0.5); b <= math.Float32bits(-2.5); b++ {
		check(math.Float32frombits(b))
	}
	for b := uint32(0); b < 0x7f800000; b += 997 {
		if x := math.Float32frombits(b); x < 0.5 || x > 2.5 {
			check(x)
			if -x >= siluLo32 {
				check(-x)
			}
		}
	}
	check(float32(math.Inf(1)))
	if worst > 3 {
		t.Errorf("%d ulps at x = %v: %v, want %v", worst, at, ewgSiluF32At(at), float32(siluGradRef(float64(at))))
	}
}

// BenchmarkEwGradSiluF32 times silu_grad on 64K float32 elements, one
// thread: the path SiluGrad takes (AVX-512 where the CPU has it), the
// blocked Go loop, and the element-by-element loop on math.Exp before it.
func BenchmarkEwGradSiluF32(b *testing.B) {
	const n = 1 << 16
	r := rand.New(rand.NewPCG(7, 8))
	x, dy, out := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], dy[i] = float32(r.NormFloat64()*3), float32(r.Float64())
	}
	var buf [ewgBlock]float64
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"kernel", func() { SiluGrad(1, out, x, dy) }},
		{"go", func() {
			for s := 0; s < n; s += ewgBlock {
				ewgSiluGo32(out[s:s+ewgBlock], x[s:s+ewgBlock], dy[s:s+ewgBlock], buf[:])
			}
		}},
		{"element", func() { ewgRun(1, "silu_grad", out, x, dy, ewgSilu) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(3 * 4 * n)
			perfLoop(b, c.f)
		})
	}
}

// BenchmarkEwSiluF32 times the float32 SiLU on 64K elements, one thread:
// the path the op takes (AVX-512 where the CPU has it) and the blocked Go
// loop.
func BenchmarkEwSiluF32(b *testing.B) {
	const n = 1 << 16
	r := rand.New(rand.NewPCG(9, 10))
	x, out := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 3)
	}
	var buf [ewBlock]float64
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"kernel", func() {
			for s := 0; s < n; s += ewBlock {
				ewSiluBlock32(out[s:s+ewBlock], x[s:s+ewBlock], buf[:])
			}
		}},
		{"go", func() {
			for s := 0; s < n; s += ewBlock {
				ewSiluGo32(out[s:s+ewBlock], x[s:s+ewBlock], buf[:])
			}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(2 * 4 * n)
			perfLoop(b, c.f)
		})
	}
}

// TestSiluVecMatchesGo checks that the AVX-512 SiLU loops give the bits
// of the portable ones (ewSiluGo32, ewgSiluGo32) on ordinary values, the
// tails, zeros, ±Inf and NaN; without AVX-512 there is nothing to compare.
func TestSiluVecMatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	n := 8 * 1024
	x, dy := make([]float32, n), make([]float32, n)
	for i := range x {
		switch i % 3 {
		case 0:
			x[i] = float32(r.NormFloat64() * 6)
		case 1:
			x[i] = float32(r.Float64()*260 - 130)
		default:
			x[i] = float32(math.Copysign(math.Exp(-r.Float64()*80), r.Float64()-0.5))
		}
		dy[i] = float32(r.Float64()*2 - 1)
	}
	copy(x[40:], []float32{0, float32(math.Copysign(0, -1)), 1e-45, -1e-45, 87, -87, 119.99, -119.99, 120, -120,
		121, -121, 3e38, -3e38, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())})
	// silu''s root, the polynomial's band and the gradient's other limits
	copy(x[64:], []float32{siluRootHi32, math.Nextafter32(siluRootHi32, 0), siluRootHi32 - siluBand32,
		math.Nextafter32(siluRootHi32-siluBand32, 0), siluRootHi32 + siluBand32, math.Nextafter32(siluRootHi32+siluBand32, -2),
		siluGradSplit32, math.Nextafter32(siluGradSplit32, -1), 80, 81, -80, math.Nextafter32(-80, 0)})
	same := func(a, b float32) bool {
		return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
	}
	vec, ref := make([]float32, n), make([]float32, n)
	buf := make([]float64, n)
	k := siluF32Vec(vec, x)
	if k == 0 {
		t.Skip("no AVX-512 loop on this CPU")
	}
	ewSiluGo32(ref, x, buf)
	for i := range k {
		if !same(vec[i], ref[i]) {
			t.Fatalf("silu(%g): vector %g, Go %g", x[i], vec[i], ref[i])
		}
	}
	k = siluGradF32Vec(vec, x, dy)
	ewgSiluGo32(ref, x, dy, buf)
	for i := range k {
		if !same(vec[i], ref[i]) {
			t.Fatalf("silu'(%g)·%g: vector %g, Go %g", x[i], dy[i], vec[i], ref[i])
		}
	}
}
