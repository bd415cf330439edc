//go:build !purego

package kernels

// With AVX2, the float32 add and multiply loops run eight elements to an
// instruction (avx_amd64.s, from avxgen) and leave the last n%8 to the
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

// ewVecMin is the shortest loop given to the vector loops: on shorter ones
// (a bias row of 8, a scalar) the call costs more than the Go loop.
const ewVecMin = 32

// ewVecVVF32 runs vec over the first len(o)&^7 elements, from ewVecMin
// of them, and tail over the rest.
func ewVecVVF32(vec func(o, a, b *float32, n int), tail func(o, a, b []float32), o, a, b []float32) {
	n := 0
	if len(o) >= ewVecMin {
		n = len(o) &^ 7
		vec(&o[0], &a[:n][0], &b[:n][0], n)
	}
	tail(o[n:], a[n:], b[n:])
}

// ewVecVSF32 is ewVecVVF32 with a scalar second operand.
func ewVecVSF32(vec func(o, a *float32, y float32, n int), tail func(o, a []float32, y float32), o, a []float32, y float32) {
	n := 0
	if len(o) >= ewVecMin {
		n = len(o) &^ 7
		vec(&o[0], &a[:n][0], y, n)
	}
	tail(o[n:], a[n:], y)
}
