//go:build !purego

package kernels

//go:generate sh -c "cd internal/avo && go run ./softmaxgen -out ../../softmax_f32_amd64.s -stubs ../../softmax_f32_stub_amd64.go -pkg kernels"

// softmaxMaxSubF32Vec sets d = max − x along the lines of n elements of x
// with the AVX-512 loop (softmax_f32_amd64.s), from the first line up to
// one with a NaN or whose maximum is ±Inf or ±0, and returns the lines
// done (0 without AVX-512).
func softmaxMaxSubF32Vec(x, d []float32, n int) int {
	lines := len(x) / n
	if !hasPerfAVX512 || lines == 0 {
		return 0
	}
	_ = d[lines*n-1]
	return softmaxMaxSubF32AVX512(&x[0], &d[0], lines, n, 1<<(n%16)-1)
}

// softmaxNormalizeF32Vec is softmaxF32Normalize on every line of n
// elements of e with the AVX-512 loop, and reports whether it ran.
func softmaxNormalizeF32Vec(e []float32, n int) bool {
	lines := len(e) / n
	if !hasPerfAVX512 || lines == 0 {
		return false
	}
	one := 1.0
	softmaxNormalizeF32AVX512(&e[0], lines, n, &one)
	return true
}
