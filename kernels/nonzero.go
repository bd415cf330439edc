package kernels

// nzGrain is the number of elements below which Nonzero's passes run on
// the caller's goroutine.
const nzGrain = 1 << 15

// NonzeroParts is how many contiguous parts Nonzero splits n elements
// into for threads goroutines: the length of its counts slice.
func NonzeroParts(n, threads int) int {
	return max(1, min(threads, n/nzGrain))
}

// NonzeroCount counts the elements of x that differ from zero (NaN does,
// −0 does not) in each of the len(counts) parts of x (see NonzeroParts)
// and returns the total.
func NonzeroCount[T comparable](x []T, counts []int, threads int) int {
	var zero T
	parts := len(counts)
	ParallelFor(threads, parts, 1, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			a, b := splitRange(len(x), parts, p)
			c := 0
			for _, v := range x[a:b] {
				if v != zero {
					c++
				}
			}
			counts[p] = c
		}
	})
	total := 0
	for _, c := range counts {
		total += c
	}
	return total
}

// NonzeroIndices writes the coordinates of x's nonzero elements, which
// NonzeroCount counted into counts (total of them): x has shape shape,
// and dst is [len(shape), total] with dst[d, t] the coordinate along dim d
// of the t-th nonzero element in row-major order.
func NonzeroIndices[T comparable](dst []int64, x []T, shape []int, counts []int, total, threads int) {
	if total == 0 {
		return
	}
	var zero T
	parts, r := len(counts), len(shape)
	ParallelFor(threads, parts, 1, func(lo, hi int) {
		at := make([]int, r)
		for p := lo; p < hi; p++ {
			a, b := splitRange(len(x), parts, p)
			t := 0
			for q := range p {
				t += counts[q]
			}
			rest := a
			for d := r - 1; d >= 0; d-- {
				at[d] = rest % shape[d]
				rest /= shape[d]
			}
			for _, v := range x[a:b] {
				if v != zero {
					for d, i := range at {
						dst[d*total+t] = int64(i)
					}
					t++
				}
				for d := r - 1; d >= 0; d-- {
					if at[d]++; at[d] < shape[d] {
						break
					}
					at[d] = 0
				}
			}
		}
	})
}
