//go:build !purego

package kernels

// resizeDup2F32Vec sets dst[r·ld + 2i] = dst[r·ld + 2i+1] = src[i] for
// r < rows and the first len(src)&^3 elements of src with the AVX loop
// (avx_amd64.s) and returns how many elements of src it did (0
// without AVX2).
func resizeDup2F32Vec(dst []float32, ld int, src []float32, rows int) int {
	n := len(src) &^ 3
	if !hasAVX2FMA || n == 0 || rows <= 0 {
		return 0
	}
	_ = dst[(rows-1)*ld+2*n-1]
	resizeDup2F32AVX(&dst[0], ld, &src[0], n, rows)
	return n
}
