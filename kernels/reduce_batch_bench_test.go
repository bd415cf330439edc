package kernels

import (
	"fmt"
	"testing"
)

// BenchmarkReduceSumBatch: the canonical sum over a batch (group by
// group) against Reduce over the whole batch at once, for the bias
// gradients of a dense layer and of a convolution.
func BenchmarkReduceSumBatch(b *testing.B) {
	for _, c := range []struct {
		shape, axes []int
	}{
		{[]int{64, 512}, []int{0}},
		{[]int{128, 10}, []int{0}},
		{[]int{64, 6, 28, 28}, []int{0, 2, 3}},
		{[]int{64, 16, 10, 10}, []int{0, 2, 3}},
	} {
		n, out := 1, 1
		for i, d := range c.shape {
			n *= d
			if !batchHas(c.axes, i) {
				out *= d
			}
		}
		x, y, tmp := make([]float32, n), make([]float32, out), make([]float32, out)
		for i := range x {
			x[i] = float32(i%7) - 3
		}
		for _, th := range []int{1, 2} {
			b.Run(fmt.Sprintf("%v/t%d/groups", c.shape, th), func(b *testing.B) {
				for range b.N {
					ReduceSumBatch(th, y, tmp, x, c.shape, c.axes)
				}
			})
			b.Run(fmt.Sprintf("%v/t%d/whole", c.shape, th), func(b *testing.B) {
				for range b.N {
					Reduce(ReduceSum, th, y, x, c.shape, c.axes)
				}
			})
		}
	}
}
