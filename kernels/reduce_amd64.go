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

// redAddRows16F32Vec adds the groups of four of count rows of x (16
// columns, ld apart) into acc as redAddRows4 does, with the AVX-512 loop
// (nchwc_layout_amd64.s), and returns how many rows it added (0 without
// AVX-512).
func redAddRows16F32Vec(acc *[16]float64, x []float32, ld, count int) int {
	g := count / 4
	if !hasPerfAVX512 || g == 0 {
		return 0
	}
	_ = x[(4*g-1)*ld+15]
	redSumRows4x16F32AVX512(&x[0], ld, g, acc)
	return 4 * g
}
