package kernels

// StridedScatter is the adjoint of StridedCopy: it reads src in row-major
// order over shape and writes element i to dst[off + Σ idx[k]*strides[k]],
// where idx is the multi-index of i; dst's other elements are left as they
// are. The addressed positions must be distinct (no zero strides) and in
// range; src holds exactly prod(shape) elements. Work above CopyGrain
// elements is split over threads goroutines; since no two elements meet,
// the result does not depend on the thread count.
func StridedScatter[T any](dst, src []T, shape []int, off int, strides []int, threads int) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	if n == 0 {
		return
	}
	// The goroutines read dims and st from the heap: the stack buffers
	// would move there with them.
	dims, st := shpSimplify(shape, strides, new([shpRank]int), new([shpRank]int))
	r := len(dims)
	if r == 0 {
		dst[off] = src[0]
		return
	}
	l, s := dims[r-1], st[r-1]
	ParallelFor(threads, n/l, max(1, CopyGrain/l), func(lo, hi int) {
		var buf [shpRank]int
		o := shpNewOdometer(dims[:r-1], st[:r-1], off, lo, &buf)
		for row := lo; row < hi; row++ {
			from := src[row*l : (row+1)*l]
			if s == 1 {
				copy(dst[o.base:o.base+l], from)
			} else {
				p := o.base
				for _, v := range from {
					dst[p] = v
					p += s
				}
			}
			o.next()
		}
	})
}
