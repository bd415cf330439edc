//go:build !purego

package kernels

import "math"

//go:generate sh -c "cd internal/expgen && go run . -out ../../exp_amd64.s -stubs ../../exp_stub_amd64.go -pkg kernels"

// expConsts are the constants of the loops of exp_amd64.s, in the order
// internal/expgen reads them: ewNegExpArg32's and the SiLU loops'
// constants, each the same float64 the Go code uses, then ewExp16Table.
var expConsts = func() (c [32]float64) {
	copy(c[:], []float64{
		16 / math.Ln2, 0x1.8p52, math.Ln2 / 16, 1, 0.5, 1.0 / 6, 1.0 / 24, 1.0 / 120, -120, 120, negZero, -1e300,
		math.Float64frombits(1023), 0,
	})
	copy(c[16:], ewExp16Table[:])
	return c
}()

// siluF32Vec runs ewSiluBlock32 with the AVX-512 loop on the longest
// prefix of o whose length is a multiple of 8 and returns its length (0
// without AVX-512).
func siluF32Vec(o, a []float32) int {
	n := len(o) &^ 7
	if !hasPerfAVX512 || n == 0 {
		return 0
	}
	_ = a[n-1]
	siluF32AVX512(&o[0], &a[0], n, &expConsts)
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
