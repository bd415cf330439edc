//go:build !purego

package kernels

// sigmoidF32Vec computes ewSigmoidGo32 on the longest prefix of o whose
// length is a multiple of 8, with the AVX-512 loop where it can: blocks
// of 16, a last 8 through a zero-padded copy, and in Go the blocks the
// loop leaves (an x under siluLo32, or NaN). It returns the prefix's
// length (0 without AVX-512).
func sigmoidF32Vec(o, a []float32) int {
	n := len(o) &^ 7
	if !hasPerfAVX512 || n == 0 {
		return 0
	}
	a = a[:n]
	i := 0
	for n-i >= 16 {
		i += sigmoidF32AVX512(&o[i], &a[i], (n-i)&^15, &siluConsts32)
		if n-i >= 16 {
			ewSigmoidGo32(o[i:i+16], a[i:i+16])
			i += 16
		}
	}
	if i < n {
		var x, z [16]float32
		copy(x[:], a[i:n])
		if sigmoidF32AVX512(&z[0], &x[0], 16, &siluConsts32) == 16 {
			copy(o[i:n], z[:])
		} else {
			ewSigmoidGo32(o[i:n], a[i:n])
		}
	}
	return n
}
