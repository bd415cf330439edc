package kernels

import "math"

// SoftmaxGrad writes into dx the gradient of Softmax along the middle axis
// of outer×n×inner, given its output y and the gradient dy of y:
// dx = y·(dy − Σ dy·y), the sum along the axis taken in float64. dx may be
// dy. Results do not depend on the thread count.
func SoftmaxGrad[T nnFloat](y, dy, dx []T, outer, n, inner int, threads int) {
	softmaxGradLines(y, dy, dx, outer, n, inner, false, threads)
}

// LogSoftmaxGrad writes into dx the gradient of LogSoftmax given its
// output y and dy: dx = dy − exp(y)·Σ dy along the axis. dx may be dy.
func LogSoftmaxGrad[T nnFloat](y, dy, dx []T, outer, n, inner int, threads int) {
	softmaxGradLines(y, dy, dx, outer, n, inner, true, threads)
}

func softmaxGradLines[T nnFloat](y, dy, dx []T, outer, n, inner int, log bool, threads int) {
	if n == 0 {
		return
	}
	nnFor(threads, outer*inner, 6*n, func(lo, hi int) {
		for l := lo; l < hi; l++ {
			base := (l/inner)*n*inner + l%inner
			var s float64
			for j := range n {
				k := base + j*inner
				if log {
					s += float64(dy[k])
				} else {
					s += float64(dy[k]) * float64(y[k])
				}
			}
			for j := range n {
				k := base + j*inner
				if log {
					dx[k] = T(float64(dy[k]) - math.Exp(float64(y[k]))*s)
				} else {
					dx[k] = T(float64(y[k]) * (float64(dy[k]) - s))
				}
			}
		}
	})
}

// SoftmaxCrossEntropyGrad writes into dlogits (outer×n×inner) the gradient
// of SoftmaxCrossEntropy's loss with respect to the logits, given the
// softmax probs it returned and the gradient dloss (outer×inner) of the
// loss: (probs − onehot(label))·dloss per sample, 0 for samples whose
// label is ignore. It returns the flat position in labels of the first
// label that is neither ignore nor in [0, n), or −1. Results do not depend
// on the thread count.
func SoftmaxCrossEntropyGrad[T nnFloat, L int32 | int64](probs, dloss []T, labels []L, dlogits []T, outer, n, inner int, ignore int64, threads int) (bad int) {
	lines := outer * inner
	parts := nnParts(threads, lines, 2*n)
	firstBad := make([]int, parts)
	for i := range firstBad {
		firstBad[i] = -1
	}
	nnForParts(parts, lines, func(part, lo, hi int) {
		for l := lo; l < hi; l++ {
			base := (l/inner)*n*inner + l%inner
			lab := int64(labels[l])
			if lab == ignore {
				for j := range n {
					dlogits[base+j*inner] = 0
				}
				continue
			}
			if lab < 0 || lab >= int64(n) {
				if firstBad[part] < 0 {
					firstBad[part] = l
				}
				continue
			}
			g := dloss[l]
			for j := range n {
				dlogits[base+j*inner] = probs[base+j*inner] * g
			}
			k := base + int(lab)*inner
			dlogits[k] = (probs[k] - 1) * g
		}
	})
	for _, b := range firstBad {
		if b >= 0 {
			return b
		}
	}
	return -1
}
