package kernels

import "math"

// Optimizer updates, in place. Each routine walks its slices once,
// elementwise, so that an element is read before it is written at the same
// index: a gradient that aliases the parameter (same storage, same layout)
// still gives the right answer. Arithmetic is done in float64 whatever T
// is, in the order PyTorch 1.13's single-tensor optimizers use, and
// rounded to T once per stored value. Work above optGrain elements is split
// over threads goroutines in fixed contiguous ranges, so results do not
// depend on scheduling (each element's arithmetic is the same whatever the
// split).

// optGrain is the fewest elements worth a goroutine of their own.
const optGrain = 16 << 10

// optFloat is the element type of the optimizer kernels.
type optFloat interface{ ~float32 | ~float64 }

// SGDUpdate applies one step of plain SGD: d = g + wd·p; p = p − lr·d.
// p and g have the same length.
func SGDUpdate[T optFloat](p, g []T, lr, weightDecay float64, threads int) {
	g = g[:len(p)]
	perfFor(threads, len(p), optGrain, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			pi := float64(p[i])
			d := float64(g[i])
			if weightDecay != 0 {
				d += weightDecay * pi
			}
			p[i] = T(pi + -lr*d)
		}
	})
}

// MomentumUpdate applies one step of SGD with momentum μ (PyTorch's SGD,
// no dampening): d = g + wd·p; v = μ·v + d; d = d + μ·v if nesterov,
// else v; p = p − lr·d. With v starting at zero the first step stores
// v = d exactly, as PyTorch's clone does.
func MomentumUpdate[T optFloat](p, g, v []T, lr, momentum, weightDecay float64, nesterov bool, threads int) {
	g, v = g[:len(p)], v[:len(p)]
	perfFor(threads, len(p), optGrain, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			pi := float64(p[i])
			d := float64(g[i])
			if weightDecay != 0 {
				d += weightDecay * pi
			}
			vi := T(float64(v[i])*momentum + d)
			v[i] = vi
			if nesterov {
				d += momentum * float64(vi)
			} else {
				d = float64(vi)
			}
			p[i] = T(pi + -lr*d)
		}
	})
}

// AdamHyper holds the scalars of one Adam step.
type AdamHyper struct {
	LR, Beta1, Beta2, Epsilon, WeightDecay float64
	// Decoupled selects AdamW: p = p·(1 − lr·wd) before the moments,
	// instead of adding wd·p to the gradient.
	Decoupled bool
	// Step is the 1-based number of this step, for bias correction.
	Step float64
}

// AdamUpdate applies one step of Adam (or AdamW) to p with gradient g and
// moments m and v, as PyTorch 1.13 does:
//
//	g = g + wd·p               (Adam, wd ≠ 0)      p = p·(1 − lr·wd)   (AdamW)
//	m = β1·m + (1−β1)·g
//	v = β2·v + (1−β2)·g·g
//	p = p − (lr/(1−β1^t))·m / (√v/√(1−β2^t) + ε)
func AdamUpdate[T optFloat](p, g, m, v []T, h AdamHyper, threads int) {
	g, m, v = g[:len(p)], m[:len(p)], v[:len(p)]
	bc1 := 1 - math.Pow(h.Beta1, h.Step)
	bc2 := 1 - math.Pow(h.Beta2, h.Step)
	decay := 1.0
	if h.Decoupled {
		decay = 1 - h.LR*h.WeightDecay
	}
	c := &[8]float64{h.Beta1, 1 - h.Beta1, h.Beta2, 1 - h.Beta2, math.Sqrt(bc2), h.Epsilon, -(h.LR / bc1), decay}
	coupled := !h.Decoupled && h.WeightDecay != 0
	perfFor(threads, len(p), optGrain, func(lo, hi int) {
		p, g, m, v := p[lo:hi], g[lo:hi], m[lo:hi], v[lo:hi]
		done := 0
		if pf, ok := any(p).([]float32); ok && !coupled {
			done = adamF32Vec(pf, any(g).([]float32), any(m).([]float32), any(v).([]float32), c)
		}
		adamRef(p[done:], g[done:], m[done:], v[done:], c, coupled, h.WeightDecay)
	})
}

// adamRef is the Adam loop of AdamUpdate with c as adamF32AVX512 takes it
// (β1, 1−β1, β2, 1−β2, √(1−β2^t), ε, −lr/(1−β1^t), decoupled decay). The
// explicit conversions keep the compiler from fusing multiply-adds, so
// every operation rounds as in the vector loop.
func adamRef[T optFloat](p, g, m, v []T, c *[8]float64, coupled bool, wd float64) {
	b1, omb1, b2, omb2, bc2Sqrt, eps, negStep, decay := c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]
	g, m, v = g[:len(p)], m[:len(p)], v[:len(p)]
	for i := range p {
		pi := float64(p[i])
		gi := float64(g[i])
		if coupled {
			gi += float64(wd * pi)
		}
		pi *= decay
		mi := T(float64(float64(m[i])*b1) + float64(omb1*gi))
		vi := T(float64(float64(v[i])*b2) + float64(float64(omb2*gi)*gi))
		m[i], v[i] = mi, vi
		denom := float64(math.Sqrt(float64(vi))/bc2Sqrt) + eps
		p[i] = T(pi + float64(negStep*float64(mi))/denom)
	}
}

// CopyInto copies src into dst (same length) over threads goroutines.
func CopyInto[T any](dst, src []T, threads int) {
	src = src[:len(dst)]
	perfFor(threads, len(dst), CopyGrain, func(lo, hi int) {
		copy(dst[lo:hi], src[lo:hi])
	})
}

// Increment adds by to every element of x in place.
func Increment[T Numeric](x []T, by T, threads int) {
	perfFor(threads, len(x), optGrain, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			x[i] += by
		}
	})
}
