package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// sigmoidSweep returns the float32s whose bit patterns are 0, step,
// 2·step, ... below 2^32, and the special values.
func sigmoidSweep(step uint64) []float32 {
	xs := []float32{0, float32(negZero), 1, -1, 80, -80, -79.99999, -80.00001, -87, -88, -103, -104, -200, 200,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32}
	for u := uint64(0); u < 1<<32; u += step {
		xs = append(xs, math.Float32frombits(uint32(u)))
	}
	return xs
}

func sameF32Bits(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}

// The AVX-512 loop gives the Go loop's bits on every 251st float32 bit
// pattern and the special values (the loop stops at blocks with an x
// under -80 or NaN, which Go then takes), and SigmoidF32 gives them too.
func TestSigmoidF32VecBits(t *testing.T) {
	xs := sigmoidSweep(251)
	ref := make([]float32, len(xs))
	ewSigmoidGo32(ref, xs)
	got := make([]float32, len(xs))
	k := sigmoidF32Vec(got, xs)
	if k == 0 && siluF32Vec(make([]float32, 16), make([]float32, 16)) != 0 {
		t.Fatal("the AVX-512 loop did nothing where SiLU's runs")
	}
	ewSigmoidGo32(got[k:], xs[k:])
	all := make([]float32, len(xs))
	SigmoidF32(xs, all, 2)
	for i, x := range xs {
		if !sameF32Bits(got[i], ref[i]) {
			t.Fatalf("sigmoid(%g = %#08x): vector %g, Go %g", x, math.Float32bits(x), got[i], ref[i])
		}
		if !sameF32Bits(all[i], ref[i]) {
			t.Fatalf("SigmoidF32(%g = %#08x) = %g, Go %g", x, math.Float32bits(x), all[i], ref[i])
		}
	}
}

// Within 3 float32 ulps of the exact sigmoid (rounded to float32), on
// every 251st bit pattern; -Inf, +Inf and NaN give 0, 1 and NaN; below
// -80 the sigmoid op's bits.
func TestSigmoidF32ULPs(t *testing.T) {
	xs := sigmoidSweep(251)
	got := make([]float32, len(xs))
	SigmoidF32(xs, got, 1)
	op := make([]float32, len(xs))
	if err := Unary(UnarySigmoid, 1, op, xs); err != nil {
		t.Fatal(err)
	}
	var worst int64
	var at, atGot float32
	hist := map[int64]int{}
	for i, x := range xs {
		want := float32(1 / (1 + math.Exp(-float64(x))))
		d := ewULPs(got[i], want)
		hist[min(d, 4)]++
		if d > worst {
			worst, at, atGot = d, x, got[i]
		}
		if x < siluLo32 && !sameF32Bits(got[i], op[i]) {
			t.Errorf("sigmoid(%g) = %g, the sigmoid op %g", x, got[i], op[i])
		}
	}
	if worst > 3 {
		t.Errorf("%d ulps at x = %g: %g, want %g", worst, at, atGot, float32(1/(1+math.Exp(-float64(at)))))
	}
	t.Logf("ulps from the exact sigmoid: %v (worst %d at %g)", hist, worst, at)
	for _, c := range []struct{ x, want float32 }{{float32(math.Inf(-1)), 0}, {float32(math.Inf(1)), 1}, {0, 0.5}} {
		y := []float32{c.x}
		SigmoidF32(y, y, 1)
		if y[0] != c.want || math.Signbit(float64(y[0])) {
			t.Errorf("sigmoid(%g) = %g, want %g", c.x, y[0], c.want)
		}
	}
	y := []float32{float32(math.NaN())}
	if SigmoidF32(y, y, 1); y[0] == y[0] {
		t.Errorf("sigmoid(NaN) = %g", y[0])
	}
}

// The same bits at any length, thread count and alignment, in place or
// not, and no Go allocation per call.
func TestSigmoidF32Threads(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 1023, 1025, 12600, 100800, 300000} {
		x := make([]float32, n+1)
		for i := range x {
			x[i] = float32(r.NormFloat64() * 30)
		}
		if n > 20 {
			x[5], x[n-3] = -95, float32(math.NaN()) // blocks the loop leaves to Go
		}
		x = x[1:] // off the 64-byte grid
		want := make([]float32, n)
		ewSigmoidGo32(want, x)
		for _, threads := range []int{1, 2, 3} {
			got := make([]float32, n)
			SigmoidF32(x, got, threads)
			in := append([]float32(nil), x...)
			SigmoidF32(in, in, threads)
			for i := range want {
				if !sameF32Bits(got[i], want[i]) || !sameF32Bits(in[i], want[i]) {
					t.Fatalf("n %d threads %d: [%d] = %g (in place %g), want %g", n, threads, i, got[i], in[i], want[i])
				}
			}
			if !raceEnabled && n > 0 {
				if a := testing.AllocsPerRun(20, func() { SigmoidF32(x, got, threads) }); a != 0 {
					t.Errorf("n %d threads %d: %v Go allocations a call", n, threads, a)
				}
			}
		}
	}
}

// BenchmarkSigmoidF32 times ppyoloe_s's score sigmoid ([N,2100,6]) as
// the sigmoid op computes it (float64 e^-x) and as SigmoidF32 does, on
// -cpu threads.
func BenchmarkSigmoidF32(b *testing.B) {
	for _, n := range []int{1, 8} {
		x := make([]float32, n*2100*6)
		r := rand.New(rand.NewPCG(5, 6))
		for i := range x {
			x[i] = float32(r.NormFloat64() * 4)
		}
		y := make([]float32, len(x))
		threads := runtime.GOMAXPROCS(0)
		b.Run(fmt.Sprintf("n=%d/op=sigmoid", n), func(b *testing.B) {
			for b.Loop() {
				_ = Unary(UnarySigmoid, threads, y, x)
			}
		})
		b.Run(fmt.Sprintf("n=%d/op=sigmoid_f32", n), func(b *testing.B) {
			for b.Loop() {
				SigmoidF32(x, y, threads)
			}
		})
	}
}
