package kernels

import "math"

// BCEWithLogits writes the binary cross-entropy of sigmoid(x) against
// targets t, elementwise, in the stable form
// max(x, 0) − x·t + log(1 + exp(−|x|)), computed in float64.
func BCEWithLogits[T nnFloat](x, t, loss []T, threads int) {
	nnFor(threads, len(x), 16, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			v, tv := float64(x[i]), float64(t[i])
			loss[i] = T(max(v, 0) - v*tv + math.Log1p(math.Exp(-math.Abs(v))))
		}
	})
}
