//go:build !purego

package kernels

// redSumRows8F32Vec adds the first n&^7 elements of each of eight rows of
// x, ld apart, into their lanes l[r] with the AVX loop (avx_amd64.s),
// and returns how many it added (0 without AVX).
func redSumRows8F32Vec(l *[redRowsGroup][4]float64, x []float32, ld, n int) int {
	n &^= 7
	if !hasAVX2FMA || n == 0 {
		return 0
	}
	_ = x[(redRowsGroup-1)*ld+n-1]
	redSumRows8F32AVX(&x[0], ld, n, l)
	return n
}
