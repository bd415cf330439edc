//go:build !purego

package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkSiluBiasF32 times the bias-and-SiLU loop alone, one thread, on
// an 80×80 plane (in L1, as the epilogue finds it) and on 64K elements;
// ns/val is per element.
func BenchmarkSiluBiasF32(b *testing.B) {
	for _, n := range []int{6400, 1 << 16} {
		r := rand.New(rand.NewPCG(9, 10))
		x, out := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64() * 3)
		}
		bias := float32(0.1)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			if !hasPerfAVX512 {
				b.Skip("no AVX-512 loop on this CPU")
			}
			for b.Loop() {
				// out-of-place: in place, repeated SiLU drives the values subnormal
				siluBiasF32AVX512(&out[0], &x[0], n, &bias, &siluConsts32)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/val")
		})
	}
}
