package kernels

// Adjoints of the gathers: scatter-adds that sum duplicate indices, and
// take-along-axis, the element-wise gather whose adjoint is
// ScatterAddAlongAxis.
//
// The scatter-adds are deterministic whatever the thread count: the work is
// split over blocks of [outer, inner] columns, and each goroutine adds the
// contributions to its columns in increasing k, so every element of dst
// receives its terms in the same order on any number of threads. (With a
// single outer row and a narrow inner dim, e.g. an embedding of width 8,
// there is little to split and the work stays on one goroutine.)

// shpAddBlock is the width of the column blocks the scatter-adds split the
// inner dim into.
const shpAddBlock = 1024

// shpAddBlocks calls fn(o, j0, j1) for every outer index o and column
// block [j0, j1) of inner, over threads goroutines; each call handles k
// rows of its block.
func shpAddBlocks(outer, k, inner, threads int, fn func(o, j0, j1 int)) {
	if outer == 0 || k == 0 || inner == 0 {
		return
	}
	bw := min(inner, shpAddBlock)
	if outer < threads {
		// Few outer rows: narrower blocks, so that every goroutine gets
		// columns (at least a cache line's worth each).
		per := (threads + outer - 1) / outer
		bw = max(min(bw, (inner+per-1)/per), min(inner, 16))
	}
	nb := (inner + bw - 1) / bw
	ParallelFor(threads, outer*nb, max(1, CopyGrain/(k*bw)), func(lo, hi int) {
		for u := lo; u < hi; u++ {
			o, b := u/nb, u%nb
			fn(o, b*bw, min((b+1)*bw, inner))
		}
	})
}

// GatherAdd is the adjoint of Gather: with dst viewed as [outer, axis,
// inner] and src as [outer, len(idx), inner], it adds src[o, k, j] to
// dst[o, idx[k], j] for every o, k, j; an index that appears several times
// gets the sum of its rows. Negative indices count from the end of the
// axis; the caller has checked that every index is in [-axis, axis).
func GatherAdd[T float32 | float64, I IndexInt](dst, src []T, idx []I, outer, axis, inner, threads int) {
	k := len(idx)
	shpAddBlocks(outer, k, inner, threads, func(o, j0, j1 int) {
		for kk, v := range idx {
			i := int(v)
			if i < 0 {
				i += axis
			}
			d := dst[(o*axis+i)*inner+j0 : (o*axis+i)*inner+j1]
			s := src[(o*k+kk)*inner+j0 : (o*k+kk)*inner+j1]
			for t, x := range s {
				d[t] += x
			}
		}
	})
}

// ScatterAddAlongAxis is the adjoint of TakeAlongAxis: with dst viewed as
// [outer, axis, inner] and src and idx as [outer, k, inner], it adds
// src[o, kk, j] to dst[o, idx[o, kk, j], j]. Indices as in GatherAdd.
func ScatterAddAlongAxis[T float32 | float64, I IndexInt](dst, src []T, idx []I, outer, axis, k, inner, threads int) {
	shpAddBlocks(outer, k, inner, threads, func(o, j0, j1 int) {
		for kk := range k {
			row := (o*k + kk) * inner
			base := o * axis * inner
			for j := j0; j < j1; j++ {
				i := int(idx[row+j])
				if i < 0 {
					i += axis
				}
				dst[base+i*inner+j] += src[row+j]
			}
		}
	})
}

// TakeAlongAxis gathers element-wise along an axis: with src viewed as
// [outer, axis, inner] and dst and idx as [outer, k, inner], it sets
// dst[o, kk, j] = src[o, idx[o, kk, j], j]. Indices as in GatherAdd.
func TakeAlongAxis[T any, I IndexInt](dst, src []T, idx []I, outer, axis, k, inner, threads int) {
	rows := outer * k
	if rows == 0 || inner == 0 {
		return
	}
	ParallelFor(threads, rows, max(1, CopyGrain/inner), func(lo, hi int) {
		for row := lo; row < hi; row++ {
			base := row / k * axis * inner
			for j := range inner {
				i := int(idx[row*inner+j])
				if i < 0 {
					i += axis
				}
				dst[row*inner+j] = src[base+i*inner+j]
			}
		}
	})
}
