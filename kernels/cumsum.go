package kernels

// cumCols is how many columns of the inner dim one CumSum work unit
// accumulates at a time (its accumulators live on the stack).
const cumCols = 256

// CumSum writes the running sums of src along the middle axis of
// [outer, n, inner] into dst (same layout): dst[o, k, j] is the sum of
// src[o, i, j] over i ≤ k, or i < k when exclusive; with reverse the sums
// run from the end (i ≥ k, or i > k). A is the accumulator type: float64
// for floats, int64 for integers (which wrap to T's width as they are
// stored). The order of the additions does not depend on threads.
func CumSum[T Numeric, A float64 | int64](dst, src []T, outer, n, inner int, exclusive, reverse bool, threads int) {
	if outer == 0 || n == 0 || inner == 0 {
		return
	}
	nb := (inner + cumCols - 1) / cumCols
	ParallelFor(threads, outer*nb, max(1, CopyGrain/(n*min(inner, cumCols))), func(lo, hi int) {
		var acc [cumCols]A
		for u := lo; u < hi; u++ {
			o, c0 := u/nb, (u%nb)*cumCols
			w := min(cumCols, inner-c0)
			a := acc[:w]
			clear(a)
			for t := range n {
				k := t
				if reverse {
					k = n - 1 - t
				}
				off := (o*n+k)*inner + c0
				s, d := src[off:off+w], dst[off:off+w]
				if exclusive {
					for j, x := range s {
						d[j] = T(a[j])
						a[j] += A(x)
					}
				} else {
					for j, x := range s {
						a[j] += A(x)
						d[j] = T(a[j])
					}
				}
			}
		}
	})
}
