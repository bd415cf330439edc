package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// softmaxF32Cases are the shapes of the SoftmaxF32 tests: ppyoloe_s's
// distributions (lines of 17), lines longer than a run, middle axes.
var softmaxF32Cases = []struct{ outer, n, inner int }{
	{50, 17, 1}, {700, 17, 1}, {7, 64, 3}, {5, 65, 1}, {3, 200, 2}, {4, 1, 5}, {2, 5000, 1}, {9, 16, 1},
}

// softmaxF32Input draws x for a case: normal values of spread 4 and, in
// some lines, spreads past 100 (exponentials under e^-80 and float32's
// range), −Inf elements, and lines without a finite maximum (NaN, +Inf,
// all −Inf).
func softmaxF32Input(r *rand.Rand, outer, n, inner int) []float32 {
	x := make([]float32, outer*n*inner)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 4)
		if i%7 == 3 {
			x[i] = float32(r.NormFloat64() * 60)
		}
	}
	x[len(x)/3] = float32(math.Inf(-1))
	if outer*inner >= 4 {
		line := func(l, j int) *float32 { return &x[(l/inner)*n*inner+l%inner+j*inner] }
		*line(1, n/2) = float32(math.NaN())
		*line(2, 0) = float32(math.Inf(1))
		for j := range n {
			*line(3, j) = float32(math.Inf(-1))
		}
	}
	return x
}

// TestSoftmaxF32Accuracy: every output of SoftmaxF32 is within 4 float32
// ulps of the softmax computed in float64 with math.Exp, plus what the
// rounding of d = max − x to float32 adds (e^-d's relative error grows as
// d·2^-24), plus 2e-35 (e^-d is 0 beyond 80); and lines without a finite
// maximum get Softmax's bits.
func TestSoftmaxF32Accuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, c := range softmaxF32Cases {
		x := softmaxF32Input(r, c.outer, c.n, c.inner)
		got, ref := make([]float32, len(x)), make([]float32, len(x))
		SoftmaxF32(x, got, c.outer, c.n, c.inner, 1)
		Softmax(x, ref, c.outer, c.n, c.inner, 1)
		for l := range c.outer * c.inner {
			base := (l/c.inner)*c.n*c.inner + l%c.inner
			m := math.Inf(-1)
			for j := range c.n {
				m = max(m, float64(x[base+j*c.inner]))
			}
			for j := range c.n {
				k := base + j*c.inner
				if math.IsNaN(m) || math.IsInf(m, 0) {
					if math.Float32bits(got[k]) != math.Float32bits(ref[k]) {
						t.Fatalf("%v, line %d without a finite maximum: y[%d] = %v, Softmax gives %v", c, l, k, got[k], ref[k])
					}
					continue
				}
				var s float64
				for i := range c.n {
					s += math.Exp(float64(x[base+i*c.inner]) - m)
				}
				want := math.Exp(float64(x[k])-m) / s
				ulp := float64(math.Nextafter32(float32(want), float32(math.Inf(1))) - float32(want))
				arg := m - float64(x[k])
				if d := math.Abs(float64(got[k]) - want); d > 4*ulp+want*arg*0x1p-24+2e-35 {
					t.Fatalf("%v: y[%d] = %v, want %v (%.1f ulps off)", c, k, got[k], want, d/ulp)
				}
			}
		}
	}
}

// TestSoftmaxF32SameBits: SoftmaxF32 gives the same bits on 1, 2 and 3
// threads and in place (y = x).
func TestSoftmaxF32SameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	for _, c := range softmaxF32Cases {
		x := softmaxF32Input(r, c.outer, c.n, c.inner)
		want := make([]float32, len(x))
		SoftmaxF32(x, want, c.outer, c.n, c.inner, 1)
		for _, th := range []int{1, 2, 3} {
			got := append([]float32(nil), x...)
			SoftmaxF32(got, got, c.outer, c.n, c.inner, th)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%v, %d threads, in place: y[%d] = %v, one thread gives %v", c, th, i, got[i], want[i])
				}
			}
		}
	}
}

// TestSoftmaxExpF32SameBits: the AVX-512 loop gives softmaxExp32's bits
// on every float32 d in [0, 81] with its last 8 bits clear, the
// arguments of e^-d from 1 down to 0 (below e^-80).
func TestSoftmaxExpF32SameBits(t *testing.T) {
	var d []float32
	for b := uint32(0); ; b += 256 {
		v := math.Float32frombits(b)
		if v > 81 {
			break
		}
		d = append(d, v)
	}
	d = d[:len(d)&^15]
	got := make([]float32, len(d))
	if softmaxExpF32Vec(got, d) == 0 {
		t.Skip("no AVX-512: softmaxExp32 is the only path")
	}
	for i, v := range d {
		if want := softmaxExp32(v); math.Float32bits(got[i]) != math.Float32bits(want) {
			t.Fatalf("e^-%v: the AVX-512 loop gives %v, softmaxExp32 %v", v, got[i], want)
		}
	}
}

// TestSoftmaxF32Allocs: a call makes no Go allocation, split or not.
func TestSoftmaxF32Allocs(t *testing.T) {
	const outer, n = 2100 * 4, 17
	x, y := make([]float32, outer*n), make([]float32, outer*n)
	for _, th := range []int{1, 2} {
		if a := testing.AllocsPerRun(20, func() { SoftmaxF32(x, y, outer, n, 1, th) }); a != 0 {
			t.Fatalf("%d threads: %v allocations per call", th, a)
		}
	}
}

// BenchmarkSoftmaxF32DFL is BenchmarkSoftmaxDFL for SoftmaxF32.
func BenchmarkSoftmaxF32DFL(b *testing.B) {
	const outer, n = 8 * 2100 * 4, 17
	r := rand.New(rand.NewPCG(23, 24))
	x, y := make([]float32, outer*n), make([]float32, outer*n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 3)
	}
	perfLoop(b, func() { SoftmaxF32(x, y, outer, n, 1, 1) })
}
