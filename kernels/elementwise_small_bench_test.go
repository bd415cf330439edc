package kernels

import (
	"fmt"
	"testing"
)

// BenchmarkBinarySmall measures the entry cost of Binary on tiny
// operands, where the executor's scalar and small elementwise ops spend
// their time: shape checks and dispatch, not arithmetic.
func BenchmarkBinarySmall(b *testing.B) {
	x, y, o := make([]float32, 64), make([]float32, 64), make([]float32, 64)
	for _, c := range []struct {
		name           string
		out, as, bs    []int
		la, lb, lenOut int
	}{
		{"scalar+scalar", []int{}, []int{}, []int{}, 1, 1, 1},
		{"8x8+8x8", []int{8, 8}, []int{8, 8}, []int{8, 8}, 64, 64, 64},
		{"8x8+scalar", []int{8, 8}, []int{8, 8}, []int{}, 64, 1, 64},
		{"8x8+8", []int{8, 8}, []int{8, 8}, []int{8}, 64, 8, 64},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := Binary(BinAdd, 2, o[:c.lenOut], c.out, x[:c.la], c.as, y[:c.lb], c.bs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkInferenceOps times the elementwise passes of the small CNN's
// first block (bias add broadcast over 32 channels of 32×32, batch norm,
// ReLU) at batch 1 and 8, with the thread count given to the kernel, to
// set the sizes at which a second goroutine pays off.
func BenchmarkInferenceOps(b *testing.B) {
	for _, n := range []int{1, 8} {
		size := n * 32 * 32 * 32
		x, y, out := make([]float32, size), make([]float32, 32), make([]float32, size)
		a, c := make([]float64, 32), make([]float64, 32)
		shape, bias := []int{n, 32, 32, 32}, []int{32, 1, 1}
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("bias-add/n=%d/threads=%d", n, threads), func(b *testing.B) {
				for b.Loop() {
					if err := Binary(BinAdd, threads, out, shape, x, shape, y, bias); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("batch-norm/n=%d/threads=%d", n, threads), func(b *testing.B) {
				for b.Loop() {
					BatchNormApply(x, out, n, 32, 1024, a, c, threads)
				}
			})
			b.Run(fmt.Sprintf("relu/n=%d/threads=%d", n, threads), func(b *testing.B) {
				for b.Loop() {
					ReluF32(out, x, threads)
				}
			})
		}
	}
}
