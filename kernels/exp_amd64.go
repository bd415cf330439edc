//go:build !purego

package kernels

import "math"

//go:generate sh -c "cd internal/avo && go run ./expgen -out ../../exp_amd64.s -stubs ../../exp_stub_amd64.go -pkg kernels"

// siluConsts32 are the constants of the SiLU loops, in the order
// internal/avo/expgen reads them: siluNegExp32's and ewSiluF32At's, each the
// float32 the Go code uses, then siluTable32, then ewgSiluF32At's.
var siluConsts32 = func() (c [64]float32) {
	copy(c[:], []float32{
		16 / math.Ln2, 0x1.8p23, siluLn2Hi32, siluLn2Lo32, 1.0 / 24, 1.0 / 6, 0.5, 1, siluLo32, float32(negZero),
		math.Float32frombits(127<<4 - math.Float32bits(0x1.8p23)),
	})
	copy(c[16:], siluTable32[:])
	copy(c[48:], []float32{siluGradHi32, siluGradSplit32, siluRootHi32, siluRootLo32, siluBand32})
	copy(c[53:], siluGradPoly32[:])
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

// siluBiasF32Vec computes ewSiluBlock32 on v + b (the sum rounded to
// float32) in place on the longest prefix of v whose length is a multiple
// of 16, with the AVX-512 loop where it can and in Go the blocks the loop
// leaves (a sum under siluLo32, or NaN). It returns the prefix's length
// (0 without AVX-512).
func siluBiasF32Vec(v []float32, b float32) int {
	n := len(v) &^ 15
	if !hasPerfAVX512 || n == 0 {
		return 0
	}
	v = v[:n]
	var t [16]float64
	i := 0
	for n-i >= 16 {
		i += siluBiasF32AVX512(&v[i], &v[i], n-i, &b, &siluConsts32)
		if n-i >= 16 {
			blk := v[i : i+16]
			for k := range blk {
				blk[k] += b
			}
			ewSiluGo32(blk, blk, t[:])
			i += 16
		}
	}
	return n
}

// siluGradF32Vec computes ewgSiluGo32's out = dy·silu'(x) on the longest
// prefix of out whose length is a multiple of 8, with the AVX-512 loop
// where it can: blocks of 16, a last 8 through zero-padded copies, and in
// Go the blocks the loop leaves (an x under siluLo32, or NaN). It returns
// the prefix's length (0 without AVX-512). out may be x or dy.
func siluGradF32Vec(out, x, dy []float32) int {
	n := len(out) &^ 7
	if !hasPerfAVX512 || n == 0 {
		return 0
	}
	x, dy = x[:n], dy[:n]
	var b [16]float64
	i := 0
	for n-i >= 16 {
		i += siluGradF32AVX512(&out[i], &x[i], &dy[i], (n-i)&^15, &siluConsts32)
		if n-i >= 16 {
			ewgSiluGo32(out[i:i+16], x[i:i+16], dy[i:i+16], b[:])
			i += 16
		}
	}
	if i < n {
		var xs, ds, z [16]float32
		copy(xs[:], x[i:n])
		copy(ds[:], dy[i:n])
		if siluGradF32AVX512(&z[0], &xs[0], &ds[0], 16, &siluConsts32) == 16 {
			copy(out[i:n], z[:])
		} else {
			ewgSiluGo32(out[i:n], x[i:n], dy[i:n], b[:])
		}
	}
	return n
}

// softmaxExpF32Vec computes softmaxExp32 on the longest prefix of o whose
// length is a multiple of 16 with the AVX-512 loop, and returns its
// length (0 without AVX-512).
func softmaxExpF32Vec(o, d []float32) int {
	n := len(o) &^ 15
	if !hasPerfAVX512 || n == 0 {
		return 0
	}
	softmaxExpF32AVX512(&o[0], &d[0], n, &siluConsts32)
	return n
}
