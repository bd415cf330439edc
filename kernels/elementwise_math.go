package kernels

import "math"

// Scalar helpers of the generated unary loops, in float64; the f32 loops
// convert to float64, call them and round once.

// ewSigmoid is 1/(1+exp(-x)) without overflow for large |x|.
func ewSigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// ewSilu is x·sigmoid(x); at -Inf it is the limit, -0, not -Inf·0.
func ewSilu(x float64) float64 {
	if math.IsInf(x, -1) {
		return negZero
	}
	return x * ewSigmoid(x)
}

// negZero is -0, the limit of silu and gelu at -Inf.
var negZero = math.Copysign(0, -1)

// ewGelu is the exact GELU, x·Φ(x) = x/2·erfc(-x/√2); erfc keeps the
// negative tail accurate where 1+erf(x/√2) would cancel.
// At -Inf it is the limit, -0.
func ewGelu(x float64) float64 {
	if math.IsInf(x, -1) {
		return negZero
	}
	return 0.5 * x * math.Erfc(-x/math.Sqrt2)
}

// ewGeluTanh is the tanh approximation of GELU,
// x/2·(1+tanh(√(2/π)·(x+0.044715x³))), written as x·sigmoid(2u) so that
// the negative tail does not cancel. At -Inf it is the limit, -0.
func ewGeluTanh(x float64) float64 {
	const c = 2 * 0.7978845608028654 // 2·√(2/π)
	if math.IsInf(x, -1) {
		return negZero
	}
	return x * ewSigmoid(c*(x+0.044715*x*x*x))
}

// ewSoftplus is log(1+exp(x)) = max(x,0) + log1p(exp(-|x|)), which neither
// overflows for large x nor loses the tail for very negative x.
func ewSoftplus(x float64) float64 {
	return max(x, 0) + math.Log1p(math.Exp(-math.Abs(x)))
}

// ewAbsInt is |x|; the most negative value stays as it is (two's
// complement).
func ewAbsInt[T int32 | int64](x T) T {
	if x < 0 {
		return -x
	}
	return x
}

// ewSign is -1, 0 or 1 by the sign of x; zeros and NaN are returned as
// they are.
func ewSign[T Numeric](x T) T {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return x
}

// ewModFloat is the remainder of x/y with the sign of y: fmod's, moved by
// y when the signs differ; a zero remainder is a zero of y's sign (as
// numpy's remainder). fmod is exact, so computing it in float64 for
// float32 operands gives the float32 fmod.
func ewModFloat[T float32 | float64](x, y T) T {
	r := T(math.Mod(float64(x), float64(y)))
	switch {
	case r == 0:
		return T(math.Copysign(0, float64(y)))
	case (r < 0) != (y < 0):
		return r + y
	}
	return r
}

// ewModInt is the remainder of x/y with the sign of y; y must not be 0.
func ewModInt[T int32 | int64](x, y T) T {
	r := x % y
	if r != 0 && (r < 0) != (y < 0) {
		r += y
	}
	return r
}

// Fast float32 paths. The f32 loops of exp, sigmoid, tanh and the tanh
// form of gelu work on blocks of ewBlock elements in passes over a
// float64 buffer: convert, exponentiate with ewExpBlock (the sigmoid
// family with ewNegExpArg32, the same method on a smaller table), finish. The
// exponential's relative error (about 1e-15) is far under float32's
// rounding, so results match float32(math.F(float64(x))) to within one
// unit in the last place, at a fraction of the cost. Short call-free
// passes also keep the float32→float64 conversion's false register
// dependency from serializing the iterations. SiLU, the activation that
// dominates ppyoloe_s, computes in float32 instead (ewSiluF32At; within
// 2 units, twice the lanes per vector), but for its tail under -80.

// ewExp2Table[j] is 2^(j/64).
var ewExp2Table = func() (t [64]float64) {
	for j := range t {
		t[j] = math.Exp2(float64(j) / 64)
	}
	return t
}()

// ewExpBlock replaces each x of b, which must lie in [-700, 700] or be
// NaN, by e^x: x = (64m + j)·ln2/64 + r with |r| <= ln2/128 (Cody–Waite
// reduction with a two-part ln2/64), then e^x = 2^m · 2^(j/64) · e^r with a
// degree-5 polynomial for e^r.
func ewExpBlock(b []float64) {
	const (
		shifter = 0x1.8p52 // adding it rounds to an integer
		inv     = 64 / math.Ln2
		hi      = 6.93147180369123816490e-01 / 64 // k*hi is exact
		lo      = 1.90821492927058770002e-10 / 64
	)
	for i, x := range b {
		k := (x*inv + shifter) - shifter
		r := (x - k*hi) - k*lo
		ki := int64(k)
		r2 := r * r // Estrin's scheme: a shorter dependency chain than Horner's
		p := (1 + r) + r2*((0.5+r*(1.0/6))+r2*(1.0/24+r*(1.0/120)))
		b[i] = p * ewExp2Table[ki&63] * math.Float64frombits(uint64((ki>>6)+1023)<<52)
	}
}

// ewClamp limits x to [lo, hi] with plain comparisons (cheaper than the
// builtin min and max, which order signed zeros); NaN stays NaN.
func ewClamp(x, lo, hi float64) float64 {
	if x < lo {
		return lo
	}
	if x > hi {
		return hi
	}
	return x
}

// The block functions below compute o = f(a) for float32 o and a of
// equal length, using b (at least as long) as scratch.

// ewExpBlock32: beyond [-104, 89] e^x is already 0 or +Inf in float32.
func ewExpBlock32(o, a []float32, b []float64) {
	b = b[:len(a)]
	for i, x := range a {
		b[i] = ewClamp(float64(x), -104, 89)
	}
	ewExpBlock(b)
	o = o[:len(b)]
	for i, e := range b {
		o[i] = float32(e)
	}
}

// ewExp16Table[j] is 2^(j/16), ewNegExpArg32's table.
var ewExp16Table = func() (t [16]float64) {
	for j := range t {
		t[j] = math.Exp2(float64(j) / 16)
	}
	return t
}()

// ewNegExpArg32 sets b[i] = e^-clamp(a[i]) for the sigmoid family; beyond
// ±120 the sigmoid has saturated in float32. It is ewExpBlock's method
// with a table of 16 entries, which two AVX-512 registers hold (the SiLU
// loops of exp_amd64.s compute the same, operation for operation), and
// ln2/16 in one part: with |t| <= 120 the reduction's rounding, about
// 1e-14 relative, and the polynomial's on |r| <= ln2/32, about 1e-13,
// stay far under float32's.
func ewNegExpArg32(a []float32, b []float64) {
	const (
		shifter = 0x1.8p52 // adding it rounds to an integer
		inv     = 16 / math.Ln2
		c       = math.Ln2 / 16
	)
	b = b[:len(a)]
	for i, x := range a {
		t := -ewClamp(float64(x), -120, 120)
		k := (t*inv + shifter) - shifter
		r := t - k*c
		ki := int64(k)
		r2 := r * r
		p := (1 + r) + r2*((0.5+r*(1.0/6))+r2*(1.0/24+r*(1.0/120)))
		b[i] = p * ewExp16Table[ki&15] * math.Float64frombits(uint64((ki>>4)+1023)<<52)
	}
}

// ewSigmoidBlock32 is 1/(1+e^-x).
func ewSigmoidBlock32(o, a []float32, b []float64) {
	ewNegExpArg32(a, b)
	b = b[:len(a)]
	o = o[:len(b)]
	for i, e := range b {
		o[i] = float32(1 / (1 + e))
	}
}

// ewSiluBlock32 is x/(1+e^-x), -0 at -Inf. With AVX-512, siluF32Vec
// computes all but the last len%8 elements, bit for bit as ewSiluGo32.
func ewSiluBlock32(o, a []float32, b []float64) {
	k := siluF32Vec(o, a)
	ewSiluGo32(o[k:], a[k:], b)
}

// ewSiluGo32 is ewSiluBlock32 in Go: x/(1+e^-x) in float32 arithmetic
// (ewSiluF32At) for x >= siluLo32; below it, and for NaN, the float64
// formula of the sigmoid family, rounded once (x·e^x is tiny or
// subnormal there). b is scratch for the latter, at least as long as o.
func ewSiluGo32(o, a []float32, b []float64) {
	o = o[:len(a)]
	for i, x := range a {
		if x >= siluLo32 {
			o[i] = ewSiluF32At(x)
			continue
		}
		ewNegExpArg32(a[i:i+1], b[i:i+1])
		if math.IsInf(float64(x), -1) {
			o[i] = float32(negZero)
			continue
		}
		o[i] = float32(float64(x) / (1 + b[i]))
	}
}

// The float32 SiLU: e^-x = 2^(k/16)·e^r with k = round(-x·16/ln2) and
// |r| <= ln2/32 (Cody–Waite with a two-part ln2/16, the high part's last
// 12 bits zero so that k·hi is exact for |k| < 2^12), e^r − 1 by its
// degree-4 Taylor polynomial (the next term is under 2^-34), and
// 2^(j/16) as a float32 pair (hi + lo) so that the table adds no rounding
// of its own. -x is clamped at -80, where 1 + e^-x is already 1; x >=
// siluLo32 keeps e^-x <= e^80, far from overflow. Every step rounds to
// float32 (explicit conversions keep the compiler from contracting a
// product and a sum into one FMA), and exp_amd64.s computes the same
// roundings sixteen lanes at a time. The result is within 2 ulps of
// float32(silu(x)) (1 for about 82% of the inputs tested).
const siluLo32 = -80

// siluTable32 holds 2^(j/16) for j < 16 as float32 pairs: hi, then lo.
var siluTable32 = func() (t [32]float32) {
	for j := range 16 {
		v := math.Exp2(float64(j) / 16)
		t[j] = float32(v)
		t[16+j] = float32(v - float64(t[j]))
	}
	return t
}()

// siluLn2Hi32 and siluLn2Lo32 are ln2/16 in two parts, hi with its last
// 12 bits clear.
var (
	siluLn2Hi32 = math.Float32frombits(math.Float32bits(float32(math.Ln2/16)) &^ 0xfff)
	siluLn2Lo32 = float32(math.Ln2/16 - float64(siluLn2Hi32))
)

// ewSiluF32At is silu(x) in float32 arithmetic for x >= siluLo32 (or
// +Inf).
func ewSiluF32At(x float32) float32 {
	return x / (1 + siluNegExp32(x))
}

// siluNegExp32 is e^-x in float32 arithmetic for x >= siluLo32, -x
// clamped at -80: the exponential of ewSiluF32At and ewgSiluF32At.
func siluNegExp32(x float32) float32 {
	const (
		inv     = float32(16 / math.Ln2)
		shifter = float32(0x1.8p23) // adding it rounds to an integer
	)
	t := -x
	if t < siluLo32 {
		t = siluLo32
	}
	k := float32(t*inv) + shifter
	k -= shifter
	r := t - float32(k*siluLn2Hi32)
	r -= float32(k * siluLn2Lo32)
	ki := int32(k)
	p := float32(r*(1.0/24)) + 1.0/6
	p = float32(r*p) + 0.5
	q := float32(float32(r*r)*p) + r // e^r − 1
	hi, lo := siluTable32[ki&15], siluTable32[16+ki&15]
	e := hi + (lo + float32(hi*q))
	return float32(e * math.Float32frombits(uint32(ki>>4+127)<<23))
}

// ewGeluTanhBlock32 is the tanh form of GELU written as x·sigmoid(2u)
// (= x/2·(1+tanh u)), which does not cancel in the negative tail; -0 at
// -Inf.
func ewGeluTanhBlock32(o, a []float32, b []float64) {
	const c = 2 * 0.7978845608028654 // 2·√(2/π)
	b = b[:len(a)]
	for i, x32 := range a {
		x := float64(x32)
		b[i] = -ewClamp(c*(x+0.044715*x*x*x), -120, 120)
	}
	ewExpBlock(b)
	o = o[:len(b)]
	for i, e := range b {
		x := float64(a[i])
		if x < -1e300 {
			o[i] = float32(negZero)
			continue
		}
		o[i] = float32(x / (1 + e))
	}
}

// ewTanhBlock32 is tanh: 1-2/(e^2|x|+1) with the sign of x, or an odd
// Taylor polynomial for |x| < 1/16, where that formula would cancel (|x| >
// 20 gives ±1 already).
func ewTanhBlock32(o, a []float32, b []float64) {
	b = b[:len(a)]
	for i, x := range a {
		b[i] = 2 * ewClamp(math.Abs(float64(x)), 0, 20)
	}
	ewExpBlock(b)
	o = o[:len(b)]
	for i, e := range b {
		x := float64(a[i])
		ax := math.Abs(x)
		var t float64
		if ax < 0.0625 {
			x2 := ax * ax
			t = ax * (1 + x2*(-1.0/3+x2*(2.0/15+x2*(-17.0/315+x2*(62.0/2835+x2*(-1382.0/155925))))))
		} else {
			t = 1 - 2/(e+1)
		}
		o[i] = float32(math.Copysign(t, x))
	}
}
