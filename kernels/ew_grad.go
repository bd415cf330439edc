package kernels

import (
	"fmt"
	"math"
)

// Derivatives of the smooth activations, for their gradient rules:
// out = dy · f'(x) elementwise. They work in float64 and round once for
// float32, like the forward loops.

// ewgGrain is the smallest range worth a goroutine for these loops, which
// call exp or erfc per element.
const ewgGrain = 4 << 10

// GeluGrad computes out = dy·gelu'(x): with approximate false the exact
// form, gelu'(x) = Φ(x) + x·φ(x); with approximate true the derivative of
// the tanh form. out, x and dy have one length.
func GeluGrad[T float32 | float64](threads int, out, x, dy []T, approximate bool) error {
	d := ewgGeluExact
	if approximate {
		d = ewgGeluTanh
	}
	return ewgRun(threads, "gelu_grad", out, x, dy, d)
}

// SiluGrad computes out = dy·silu'(x), silu'(x) = s·(1 + x·(1−s)) with
// s = sigmoid(x). float32 runs in float32 arithmetic (ewgSiluF32At) in
// blocks, float64 element by element on math.Exp.
func SiluGrad[T float32 | float64](threads int, out, x, dy []T) error {
	if o, ok := any(out).([]float32); ok {
		return ewgSiluRun32(threads, o, any(x).([]float32), any(dy).([]float32))
	}
	return ewgRun(threads, "silu_grad", out, x, dy, ewgSilu)
}

// ewgSiluRun32 is SiluGrad for float32 (ewgSiluGo32). With AVX-512 all but
// the last len%8 elements of each block run sixteen at a time
// (siluGradF32Vec).
func ewgSiluRun32(threads int, out, x, dy []float32) error {
	if len(x) != len(out) || len(dy) != len(out) {
		return fmt.Errorf("silu_grad: %d outputs for %d and %d inputs", len(out), len(x), len(dy))
	}
	body := func(lo, hi int) {
		var buf [ewgBlock]float64
		for s := lo; s < hi; s += ewgBlock {
			e := min(s+ewgBlock, hi)
			k := siluGradF32Vec(out[s:e], x[s:e], dy[s:e])
			ewgSiluGo32(out[s+k:e], x[s+k:e], dy[s+k:e], buf[:])
		}
	}
	if threads <= 1 || len(out) < 2*ewgGrain {
		if len(out) > 0 {
			body(0, len(out))
		}
		return nil
	}
	ParallelFor(threads, len(out), ewgGrain, body)
	return nil
}

// ewgSiluGo32 is one block of ewgSiluRun32 in Go: o = g·silu'(a) with
// ewgSiluF32At for a >= siluLo32, the product rounded to float32; below
// it, and for NaN, the float64 formula, rounded once (silu' is under
// 2^-110 there; -Inf takes the limit 0, NaN stays NaN). b is scratch for
// the latter, as long as o; o may be a or g. siluGradF32Vec computes the
// same, bit for bit, with AVX-512.
func ewgSiluGo32(o, a, g []float32, b []float64) {
	o = o[:len(a)]
	for i, x := range a {
		if x >= siluLo32 {
			o[i] = g[i] * ewgSiluF32At(x)
			continue
		}
		ewNegExpArg32(a[i:i+1], b[i:i+1]) // e^−x
		xi := float64(x)
		if math.IsInf(xi, 0) {
			o[i] = float32(float64(g[i]) * ewgInfLimit(xi))
			continue
		}
		sig := 1 / (1 + b[i])
		sn := b[i] * sig
		if xi < -120 { // past the clamp: x·e^x is below float32's smallest
			sig, sn = 0, 1
		}
		o[i] = float32(float64(g[i]) * sig * (1 + xi*sn))
	}
}

// ewgBlock is the length of the blocks of ewgSiluRun32.
const ewgBlock = 256

func ewgRun[T float32 | float64](threads int, name string, out, x, dy []T, d func(float64) float64) error {
	if len(x) != len(out) || len(dy) != len(out) {
		return fmt.Errorf("%s: %d outputs for %d and %d inputs", name, len(out), len(x), len(dy))
	}
	body := func(lo, hi int) {
		o, a, g := out[lo:hi], x[lo:hi], dy[lo:hi]
		for i := range o {
			o[i] = T(float64(g[i]) * d(float64(a[i])))
		}
	}
	if threads <= 1 || len(out) < 2*ewgGrain {
		if len(out) > 0 {
			body(0, len(out))
		}
		return nil
	}
	ParallelFor(threads, len(out), ewgGrain, body)
	return nil
}

// ewgSigmoidPair returns sigmoid(x) and 1 − sigmoid(x) = sigmoid(−x),
// each without cancellation.
func ewgSigmoidPair(x float64) (s, sn float64) {
	if x >= 0 {
		e := math.Exp(-x)
		return 1 / (1 + e), e / (1 + e)
	}
	e := math.Exp(x)
	return e / (1 + e), 1 / (1 + e)
}

// ewgGeluExact is Φ(x) + x·φ(x).
func ewgGeluExact(x float64) float64 {
	if math.IsInf(x, 0) {
		return ewgInfLimit(x)
	}
	const invSqrt2Pi = 0.3989422804014327 // 1/√(2π)
	return 0.5*math.Erfc(-x/math.Sqrt2) + x*invSqrt2Pi*math.Exp(-0.5*x*x)
}

// ewgGeluTanh differentiates x·sigmoid(2u), u = c·(x + 0.044715x³),
// c = √(2/π): s + x·2c·(1 + 3·0.044715x²)·s·(1−s) with s = sigmoid(2u).
func ewgGeluTanh(x float64) float64 {
	if math.IsInf(x, 0) {
		return ewgInfLimit(x)
	}
	const c = 0.7978845608028654 // √(2/π)
	s, sn := ewgSigmoidPair(2 * c * (x + 0.044715*x*x*x))
	if ss := s * sn; ss != 0 {
		return s + x*2*c*(1+3*0.044715*x*x)*ss
	}
	return s // far in a tail, where x³ may overflow
}

// ewgSilu is s·(1 + x·(1−s)), s = sigmoid(x).
func ewgSilu(x float64) float64 {
	if math.IsInf(x, 0) {
		return ewgInfLimit(x)
	}
	s, sn := ewgSigmoidPair(x)
	return s * (1 + x*sn)
}

// ewgInfLimit is the slope of gelu and silu at ±Inf: 1 and 0.
func ewgInfLimit(x float64) float64 {
	if x > 0 {
		return 1
	}
	return 0
}

// BroadcastScale computes out = x·s broadcast to outShape, for the
// gradients of reductions: x has outShape's rank, with 1 at each dim it
// is broadcast along (any dim of outShape may be 1 as well).
func BroadcastScale[T float32 | float64](threads int, out []T, outShape []int, x []T, xShape []int, s T) error {
	if len(xShape) != len(outShape) {
		return fmt.Errorf("broadcast: shape %v and %v differ in rank", xShape, outShape)
	}
	n, m := 1, 1
	for i, d := range outShape {
		if xShape[i] != d && xShape[i] != 1 {
			return fmt.Errorf("broadcast: shape %v does not broadcast to %v", xShape, outShape)
		}
		n *= d
		m *= xShape[i]
	}
	if len(out) != n || len(x) != m {
		return fmt.Errorf("broadcast: %d outputs and %d inputs for shapes %v and %v", len(out), len(x), outShape, xShape)
	}
	if n == 0 {
		return nil
	}
	// Rows of the innermost dim; x's strides are 0 along broadcast dims.
	r := len(outShape)
	inner, innerStride := 1, 0
	if r > 0 {
		inner = outShape[r-1]
		if xShape[r-1] != 1 || inner == 1 {
			innerStride = 1
		}
	}
	strides := make([]int, r)
	for i, st := r-1, 1; i >= 0; i-- {
		if xShape[i] != 1 {
			strides[i] = st
		}
		st *= xShape[i]
	}
	rows := n / inner
	body := func(lo, hi int) {
		idx := make([]int, max(r-1, 0))
		// Decompose row lo into the outer indices and x's offset.
		rem, off := lo, 0
		for i := r - 2; i >= 0; i-- {
			idx[i] = rem % outShape[i]
			rem /= outShape[i]
			off += idx[i] * strides[i]
		}
		for row := lo; row < hi; row++ {
			o := out[row*inner : (row+1)*inner]
			if innerStride == 0 {
				v := x[off] * s
				for j := range o {
					o[j] = v
				}
			} else {
				a := x[off : off+inner]
				for j := range o {
					o[j] = a[j] * s
				}
			}
			for i := r - 2; i >= 0; i-- {
				idx[i]++
				off += strides[i]
				if idx[i] < outShape[i] {
					break
				}
				off -= idx[i] * strides[i]
				idx[i] = 0
			}
		}
	}
	grain := max(1, (32<<10)/max(inner, 1))
	if threads <= 1 || rows < 2*grain {
		body(0, rows)
		return nil
	}
	ParallelFor(threads, rows, grain, body)
	return nil
}
