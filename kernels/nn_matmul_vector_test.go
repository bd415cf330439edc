package kernels

import (
	"fmt"
	"math/rand"
	"testing"
)

// TestMatmulVector holds MatmulPackedB's and MatmulFused's
// matrix-times-vector products (n = 1, through the GEMM's row kernel on
// the transpose) to the GEMM's tiles they replace bit for bit
// (GemmPackedB's and Sgemm's): short and long matrices, depths under and
// over a vector, y stored as a column or a row, with an epilogue, on one
// thread and two; and a repeated call allocates nothing (a single
// product: a batch over threads makes its closure).
func TestMatmulVector(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for _, m := range []int{1, 3, 17, 100, 2103, 8400} {
		for _, k := range []int{1, 5, 17, 33, 300} {
			for _, transB := range []bool{false, true} {
				a := randsF32(r, m*k)
				b := randsF32(r, k)
				pb := make([]float32, PackedGemmBLen[float32](k, 1))
				ldb := 1
				if transB {
					ldb = k
				}
				PackGemmB(pb, transB, k, 1, b, ldb)
				ep := Epilogue{Bias32: randsF32(r, 1), Act: ActSilu}
				for _, th := range []int{1, 2} {
					want := make([]float32, m)
					GemmPackedB(false, transB, m, 1, k, 1, a, k, b, ldb, pb, 0, want, 1, th)
					matmulEpilogue(ep, want, m, 1, 0, th)
					got := make([]float32, m)
					MatmulPackedB(false, transB, m, 1, k, a, b, pb, got, ep, th)
					vectorSameBits(t, fmt.Sprintf("packed, m %d, k %d, transB %v, %d threads", m, k, transB, th), got, want)
					// Unpacked, as a batch of two with b broadcast.
					a2 := append(append([]float32(nil), a...), a...)
					got2 := make([]float32, 2*m)
					aOff, bOff := []int{0, m * k}, []int{0, 0}
					MatmulFused(false, transB, m, 1, k, a2, aOff, b, bOff, got2, ep, th)
					vectorSameBits(t, fmt.Sprintf("batched, m %d, k %d, transB %v, %d threads", m, k, transB, th), got2[:m], want)
					vectorSameBits(t, fmt.Sprintf("batched, m %d, k %d, transB %v, %d threads", m, k, transB, th), got2[m:], want)
					Sgemm(false, transB, m, 1, k, 1, a, k, b, ldb, 0, got, 1, th)
					matmulEpilogue(ep, got, m, 1, 0, th)
					vectorSameBits(t, fmt.Sprintf("Sgemm, m %d, k %d, transB %v, %d threads", m, k, transB, th), got, want)
					if allocs := testing.AllocsPerRun(10, func() {
						MatmulPackedB(false, transB, m, 1, k, a, b, pb, got, ep, th)
						MatmulFused(false, transB, m, 1, k, a, aOff[:1], b, bOff[:1], got, ep, th)
					}); allocs > 0.5 && !raceEnabled {
						t.Errorf("m %d, k %d, %d threads: %.1f allocations a call", m, k, th, allocs)
					}
				}
			}
		}
	}
}

// vectorSameBits fails t unless got and want hold the same bits.
func vectorSameBits(t *testing.T, name string, got, want []float32) {
	t.Helper()
	for i := range want {
		if !sameBits(got[i], want[i]) {
			t.Fatalf("%s: c[%d] = %v, want %v", name, i, got[i], want[i])
		}
	}
}
