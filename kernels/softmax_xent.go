package kernels

import "math"

// SoftmaxCrossEntropy computes, for logits viewed as outer×n×inner (the
// class axis in the middle) and labels viewed as outer×inner, the softmax
// probabilities along the class axis into probs and the per-sample loss
// −log softmax(logits)[label] = logsumexp − logit[label] into loss
// (outer×inner). A sample whose label equals ignore gets loss 0. It
// returns the flat position in labels of the first label that is neither
// ignore nor in [0, n), or −1; that sample's loss is left unwritten.
// Results do not depend on the thread count.
func SoftmaxCrossEntropy[T nnFloat, L int32 | int64](logits, probs, loss []T, labels []L, outer, n, inner int, ignore int64, threads int) (bad int) {
	lines := outer * inner
	parts := nnParts(threads, lines, 8*n)
	firstBad := make([]int, parts)
	for i := range firstBad {
		firstBad[i] = -1
	}
	nnForParts(parts, lines, func(part, lo, hi int) {
		for l := lo; l < hi; l++ {
			base := (l/inner)*n*inner + l%inner
			lab := int64(labels[l])
			var m, s float64
			if n > 0 {
				m, s = softmaxMaxSum(logits, base, n, inner, nil)
				inv := 1 / s
				for j := range n {
					probs[base+j*inner] = T(math.Exp(float64(logits[base+j*inner])-m) * inv)
				}
			}
			switch {
			case lab == ignore:
				loss[l] = 0
			case lab < 0 || lab >= int64(n):
				if firstBad[part] < 0 {
					firstBad[part] = l
				}
			default:
				loss[l] = T(m + math.Log(s) - float64(logits[base+int(lab)*inner]))
			}
		}
	})
	for _, b := range firstBad {
		if b >= 0 {
			return b
		}
	}
	return -1
}
