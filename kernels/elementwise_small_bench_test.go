package kernels

import "testing"

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
