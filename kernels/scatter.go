package kernels

// Scatters along an axis and by N-D index rows, the N-D gather, and the
// masks of their last writers (for the gradients of plain scatters).
//
// The scatters visit the updates that land on one element in increasing
// order of their position (along the axis, or by index row), whatever the
// thread count: work is split over columns (see shpAddBlocks), never over
// the updates of one column. With repeated indices a plain scatter
// therefore keeps the last update, and a combining one applies them in
// order.

// ScatterOp is how a scatter combines an update u with the element x it
// lands on.
type ScatterOp int

const (
	ScatterNone ScatterOp = iota // u
	ScatterAdd                   // x + u
	ScatterMul                   // x · u
	ScatterMax                   // max(x, u), NaN if either is NaN
	ScatterMin                   // min(x, u), NaN if either is NaN
)

// Combine returns op's function; nil for ScatterNone, which assigns.
func Combine[T Numeric](op ScatterOp) func(x, u T) T {
	switch op {
	case ScatterAdd:
		return func(x, u T) T { return x + u }
	case ScatterMul:
		return func(x, u T) T { return x * u }
	case ScatterMax:
		return func(x, u T) T {
			if u > x || u != u {
				return u
			}
			return x
		}
	case ScatterMin:
		return func(x, u T) T {
			if u < x || u != u {
				return u
			}
			return x
		}
	}
	return nil
}

// ScatterAlongAxis writes src into dst along an axis: with dst viewed as
// [outer, axis, inner] (holding the data already) and src and idx as
// [outer, k, inner], it sets dst[o, i, j] = f(dst[o, i, j], src[o, kk, j])
// with i = idx[o, kk, j], for kk in increasing order; f nil assigns.
// Negative indices count from the end of the axis; the caller has checked
// that every index is in [-axis, axis).
func ScatterAlongAxis[T any, I IndexInt](dst, src []T, idx []I, outer, axis, k, inner int, f func(x, u T) T, threads int) {
	shpAddBlocks(outer, k, inner, threads, func(o, j0, j1 int) {
		base := o * axis * inner
		for kk := range k {
			row := (o*k + kk) * inner
			for j := j0; j < j1; j++ {
				i := int(idx[row+j])
				if i < 0 {
					i += axis
				}
				p := base + i*inner + j
				if f == nil {
					dst[p] = src[row+j]
				} else {
					dst[p] = f(dst[p], src[row+j])
				}
			}
		}
	})
}

// LastAlongAxis is the gradient of a plain ScatterAlongAxis with respect
// to its updates: dst and idx are [outer, k, inner], dy is [outer, axis,
// inner], and dst[o, kk, j] = dy[o, i, j] (i = idx[o, kk, j]) where update
// kk is the last one written at i, else 0. owner, [outer, axis, inner],
// is scratch.
func LastAlongAxis[T float32 | float64, I IndexInt](dst, dy []T, idx []I, owner []int64, outer, axis, k, inner, threads int) {
	shpAddBlocks(outer, k, inner, threads, func(o, j0, j1 int) {
		base := o * axis * inner
		target := func(kk, j int) int {
			i := int(idx[(o*k+kk)*inner+j])
			if i < 0 {
				i += axis
			}
			return base + i*inner + j
		}
		for kk := range k {
			for j := j0; j < j1; j++ {
				owner[target(kk, j)] = int64(kk)
			}
		}
		for kk := range k {
			row := (o*k + kk) * inner
			for j := j0; j < j1; j++ {
				p := target(kk, j)
				if owner[p] == int64(kk) {
					dst[row+j] = dy[p]
				} else {
					dst[row+j] = 0
				}
			}
		}
	})
}

// OutOfRangeND returns the first position of idx, rows of len(dims)
// indices, whose index t is outside [-dims[t], dims[t]), or -1.
func OutOfRangeND[I IndexInt](idx []I, dims []int) int {
	m := len(dims)
	for p, v := range idx {
		d := int64(dims[p%m])
		if int64(v) < -d || int64(v) >= d {
			return p
		}
	}
	return -1
}

// ndCell returns the position among the cells of dims (row-major) that
// the index row addresses; negative indices count from the end.
func ndCell[I IndexInt](row []I, dims []int) int {
	c := 0
	for t, v := range row {
		i := int(v)
		if i < 0 {
			i += dims[t]
		}
		c = c*dims[t] + i
	}
	return c
}

// GatherND gathers slices by index rows: src is [batch, cells, slice] with
// cells the product of dims, idx is [batch, rows, len(dims)] and dst is
// [batch, rows, slice]; dst[b, r, :] = src[b, c, :] where c is the cell of
// dims that idx[b, r, :] addresses. Negative indices count from the end
// of their dim; the caller has checked them (see OutOfRangeND).
func GatherND[T any, I IndexInt](dst, src []T, idx []I, batch, rows int, dims []int, slice, threads int) {
	n := batch * rows
	if n == 0 || slice == 0 {
		return
	}
	m, cells := len(dims), 1
	for _, d := range dims {
		cells *= d
	}
	ParallelFor(threads, n, max(1, CopyGrain/slice), func(lo, hi int) {
		for u := lo; u < hi; u++ {
			c := ndCell(idx[u*m:(u+1)*m], dims)
			s := (u/rows*cells + c) * slice
			copy(dst[u*slice:(u+1)*slice], src[s:s+slice])
		}
	})
}

// ScatterND is the scatter of GatherND's layout: dst is [batch, cells,
// slice] (holding the data already), src is [batch, rows, slice], and
// dst[b, c, :] = f(dst[b, c, :], src[b, r, :]) elementwise for the cell c
// of each index row idx[b, r, :], rows in increasing order; f nil
// assigns.
func ScatterND[T any, I IndexInt](dst, src []T, idx []I, batch, rows int, dims []int, slice int, f func(x, u T) T, threads int) {
	m, cells := len(dims), 1
	for _, d := range dims {
		cells *= d
	}
	shpAddBlocks(batch, rows, slice, threads, func(b, j0, j1 int) {
		for r := range rows {
			u := b*rows + r
			c := ndCell(idx[u*m:(u+1)*m], dims)
			d := dst[(b*cells+c)*slice+j0 : (b*cells+c)*slice+j1]
			s := src[u*slice+j0 : u*slice+j1]
			if f == nil {
				copy(d, s)
				continue
			}
			for t, v := range s {
				d[t] = f(d[t], v)
			}
		}
	})
}

// LastND is the gradient of a plain ScatterND with respect to its updates:
// dst is [batch, rows, slice], dy is [batch, cells, slice], and
// dst[b, r, :] = dy[b, c, :] where row r is the last one written at its
// cell c, else 0. owner, [batch, cells], is scratch.
func LastND[T float32 | float64, I IndexInt](dst, dy []T, idx []I, owner []int64, batch, rows int, dims []int, slice, threads int) {
	m, cells := len(dims), 1
	for _, d := range dims {
		cells *= d
	}
	if batch*rows == 0 || slice == 0 {
		return
	}
	ParallelFor(threads, batch, 1, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			for r := range rows {
				u := b*rows + r
				owner[b*cells+ndCell(idx[u*m:(u+1)*m], dims)] = int64(r)
			}
			for r := range rows {
				u := b*rows + r
				c := ndCell(idx[u*m:(u+1)*m], dims)
				d := dst[u*slice : (u+1)*slice]
				if owner[b*cells+c] == int64(r) {
					copy(d, dy[(b*cells+c)*slice:(b*cells+c+1)*slice])
				} else {
					clear(d)
				}
			}
		}
	})
}
