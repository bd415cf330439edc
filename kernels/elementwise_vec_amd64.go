//go:build !purego

package kernels

// With AVX2, the float32 add and multiply loops run eight elements to an
// instruction (reduce_amd64.s, from redgen) and leave the last n%8 to the
// Go loops; each element is the same single rounded operation, so the bits
// are those of the Go loops.
func init() {
	if !hasAVX2FMA {
		return
	}
	ewArithF32[BinAdd].vv = func(o, a, b []float32) { ewVecVVF32(ewAddVVF32AVX, ewAddVVF32, o, a, b) }
	ewArithF32[BinAdd].vs = func(o, a []float32, y float32) { ewVecVSF32(ewAddVSF32AVX, ewAddVSF32, o, a, y) }
	ewArithF32[BinMul].vv = func(o, a, b []float32) { ewVecVVF32(ewMulVVF32AVX, ewMulVVF32, o, a, b) }
	ewArithF32[BinMul].vs = func(o, a []float32, y float32) { ewVecVSF32(ewMulVSF32AVX, ewMulVSF32, o, a, y) }
}

// ewVecVVF32 runs vec over the first len(o)&^7 elements and tail over the rest.
func ewVecVVF32(vec func(o, a, b *float32, n int), tail func(o, a, b []float32), o, a, b []float32) {
	a, b = a[:len(o)], b[:len(o)]
	n := len(o) &^ 7
	if n > 0 {
		vec(&o[0], &a[0], &b[0], n)
	}
	tail(o[n:], a[n:], b[n:])
}

// ewVecVSF32 runs vec over the first len(o)&^7 elements and tail over the rest.
func ewVecVSF32(vec func(o, a *float32, y float32, n int), tail func(o, a []float32, y float32), o, a []float32, y float32) {
	a = a[:len(o)]
	n := len(o) &^ 7
	if n > 0 {
		vec(&o[0], &a[0], y, n)
	}
	tail(o[n:], a[n:], y)
}
