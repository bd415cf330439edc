package kernels

import "slices"

// TopKElem is the element types TopK sorts.
type TopKElem interface {
	~float32 | ~float64 | ~int32 | ~int64
}

// shpTopkGrain is the number of source elements below which TopK runs on the
// caller's goroutine.
const shpTopkGrain = 1 << 14

// TopKScratch is the length of the scratch slice TopK needs for the given
// problem and thread count: per goroutine, k indices when k is small
// against n (a bounded heap), else n (a full sort).
func TopKScratch(threads, outer, n, inner, k int) int {
	return shpTopkParts(threads, outer, n, inner) * shpTopkPer(n, k)
}

// shpTopkPer is the scratch one goroutine needs; a heap of k when
// k <= n/8.
func shpTopkPer(n, k int) int {
	if k*8 <= n {
		return k
	}
	return n
}

func shpTopkParts(threads, outer, n, inner int) int {
	ns := outer * inner
	if ns == 0 || outer*n*inner < shpTopkGrain {
		return 1
	}
	return max(1, min(threads, ns, outer*n*inner/shpTopkGrain))
}

// TopK selects, along the middle axis of src viewed as [outer, n, inner],
// the k largest elements of each of the outer*inner slices, largest first,
// or with largest false the k smallest, smallest first; vals and idxs are
// [outer, k, inner]. The order is total and stable: NaN is larger than
// every number (first among the largest, last among the smallest), and
// equal values (and NaNs) keep the lower index first, so the result does
// not depend on the thread count. scratch holds at least
// TopKScratch(threads, outer, n, inner, k) elements.
func TopK[T TopKElem](vals []T, idxs []int64, src []T, outer, n, inner, k int, largest bool, scratch []int64, threads int) {
	if k == 0 || outer*inner == 0 {
		return
	}
	total := outer * inner
	parts := shpTopkParts(threads, outer, n, inner)
	per := shpTopkPer(n, k)
	ParallelFor(parts, parts, 1, func(plo, phi int) {
		for p := plo; p < phi; p++ {
			sc := scratch[p*per : (p+1)*per]
			lo, hi := splitRange(total, parts, p)
			for s := lo; s < hi; s++ {
				o, j := s/inner, s%inner
				shpTopkSlice(vals, idxs, src, sc, o*n*inner+j, o*k*inner+j, n, inner, k, largest)
			}
		}
	})
}

// shpTopkSlice handles one slice: its elements are src[in + i*stride] and its
// results go to vals/idxs[out + t*stride].
func shpTopkSlice[T TopKElem](vals []T, idxs []int64, src []T, sc []int64, in, out, n, stride, k int, largest bool) {
	// before reports whether element a comes before element b in the
	// result order.
	before := func(a, b int64) bool {
		x, y := src[in+int(a)*stride], src[in+int(b)*stride]
		if !largest {
			x, y = y, x // the other order; ties still keep the lower index first
		}
		if x > y || x != x && y == y {
			return true
		}
		if y > x || y != y && x == x {
			return false
		}
		return a < b
	}
	cmp := func(a, b int64) int {
		if a == b {
			return 0
		}
		if before(a, b) {
			return -1
		}
		return 1
	}
	var top []int64
	if k*8 <= n { // as in shpTopkPer
		// Keep the k best in a heap whose root is the worst of them.
		top = sc[:k]
		for i := range top {
			top[i] = int64(i)
		}
		for i := k/2 - 1; i >= 0; i-- {
			shpTopkSiftDown(top, i, before)
		}
		for i := k; i < n; i++ {
			if before(int64(i), top[0]) {
				top[0] = int64(i)
				shpTopkSiftDown(top, 0, before)
			}
		}
		slices.SortFunc(top, cmp)
	} else {
		all := sc[:n]
		for i := range all {
			all[i] = int64(i)
		}
		slices.SortFunc(all, cmp)
		top = all[:k]
	}
	for t, i := range top {
		vals[out+t*stride] = src[in+int(i)*stride]
		idxs[out+t*stride] = i
	}
}

// shpTopkSiftDown restores the heap property below i in a heap whose parent
// comes after its children in the result order (the root is the worst).
func shpTopkSiftDown(h []int64, i int, before func(a, b int64) bool) {
	for {
		w := i
		if l := 2*i + 1; l < len(h) && before(h[w], h[l]) {
			w = l
		}
		if r := 2*i + 2; r < len(h) && before(h[w], h[r]) {
			w = r
		}
		if w == i {
			return
		}
		h[i], h[w] = h[w], h[i]
		i = w
	}
}
