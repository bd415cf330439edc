//go:build !purego

package kernels

import "math"

//go:generate sh -c "cd internal/expgen && go run . -out ../../exp_amd64.s -stubs ../../exp_stub_amd64.go -pkg kernels"

// expConsts are the constants of the gradient's loop in exp_amd64.s, in
// the order internal/expgen reads them: ewNegExpArg32's and
// ewgSiluGo32's constants, each the same float64 the Go code uses, then
// ewExp16Table.
var expConsts = func() (c [32]float64) {
	copy(c[:], []float64{
		16 / math.Ln2, 0x1.8p52, math.Ln2 / 16, 1, 0.5, 1.0 / 6, 1.0 / 24, 1.0 / 120, -120, 120, negZero,
		math.Float64frombits(1023), 0,
	})
	copy(c[16:], ewExp16Table[:])
	return c
}()

// siluConsts32 are the constants of the SiLU loop, in the order
// internal/expgen reads them: ewSiluF32At's, each the float32 the Go code
// uses, then siluTable32.
var siluConsts32 = func() (c [48]float32) {
	copy(c[:], []float32{
		16 / math.Ln2, 0x1.8p23, siluLn2Hi32, siluLn2Lo32, 1.0 / 24, 1.0 / 6, 0.5, 1, siluLo32, float32(negZero),
		math.Float32frombits(127),
	})
	copy(c[16:], siluTable32[:])
	return c
}()

// siluF32Vec computes ewSiluBlock32 on the longest prefix of o whose
// length is a multiple of 8, with the AVX-512 loop where it can: blocks
// of 16, a last 8 through a zero-padded copy, and in Go the blocks the
// loop leaves (an x under siluLo32, or NaN, for the float64 formula). It
// returns the prefix's length (0 without AVX-512).
func siluF32Vec(o, a []float32) int {
	n := len(o) &^ 7
	if !hasPerfAVX512 || n == 0 {
		return 0
	}
	a = a[:n]
	var b [16]float64
	i := 0
	for n-i >= 16 {
		i += siluF32AVX512(&o[i], &a[i], (n-i)&^15, &siluConsts32)
		if n-i >= 16 {
			ewSiluGo32(o[i:i+16], a[i:i+16], b[:])
			i += 16
		}
	}
	if i < n {
		var x, z [16]float32
		copy(x[:], a[i:n])
		if siluF32AVX512(&z[0], &x[0], 16, &siluConsts32) == 16 {
			copy(o[i:n], z[:])
		} else {
			ewSiluGo32(o[i:n], a[i:n], b[:])
		}
	}
	return n
}

// siluGradF32Vec computes ewgSiluRun32's out = dy·silu'(x) with the
// AVX-512 loop on the longest prefix of out whose length is a multiple of
// 8 and returns its length (0 without AVX-512).
func siluGradF32Vec(out, x, dy []float32) int {
	n := len(out) &^ 7
	if !hasPerfAVX512 || n == 0 {
		return 0
	}
	_, _ = x[n-1], dy[n-1]
	siluGradF32AVX512(&out[0], &x[0], &dy[0], n, &expConsts)
	return n
}
