package kernels

// DropoutKey folds words into one 64-bit stream key for Dropout (e.g. a
// seed, a run number and an op's position), mixing each with SplitMix64's
// finaliser so that nearby inputs give unrelated streams.
func DropoutKey(words ...uint64) uint64 {
	h := uint64(0x6a09e667f3bcc908)
	for _, w := range words {
		h = nnMix64(h ^ nnMix64(w+0x9e3779b97f4a7c15))
	}
	return h
}

// nnMix64 is the SplitMix64 output function.
func nnMix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Dropout zeroes each element of x with probability p and scales the others
// by 1/(1−p): mask[i] is 0 or 1/(1−p) and out[i] = x[i]·mask[i]. With p = 1
// every mask element is 0. Element i's draw is a pure function of (key, i)
// — a counter-based generator: the uniform u_i ∈ [0,1) has the 53 high bits
// of SplitMix64(key + (i+1)·φ), and i is kept iff u_i ≥ p — so the mask
// does not depend on the thread count.
func Dropout[T nnFloat](x, out, mask []T, p float64, key uint64, threads int) {
	scale := T(0)
	if p < 1 {
		scale = T(1 / (1 - p))
	}
	nnFor(threads, len(x), 8, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			u := float64(nnMix64(key+uint64(i+1)*0x9e3779b97f4a7c15)>>11) * (1.0 / (1 << 53))
			m := T(0)
			if u >= p {
				m = scale
			}
			mask[i], out[i] = m, x[i]*m
		}
	})
}
