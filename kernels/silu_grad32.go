package kernels

// SiLU's derivative in float32 arithmetic.
//
// silu'(x) = s·(1 + x·(1−s)), s = sigmoid(x), has one root, x0 ≈ −1.2785,
// where x·(1−s) = −1: written so, the factor 1 + x·(1−s) cancels over a
// wide range around it (float32's error in 1−s is multiplied by 5 at
// x = −1.5 and still by 2 at −2.3). Below x = −0.75 ewgSiluF32At takes
// s·((1+x) − x·s) instead, where 1+x is exact on [−2, −0.5] and |x·s| is
// under 0.28, so that the error of s is multiplied by about 0.28/|x − x0|
// (under 1 outside the band below); from −0.75 on, s + x·(s·(1−s)) with
// 1−s = e^−x·s, where the first form would cancel for large x (x·s
// against 1+x) and rounds more near 0. Within siluBand32 of x0 it takes
// silu'(x0+d) = d·h(d), d = (x − x0hi) − x0lo (the first difference exact
// by Sterbenz's lemma), h a polynomial fitted to silu'(x0+d)/d
// (tools/silu_grad_fit.py: interpolation at Chebyshev nodes on 50-digit
// values, the coefficients rounded to float32), which has no root to
// cancel at. The result is within 3 ulps of float32(silu'(x)) for
// x >= siluLo32 (TestSiluGradF32Ulps; 3 ulps for about 1 input in 10^5,
// 0 for 90%).

// siluRootHi32 and siluRootLo32 are x0 in two float32 parts, x0 =
// −1.27846454276107379510935873902…
const (
	siluRootHi32 = float32(-1.2784645557403564)
	siluRootLo32 = float32(1.2979282537628478e-08)
)

// siluBand32 is the half-width of the interval around x0 where
// ewgSiluF32At takes the polynomial; siluGradPoly32 are its coefficients,
// lowest degree first.
const siluBand32 = 0.3

var siluGradPoly32 = [...]float32{
	0.2178117036819458, 0.14664879441261292, 0.01887480728328228, -0.015222660265862942,
	-0.006606170441955328, 0.00012692461314145476, 0.0007910953718237579, 0.00018040738359559327,
}

// siluGradHi32 is where ewgSiluF32At stops following x: silu' rounds to 1
// in float32 from about 17 on, and +Inf would make x·e^−x NaN.
// siluGradSplit32 is where it changes form (see above).
const (
	siluGradHi32    = 80
	siluGradSplit32 = -0.75
)

// ewgSiluF32At is silu'(x) in float32 arithmetic for x >= siluLo32 (+Inf
// included; not NaN). Every step rounds to float32 (explicit conversions
// keep the compiler from contracting a product and a sum into one FMA);
// exp_amd64.s computes the same steps sixteen lanes at a time.
func ewgSiluF32At(x float32) float32 {
	x = min(x, siluGradHi32)
	e := siluNegExp32(x)
	s := 1 / (1 + e)
	var g float32
	if x < siluGradSplit32 {
		g = float32(s * ((1 + x) - float32(x*s)))
	} else {
		g = s + float32(x*float32(s*float32(e*s)))
	}
	if d := (x - siluRootHi32) - siluRootLo32; d >= -siluBand32 && d <= siluBand32 {
		p := siluGradPoly32[len(siluGradPoly32)-1]
		for k := len(siluGradPoly32) - 2; k >= 0; k-- {
			p = float32(p*d) + siluGradPoly32[k]
		}
		g = float32(d * p)
	}
	return g
}
