package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// softmaxF32LinesGo is SoftmaxF32 on contiguous lines with only the Go
// loops around the exponentials (the path without AVX-512): softmaxF32Max,
// max − x, softmaxF32Normalize, and Softmax's formula for a line without
// a finite maximum.
func softmaxF32LinesGo(x []float32, outer, n int) []float32 {
	y := make([]float32, len(x))
	for l := range outer {
		line, d := x[l*n:(l+1)*n], y[l*n:(l+1)*n]
		m := softmaxF32Max(line)
		if !finite32(m) {
			softmaxRange(x, y, n, 1, false, l, l+1)
			continue
		}
		for j, v := range line {
			d[j] = m - v
		}
		softmaxExpF32(d, d)
		softmaxF32Normalize(d)
	}
	return y
}

// TestSoftmaxF32LinesSameBits: SoftmaxF32 over contiguous lines (the
// AVX-512 maximum, max − x and normalisation where the CPU has them)
// gives the Go loops' bits for line lengths around the vectors of 16 and
// 8 and the chains of 4, lines with NaN, ±Inf, −Inf elements, maxima of
// +0 and −0 (where Go's max and the vector one differ in sign), −0
// elements, and runs longer than softmaxF32Run, on 1 and 2 threads, in
// place or not.
func TestSoftmaxF32LinesSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	var ns []int
	for n := 1; n <= 41; n++ {
		ns = append(ns, n)
	}
	ns = append(ns, 64, 100, 300, 5000)
	for _, n := range ns {
		outer := max(3, 9000/n)
		x := make([]float32, outer*n)
		for i := range x {
			x[i] = float32(r.NormFloat64() * 4)
		}
		special := func(l int, f func(line []float32)) {
			if l < outer {
				f(x[l*n : (l+1)*n])
			}
		}
		special(1, func(line []float32) { line[n/2] = float32(math.NaN()) })
		special(2, func(line []float32) { line[n-1] = float32(math.Inf(1)) })
		special(3, func(line []float32) {
			for j := range line {
				line[j] = float32(math.Inf(-1))
			}
		})
		special(4, func(line []float32) { // maximum −0 and +0
			for j := range line {
				line[j] = -float32(j)
			}
			line[0], line[n-1] = float32(math.Copysign(0, -1)), 0
		})
		special(5, func(line []float32) { // maximum −0 only
			for j := range line {
				line[j] = -1 - float32(j)
			}
			line[n/3] = float32(math.Copysign(0, -1))
		})
		special(6, func(line []float32) { line[0] = float32(math.Inf(-1)); line[n-1] = float32(math.Copysign(0, -1)) })
		special(outer-1, func(line []float32) { line[0] = 1e30; line[n-1] = -1e30 })
		want := softmaxF32LinesGo(x, outer, n)
		for _, th := range []int{1, 2} {
			for _, inPlace := range []bool{false, true} {
				got := make([]float32, len(x))
				src := x
				if inPlace {
					copy(got, x)
					src = got
				}
				SoftmaxF32(src, got, outer, n, 1, th)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("n %d, %d threads, in place %v: y[%d] (line %d) = %v, the Go loops give %v", n, th, inPlace, i, i/n, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestSoftmaxF32VecSameBits checks the AVX-512 loops on their own against
// the Go steps they replace, on values chosen to make another order of
// the additions show: normalising lines of large values that cancel
// (softmaxF32Normalize's four chains, tail and combination), and max − x
// with the line where the loop must stop (a NaN, ±Inf or ±0 maximum).
func TestSoftmaxF32VecSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(73, 74))
	for n := 1; n <= 41; n++ {
		const outer = 50
		e := make([]float32, outer*n)
		for i := range e {
			e[i] = float32(r.NormFloat64())
			if r.IntN(3) == 0 {
				e[i] = float32(math.Ldexp(float64(1-2*r.IntN(2)), 20+r.IntN(30)))
			}
		}
		want := append([]float32(nil), e...)
		for l := range outer {
			softmaxF32Normalize(want[l*n : (l+1)*n])
		}
		if !softmaxNormalizeF32Vec(e, n) {
			t.Skip("no AVX-512: the Go loops are the only path")
		}
		for i := range want {
			if math.Float32bits(e[i]) != math.Float32bits(want[i]) {
				t.Fatalf("normalise, n %d: e[%d] = %v, softmaxF32Normalize gives %v", n, i, e[i], want[i])
			}
		}
		x := make([]float32, outer*n)
		for i := range x {
			x[i] = float32(r.NormFloat64() * 1e3)
		}
		stop := 10 + r.IntN(30)
		line := x[stop*n : (stop+1)*n]
		switch n % 4 {
		case 0:
			line[r.IntN(n)] = float32(math.NaN())
		case 1:
			line[r.IntN(n)] = float32(math.Inf(1))
		case 2:
			for j := range line {
				line[j] = -1 - float32(j)
			}
			line[r.IntN(n)] = float32(math.Copysign(0, -1))
		default:
			for j := range line {
				line[j] = float32(math.Inf(-1))
			}
		}
		d := make([]float32, len(x))
		if got := softmaxMaxSubF32Vec(x, d, n); got != stop {
			t.Fatalf("max − x, n %d: stopped after %d lines, want %d", n, got, stop)
		}
		for l := range stop {
			m := softmaxF32Max(x[l*n : (l+1)*n])
			for j := range n {
				if w := m - x[l*n+j]; math.Float32bits(d[l*n+j]) != math.Float32bits(w) {
					t.Fatalf("max − x, n %d, line %d: d[%d] = %v, want %v", n, l, j, d[l*n+j], w)
				}
			}
		}
		for i := stop * n; i < len(d); i++ {
			if d[i] != 0 {
				t.Fatalf("max − x, n %d: wrote d[%d] past the line it stopped at", n, i)
			}
		}
	}
}

// BenchmarkSoftmaxF32Lines times SoftmaxF32 over ppyoloe_s's distribution
// bins at batch 1 and 8 on one thread.
func BenchmarkSoftmaxF32Lines(b *testing.B) {
	r := rand.New(rand.NewPCG(23, 24))
	for _, batch := range []int{1, 8} {
		outer, n := batch*2100*4, 17
		x, y := make([]float32, outer*n), make([]float32, outer*n)
		for i := range x {
			x[i] = float32(r.NormFloat64() * 3)
		}
		b.Run(fmt.Sprintf("b=%d/n=%d", batch, n), func(b *testing.B) {
			b.SetBytes(int64(8 * len(x)))
			for b.Loop() {
				SoftmaxF32(x, y, outer, n, 1, 1)
			}
		})
	}
}
