package kernels

// Data movement for shape ops: strided copies (transpose, expand, slice),
// and row-segment copies (concat, split). The routines are generic over the
// element type; callers move any dtype by its element size (uint8, uint32,
// uint64 words), since copying never looks at the values.

// CopyGrain is the number of elements a goroutine moves at least; copies
// smaller than that stay on the caller's goroutine.
const CopyGrain = 1 << 15

// shpTile is the side of the square tiles of the blocked 2-D
// transpose.
const shpTile = 32

// StridedCopy writes into dst, in row-major order over shape, the elements
// src[off + Σ idx[i]*strides[i]]. Strides may be zero (broadcast) or
// negative (reversal). dst holds exactly prod(shape) elements; the caller
// makes sure every addressed element of src is in range.
//
// Unit dims are dropped and dims that are contiguous in src are merged, so
// that a transpose or broadcast of any rank reduces to its simplest form.
// When the innermost src-contiguous dim is the second-to-last after that
// (a transpose of the last two axes, possibly batched), a blocked 2-D
// transpose is used; otherwise rows are copied with copy() when the last
// dim is contiguous, filled when it is broadcast, or gathered by stride.
// Work above CopyGrain elements is split over threads goroutines.
func StridedCopy[T any](dst, src []T, shape []int, off int, strides []int, threads int) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	if n == 0 {
		return
	}
	var dbuf, sbuf [shpRank]int
	dims, st := shpSimplify(shape, strides, &dbuf, &sbuf)
	r := len(dims)
	switch {
	case r == 0:
		dst[0] = src[off]
	case r >= 2 && st[r-2] == 1 && st[r-1] != 0 && st[r-1] != 1 && st[r-1] != -1:
		shpBlockedTranspose(dst, src, dims, off, st, threads)
	default:
		shpStridedRows(dst, src, dims, off, st, threads)
	}
}

// shpRank is the most dims the shape kernels keep in their callers' stack
// buffers; more go to the heap.
const shpRank = 8

// shpSimplify drops unit dims and merges dim i into dim i+1 when
// strides[i] == strides[i+1]*shape[i+1], into dbuf and sbuf as far as they
// hold.
func shpSimplify(shape, strides []int, dbuf, sbuf *[shpRank]int) ([]int, []int) {
	dims, st := dbuf[:0], sbuf[:0]
	for i, d := range shape {
		if d == 1 {
			continue
		}
		if k := len(dims) - 1; k >= 0 && st[k] == strides[i]*d {
			dims[k] *= d
			st[k] = strides[i]
			continue
		}
		dims = append(dims, d)
		st = append(st, strides[i])
	}
	return dims, st
}

// shpOdometer walks the multi-indices of dims in row-major order, keeping the
// matching src offset.
type shpOdometer struct {
	dims, st, idx []int
	base          int
}

// shpNewOdometer starts at flat position pos of dims, its index in buf
// (its caller's, on the stack) up to shpRank dims.
func shpNewOdometer(dims, st []int, off, pos int, buf *[shpRank]int) shpOdometer {
	o := shpOdometer{dims: dims, st: st, base: off}
	if len(dims) <= shpRank {
		o.idx = buf[:len(dims)]
	} else {
		o.idx = make([]int, len(dims))
	}
	for k := len(dims) - 1; k >= 0; k-- {
		o.idx[k] = pos % dims[k]
		pos /= dims[k]
		o.base += o.idx[k] * st[k]
	}
	return o
}

// next advances to the following multi-index (wrapping to all zeros after
// the last one).
func (o *shpOdometer) next() {
	for k := len(o.dims) - 1; k >= 0; k-- {
		o.idx[k]++
		o.base += o.st[k]
		if o.idx[k] < o.dims[k] {
			return
		}
		o.base -= o.idx[k] * o.st[k]
		o.idx[k] = 0
	}
}

// shpStridedRows copies row by row: the last dim is a row of dst.
func shpStridedRows[T any](dst, src []T, dims []int, off int, st []int, threads int) {
	l := dims[len(dims)-1]
	rows := len(dst) / l
	grain := max(1, CopyGrain/l)
	if perfSerial(threads, rows, grain) {
		shpStridedRange(dst, src, dims, off, st, 0, rows)
		return
	}
	shpCopyRun(dst, src, dims, off, st, false, threads, rows, grain)
}

// shpStridedRange is shpStridedRows on the rows [lo, hi).
func shpStridedRange[T any](dst, src []T, dims []int, off int, st []int, lo, hi int) {
	r := len(dims)
	l, s := dims[r-1], st[r-1]
	var buf [shpRank]int
	o := shpNewOdometer(dims[:r-1], st[:r-1], off, lo, &buf)
	for row := lo; row < hi; row++ {
		d := dst[row*l : (row+1)*l]
		switch s {
		case 1:
			copy(d, src[o.base:o.base+l])
		case 0:
			v := src[o.base]
			for j := range d {
				d[j] = v
			}
		default:
			p := o.base
			for j := range d {
				d[j] = src[p]
				p += s
			}
		}
		o.next()
	}
}

// shpBlockedTranspose handles dims [outer..., m, n] whose src strides end in
// [1, ld]: each of the outer matrices is a transposed m×n view, copied in
// square tiles so that both sides stay in cache.
func shpBlockedTranspose[T any](dst, src []T, dims []int, off int, st []int, threads int) {
	r := len(dims)
	m, n := dims[r-2], dims[r-1]
	bands := (m + shpTile - 1) / shpTile // row bands per matrix
	units := len(dst) / (m * n) * bands
	grain := max(1, CopyGrain/(shpTile*n))
	if perfSerial(threads, units, grain) {
		shpTransposeRange(dst, src, dims, off, st, 0, units)
		return
	}
	shpCopyRun(dst, src, dims, off, st, true, threads, units, grain)
}

// shpTransposeRange is shpBlockedTranspose on the units (a band of rows
// of one matrix) [lo, hi).
func shpTransposeRange[T any](dst, src []T, dims []int, off int, st []int, lo, hi int) {
	r := len(dims)
	m, n := dims[r-2], dims[r-1]
	ld := st[r-1]
	bands := (m + shpTile - 1) / shpTile
	var buf [shpRank]int
	o := shpNewOdometer(dims[:r-2], st[:r-2], off, lo/bands, &buf)
	mat := lo / bands
	for u := lo; u < hi; u++ {
		if u/bands != mat {
			mat = u / bands
			o.next()
		}
		i0 := (u % bands) * shpTile
		i1 := min(i0+shpTile, m)
		out := dst[mat*m*n : (mat+1)*m*n]
		for j0 := 0; j0 < n; j0 += shpTile {
			j1 := min(j0+shpTile, n)
			i := i0
			for ; i+8 <= i1; i += 8 {
				shpTransposeOct(out[i*n+j0:], src, o.base+i+j0*ld, n, ld, j1-j0)
			}
			for ; i < i1; i++ {
				row := out[i*n+j0 : i*n+j1]
				p := o.base + i + j0*ld
				for j := range row {
					row[j] = src[p]
					p += ld
				}
			}
		}
	}
}

// ConcatRows concatenates along a row: dst and each srcs[k] are outer rows,
// srcs[k] of widths[k] elements each and dst of Σ widths elements; row r of
// dst is row r of srcs[0], then of srcs[1], and so on.
func ConcatRows[T any](dst []T, srcs [][]T, outer int, widths []int, threads int) {
	w := shpTotal(widths)
	if w == 0 || outer == 0 {
		return
	}
	if perfSerial(threads, outer*w, CopyGrain) {
		concatRange(dst, srcs, widths, w, 0, outer*w)
		return
	}
	shpRowsRun(dst, srcs, widths, w, outer, false, threads)
}

func concatRange[T any](dst []T, srcs [][]T, widths []int, w, lo, hi int) {
	shpSegments(widths, w, lo, hi, func(k, row, col, pos, n int) {
		copy(dst[pos:pos+n], srcs[k][row*widths[k]+col:])
	})
}

// SplitRows is the inverse of ConcatRows: it cuts each row of src into
// pieces of widths[k] elements, appended to dsts[k].
func SplitRows[T any](dsts [][]T, src []T, outer int, widths []int, threads int) {
	w := shpTotal(widths)
	if w == 0 || outer == 0 {
		return
	}
	if perfSerial(threads, outer*w, CopyGrain) {
		splitRangeRows(dsts, src, widths, w, 0, outer*w)
		return
	}
	shpRowsRun(src, dsts, widths, w, outer, true, threads)
}

func splitRangeRows[T any](dsts [][]T, src []T, widths []int, w, lo, hi int) {
	shpSegments(widths, w, lo, hi, func(k, row, col, pos, n int) {
		copy(dsts[k][row*widths[k]+col:], src[pos:pos+n])
	})
}

func shpTotal(widths []int) int {
	w := 0
	for _, x := range widths {
		w += x
	}
	return w
}

// shpSegments walks the elements [lo, hi) of the concatenated layout
// [outer][w = Σ widths] in contiguous pieces, each inside one part k:
// elements [pos, pos+n) of the whole are elements [col, col+n) of row row
// of part k.
func shpSegments(widths []int, w, lo, hi int, fn func(k, row, col, pos, n int)) {
	row, c := lo/w, lo%w
	k := 0
	for c >= widths[k] {
		c -= widths[k]
		k++
	}
	for pos := lo; pos < hi; {
		n := min(widths[k]-c, hi-pos)
		if n > 0 {
			fn(k, row, c, pos, n)
		}
		pos += n
		c += n
		if c == widths[k] {
			c = 0
			k++
			if k == len(widths) {
				k = 0
				row++
			}
		}
	}
}

// shpTransposeOct writes w elements into each of eight rows of dst, n
// apart, from w groups of eight neighbours of src starting at p, ld apart:
// the eight reads of a group share a cache line, where one row at a time
// read one element of each (3× faster on the detector head's transposes).
func shpTransposeOct[T any](dst, src []T, p, n, ld, w int) {
	d0, d1, d2, d3 := dst[:w], dst[n:n+w], dst[2*n:2*n+w], dst[3*n:3*n+w]
	d4, d5, d6, d7 := dst[4*n:4*n+w], dst[5*n:5*n+w], dst[6*n:6*n+w], dst[7*n:7*n+w]
	for j := range d0 {
		q := src[p : p+8 : p+8]
		d0[j], d1[j], d2[j], d3[j] = q[0], q[1], q[2], q[3]
		d4[j], d5[j], d6[j], d7[j] = q[4], q[5], q[6], q[7]
		p += ld
	}
}
