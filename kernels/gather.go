package kernels

// IndexInt is the element type of index tensors.
type IndexInt interface{ ~int32 | ~int64 }

// OutOfRange returns the position of the first element of idx outside
// [lo, hi), or -1 if there is none.
func OutOfRange[I IndexInt](idx []I, lo, hi int64) int {
	for i, v := range idx {
		if int64(v) < lo || int64(v) >= hi {
			return i
		}
	}
	return -1
}

// Gather is numpy's take along an axis: src is [outer, axis, inner], dst is
// [outer, len(idx), inner], and dst[o, k, j] = src[o, idx[k], j]. Negative
// indices count from the end of the axis; the caller has checked that
// every index is in [-axis, axis) (see OutOfRange).
func Gather[T any, I IndexInt](dst, src []T, idx []I, outer, axis, inner, threads int) {
	k := len(idx)
	rows := outer * k
	if rows == 0 || inner == 0 {
		return
	}
	grain := max(1, CopyGrain/inner)
	if perfSerial(threads, rows, grain) {
		gatherRows(dst, src, idx, axis, inner, 0, rows)
		return
	}
	ParallelFor(threads, rows, grain, func(lo, hi int) { gatherRows(dst, src, idx, axis, inner, lo, hi) })
}

// gatherRows is Gather on the rows [lo, hi) of dst.
func gatherRows[T any, I IndexInt](dst, src []T, idx []I, axis, inner, lo, hi int) {
	k := len(idx)
	for row := lo; row < hi; row++ {
		o, i := row/k, int(idx[row%k])
		if i < 0 {
			i += axis
		}
		s := (o*axis + i) * inner
		if inner == 1 {
			dst[row] = src[s]
		} else {
			copy(dst[row*inner:(row+1)*inner], src[s:s+inner])
		}
	}
}

// OneHot writes, for each index v = idx[i], the row dst[i*depth:(i+1)*depth]
// with one at position v and zero elsewhere; the caller has checked that
// every index is in [0, depth).
func OneHot[T any, I IndexInt](dst []T, idx []I, depth int, one T, threads int) {
	if depth == 0 {
		return
	}
	var zero T
	ParallelFor(threads, len(idx), max(1, CopyGrain/depth), func(lo, hi int) {
		row := dst[lo*depth : hi*depth]
		for j := range row {
			row[j] = zero
		}
		for i := lo; i < hi; i++ {
			dst[i*depth+int(idx[i])] = one
		}
	})
}
