package kernels

import (
	"errors"
	"fmt"
)

// Reductions over a set of axes, and argmax over one axis.
//
// The input shape is first simplified: size-1 dims are dropped and
// neighbouring dims that are both reduced or both kept are merged, which
// leaves alternating groups. If the last group is reduced, each output
// element folds contiguous rows of the input (reduce-all is the single
// group case, split into fixed chunks). If the last group is kept, output
// rows are accumulated from input rows, a column block at a time.
//
// Float32 sums and products accumulate in float64, integer ones in int64
// (which wraps like the element type); contiguous sums add fixed-size
// blocks of four-way partial sums, so accuracy does not decay linearly
// with the length. Every output element is computed by one
// goroutine in a fixed order and reduce-all combines fixed chunks in order,
// so results do not depend on the thread count at all.

// ReduceOp names a reduction for Reduce.
type ReduceOp uint8

// The reductions. ReduceMean is defined on floats only; ReduceMax and
// ReduceMin propagate NaN; ReduceProd wraps on integers.
const (
	ReduceSum ReduceOp = iota
	ReduceMean
	ReduceMax
	ReduceMin
	ReduceProd
)

// ErrEmptyReduce is returned when a max, min or argmax has an output
// element but nothing to reduce into it.
var ErrEmptyReduce = errors.New("reduction over a size-0 dim has no identity")

const (
	redChunk = 64 << 10 // reduce-all chunk, in elements
	redBlock = 4 << 10  // contiguous sum block
	redCols  = 256      // column block of row accumulation
)

// redGroups is a simplified reduction shape. Its slices point into a
// redBuf its maker provides (or to the heap past redRank groups), so that
// a reduction run on the calling goroutine allocates nothing.
type redGroups struct {
	sizes   []int
	strides []int // input stride of each group
	reduced []bool
}

// redRank is the most groups (and dims of an odometer) a redBuf holds.
const redRank = 8

// redBuf holds the slices of a redGroups and of the kept and reduced
// groups an inner or outer reduction picks from it.
type redBuf struct {
	ints    [6 * redRank]int
	reduced [redRank]bool
}

// redSimplify drops size-1 dims of shape and merges neighbours of the same
// kind (dim d is reduced when bit d of mask is set).
func redSimplify(buf *redBuf, shape []int, mask redAxes) redGroups {
	g := redGroups{sizes: buf.ints[:0:redRank], strides: buf.ints[redRank : redRank : 2*redRank], reduced: buf.reduced[:0]}
	for d, n := range shape {
		if n == 1 {
			continue
		}
		if k := len(g.sizes) - 1; k >= 0 && g.reduced[k] == mask.has(d) {
			g.sizes[k] *= n
			continue
		}
		g.sizes = append(g.sizes, n)
		g.reduced = append(g.reduced, mask.has(d))
	}
	for range g.sizes {
		g.strides = append(g.strides, 0)
	}
	s := 1
	for k := len(g.sizes) - 1; k >= 0; k-- {
		g.strides[k] = s
		s *= g.sizes[k]
	}
	return g
}

// pick returns the sizes and strides of the groups whose kind is reduced,
// among the first n groups, in buf's ints from slot 2+2·which on.
func (g redGroups) pick(buf *redBuf, which, n int, reduced bool) (sizes, strides []int) {
	a, b := (2+2*which)*redRank, (3+2*which)*redRank
	sizes, strides = buf.ints[a:a:b], buf.ints[b:b:b+redRank]
	for k := 0; k < n; k++ {
		if g.reduced[k] == reduced {
			sizes = append(sizes, g.sizes[k])
			strides = append(strides, g.strides[k])
		}
	}
	return sizes, strides
}

// redOdometer walks a multi-index over sizes in row-major order, keeping
// the matching offset (sum of index times stride).
type redOdometer struct {
	sizes, strides []int
	idx            []int
	off            int
}

// newRedOdometer returns an odometer over sizes and strides at flat index
// i, its index in buf (its caller's, on the stack) up to redRank dims.
func newRedOdometer(sizes, strides []int, i int, buf *[redRank]int) redOdometer {
	o := redOdometer{sizes: sizes, strides: strides}
	if len(sizes) <= redRank {
		o.idx = buf[:len(sizes)]
	} else {
		o.idx = make([]int, len(sizes))
	}
	o.seek(i)
	return o
}

// seek moves to the flat index i.
func (o *redOdometer) seek(i int) {
	o.off = 0
	for d := len(o.sizes) - 1; d >= 0; d-- {
		o.idx[d] = i % o.sizes[d]
		i /= o.sizes[d]
		o.off += o.idx[d] * o.strides[d]
	}
}

func (o *redOdometer) next() {
	for d := len(o.sizes) - 1; d >= 0; d-- {
		o.idx[d]++
		o.off += o.strides[d]
		if o.idx[d] < o.sizes[d] {
			return
		}
		o.off -= o.sizes[d] * o.strides[d]
		o.idx[d] = 0
	}
}

func redProduct(sizes []int) int {
	n := 1
	for _, s := range sizes {
		n *= s
	}
	return n
}

// redAxes is the set of reduced dims, a bit per dim.
type redAxes struct {
	low  uint64
	high []bool // dims from 64 on, for the rare rank above 64
}

func (m redAxes) has(d int) bool {
	if d < 64 {
		return m.low&(1<<uint(d)) != 0
	}
	return m.high[d-64]
}

// redMask checks axes against rank and returns the reduced dims.
func redMask(rank int, axes []int) (redAxes, error) {
	var m redAxes
	if rank > 64 {
		m.high = make([]bool, rank-64)
	}
	for _, a := range axes {
		if a < 0 || a >= rank {
			return redAxes{}, fmt.Errorf("axis %d is out of range for rank %d", a, rank)
		}
		if m.has(a) {
			return redAxes{}, fmt.Errorf("duplicate axis %d", a)
		}
		if a < 64 {
			m.low |= 1 << uint(a)
		} else {
			m.high[a-64] = true
		}
	}
	return m, nil
}

// Reduce reduces x, of the given shape, over axes (distinct, each in
// [0, rank)) into out, whose length is the product of the kept dims. A
// reduction over zero elements gives 0 for ReduceSum, 1 for ReduceProd and
// NaN for ReduceMean, and ErrEmptyReduce for ReduceMax and ReduceMin.
func Reduce[T Numeric](op ReduceOp, threads int, out, x []T, shape []int, axes []int) error {
	mask, err := redMask(len(shape), axes)
	if err != nil {
		return err
	}
	if ewNumel(shape) != len(x) {
		return fmt.Errorf("reduce: input has %d elements, shape %v holds %d", len(x), shape, ewNumel(shape))
	}
	kept, count := 1, 1
	for d, n := range shape {
		if mask.has(d) {
			count *= n
		} else {
			kept *= n
		}
	}
	if len(out) != kept {
		return fmt.Errorf("reduce: output has %d elements, want %d", len(out), kept)
	}
	if op == ReduceMean && ewIsInt[T]() {
		var zero T
		return fmt.Errorf("reduce mean is not defined on %T", zero)
	}
	if op > ReduceProd {
		return fmt.Errorf("unknown reduction %d", op)
	}
	if kept == 0 {
		return nil
	}
	if count == 0 {
		switch op {
		case ReduceSum:
			clear(out)
		case ReduceProd:
			for i := range out {
				out[i] = 1
			}
		case ReduceMean:
			var zero T
			for i := range out {
				out[i] = zero / zero // NaN; ints were rejected above
			}
		default:
			return ErrEmptyReduce
		}
		return nil
	}
	var buf redBuf
	g := redSimplify(&buf, shape, mask)
	switch any(x).(type) {
	case []float32, []float64:
		redRun[T, float64](op, threads, out, x, &buf, g, count)
	default:
		redRun[T, int64](op, threads, out, x, &buf, g, count)
	}
	return nil
}

// redFin finishes a sum: divided by the count for a mean.
type redFin[A float64 | int64] struct {
	mean  bool
	count A
}

func redFinish[T Numeric, A float64 | int64](f redFin[A], s A) T {
	if f.mean {
		return T(s / f.count)
	}
	return T(s)
}

// redRun reduces a nonempty x whose simplified shape is g; A is the
// accumulator type of sums and products.
func redRun[T Numeric, A float64 | int64](op ReduceOp, threads int, out, x []T, buf *redBuf, g redGroups, count int) {
	m := len(g.sizes)
	fin := redFin[A]{mean: op == ReduceMean, count: A(count)}
	switch {
	case m == 0: // one element
		out[0] = x[0]
	case m == 1 && g.reduced[0]: // everything, contiguous
		out[0] = redAll[T, A](op, threads, x, fin)
	case g.reduced[m-1]:
		redInner[T, A](op, threads, out, x, buf, g, count, fin)
	default:
		redOuter[T, A](op, threads, out, x, buf, g, count, fin)
	}
}

// redAll reduces all of x: fixed chunks in parallel, combined in order.
func redAll[T Numeric, A float64 | int64](op ReduceOp, threads int, x []T, fin redFin[A]) T {
	nc := (len(x) + redChunk - 1) / redChunk
	if nc == 1 {
		switch op {
		case ReduceProd:
			return T(redProdContig[T, A](x))
		case ReduceSum, ReduceMean:
			return redFinish[T](fin, redSumContig[T, A](x))
		case ReduceMax:
			return redMaxContig(x[0], x[1:])
		default:
			return redMinContig(x[0], x[1:])
		}
	}
	chunk := func(c int) []T { return x[c*redChunk : min(len(x), (c+1)*redChunk)] }
	if op == ReduceProd {
		parts := make([]A, nc)
		perfFor(threads, nc, 1, func(lo, hi int) {
			for c := lo; c < hi; c++ {
				parts[c] = redProdContig[T, A](chunk(c))
			}
		})
		p := A(1)
		for _, q := range parts {
			p *= q
		}
		return T(p)
	}
	if op == ReduceSum || op == ReduceMean {
		parts := make([]A, nc)
		perfFor(threads, nc, 1, func(lo, hi int) {
			for c := lo; c < hi; c++ {
				parts[c] = redSumContig[T, A](chunk(c))
			}
		})
		var s A
		for _, p := range parts {
			s += p
		}
		return redFinish[T](fin, s)
	}
	parts := make([]T, nc)
	perfFor(threads, nc, 1, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			ch := chunk(c)
			parts[c] = redFoldContig(op, ch[0], ch[1:])
		}
	})
	return redFoldContig(op, parts[0], parts[1:])
}

// redFoldContig folds x into acc with max or min.
func redFoldContig[T Numeric](op ReduceOp, acc T, x []T) T {
	if op == ReduceMax {
		return redMaxContig(acc, x)
	}
	return redMinContig(acc, x)
}

// redInner reduces when the last group is reduced: each output element
// folds rows of length L (the last group) at the offsets of the other
// reduced groups.
func redInner[T Numeric, A float64 | int64](op ReduceOp, threads int, out, x []T, buf *redBuf, g redGroups, count int, fin redFin[A]) {
	m := len(g.sizes)
	L := g.sizes[m-1]
	ks, kst := g.pick(buf, 0, m, false)
	rs, rst := g.pick(buf, 1, m-1, true)
	grain := max(1, ewGrain/count)
	if redSerial(threads, len(out), grain) {
		redInnerRange[T, A](op, out, x, ks, kst, rs, rst, L, fin, 0, len(out))
		return
	}
	redGroupRun(true, op, threads, len(out), grain, out, x, ks, kst, rs, rst, L, count, fin)
}

// redInnerRange is redInner for the output elements [lo, hi).
func redInnerRange[T Numeric, A float64 | int64](op ReduceOp, out, x []T, ks, kst, rs, rst []int, L int, fin redFin[A], lo, hi int) {
	rows := redProduct(rs)
	if (op == ReduceSum || op == ReduceMean) && len(rs) == 0 && len(ks) == 1 && kst[0] == L {
		lo = redInnerRows(out, x, L, fin, lo, hi) // one row per output, rows one after another
	}
	var kb, rb [redRank]int
	ko, ro := newRedOdometer(ks, kst, lo, &kb), newRedOdometer(rs, rst, 0, &rb)
	for o := lo; o < hi; o++ {
		base := ko.off
		switch op {
		case ReduceSum, ReduceMean:
			var s A
			for r := 0; r < rows; r++ {
				off := base + ro.off
				s += redSumContig[T, A](x[off : off+L])
				ro.next()
			}
			out[o] = redFinish[T](fin, s)
		case ReduceProd:
			p := A(1)
			for r := 0; r < rows; r++ {
				off := base + ro.off
				p *= redProdContig[T, A](x[off : off+L])
				ro.next()
			}
			out[o] = T(p)
		default:
			acc := x[base]
			for r := 0; r < rows; r++ {
				off := base + ro.off
				acc = redFoldContig(op, acc, x[off:off+L])
				ro.next()
			}
			out[o] = acc
		}
		ko.next()
	}
}

// redOuter reduces when the last group (length B) is kept: each output row
// of B elements accumulates the input rows at the offsets of the reduced
// groups, redCols columns at a time.
func redOuter[T Numeric, A float64 | int64](op ReduceOp, threads int, out, x []T, buf *redBuf, g redGroups, count int, fin redFin[A]) {
	m := len(g.sizes)
	B := g.sizes[m-1]
	ks, kst := g.pick(buf, 0, m-1, false)
	rs, rst := g.pick(buf, 1, m, true)
	nb := (B + redCols - 1) / redCols
	units := redProduct(ks) * nb
	grain := max(1, ewGrain/(count*min(B, redCols)))
	if redSerial(threads, units, grain) {
		redOuterRange[T, A](op, out, x, ks, kst, rs, rst, B, count, fin, 0, units)
		return
	}
	redGroupRun(false, op, threads, units, grain, out, x, ks, kst, rs, rst, B, count, fin)
}

// redOuterRange is redOuter for the units (an output row's column block)
// [lo, hi).
func redOuterRange[T Numeric, A float64 | int64](op ReduceOp, out, x []T, ks, kst, rs, rst []int, B, count int, fin redFin[A], lo, hi int) {
	nb := (B + redCols - 1) / redCols
	var kb, rb [redRank]int
	ko, ro := newRedOdometer(ks, kst, 0, &kb), newRedOdometer(rs, rst, 0, &rb)
	var acc [redCols]A
	for u := lo; u < hi; u++ {
		p, c0 := u/nb, (u%nb)*redCols
		w := min(redCols, B-c0)
		ko.seek(p)
		base := ko.off + c0
		o := out[p*B+c0 : p*B+c0+w]
		ro.seek(0)
		row := func() []T {
			off := base + ro.off
			ro.next()
			return x[off : off+w]
		}
		r := 0
		if op == ReduceProd {
			a := acc[:w]
			for j := range a {
				a[j] = 1
			}
			for ; r < count; r++ {
				redMulRow(a, row())
			}
			for j, p := range a {
				o[j] = T(p)
			}
			continue
		}
		if op == ReduceSum || op == ReduceMean {
			a := acc[:w]
			clear(a)
			if len(rs) == 1 {
				r = redAddRows16Vec(a, x[base:], rst[0], count)
				ro.seek(r)
			}
			for ; r+4 <= count; r += 4 {
				redAddRows4(a, row(), row(), row(), row())
			}
			for ; r < count; r++ {
				redAddRow(a, row())
			}
			for j, s := range a {
				o[j] = redFinish[T](fin, s)
			}
			continue
		}
		copy(o, row())
		r++
		for ; r+4 <= count; r += 4 {
			if op == ReduceMax {
				redMaxRows4(o, row(), row(), row(), row())
			} else {
				redMinRows4(o, row(), row(), row(), row())
			}
		}
		for ; r < count; r++ {
			if op == ReduceMax {
				redMaxRows4(o, row(), nil, nil, nil)
			} else {
				redMinRows4(o, row(), nil, nil, nil)
			}
		}
	}
}

// redSumContig sums x in blocks of four-way partial sums.
func redSumContig[T Numeric, A float64 | int64](x []T) A {
	var total A
	for len(x) > 0 {
		n := min(len(x), redBlock)
		b := x[:n]
		x = x[n:]
		var s0, s1, s2, s3 A
		i := 0
		for ; i+4 <= len(b); i += 4 {
			q := b[i : i+4 : i+4]
			s0 += A(q[0])
			s1 += A(q[1])
			s2 += A(q[2])
			s3 += A(q[3])
		}
		for ; i < len(b); i++ {
			s0 += A(b[i])
		}
		total += (s0 + s1) + (s2 + s3)
	}
	return total
}

// redProdContig multiplies x in four lanes.
func redProdContig[T Numeric, A float64 | int64](x []T) A {
	p0, p1, p2, p3 := A(1), A(1), A(1), A(1)
	i := 0
	for ; i+4 <= len(x); i += 4 {
		q := x[i : i+4 : i+4]
		p0 *= A(q[0])
		p1 *= A(q[1])
		p2 *= A(q[2])
		p3 *= A(q[3])
	}
	for ; i < len(x); i++ {
		p0 *= A(x[i])
	}
	return (p0 * p1) * (p2 * p3)
}

// redMaxContig folds x into acc with max, four independent lanes at a
// time (max is exact, so the lanes do not change the result).
func redMaxContig[T Numeric](acc T, x []T) T {
	a0, a1, a2, a3 := acc, acc, acc, acc
	i := 0
	for ; i+4 <= len(x); i += 4 {
		q := x[i : i+4 : i+4]
		a0 = max(a0, q[0])
		a1 = max(a1, q[1])
		a2 = max(a2, q[2])
		a3 = max(a3, q[3])
	}
	for ; i < len(x); i++ {
		a0 = max(a0, x[i])
	}
	return max(max(a0, a1), max(a2, a3))
}

// redMinContig is redMaxContig with min.
func redMinContig[T Numeric](acc T, x []T) T {
	a0, a1, a2, a3 := acc, acc, acc, acc
	i := 0
	for ; i+4 <= len(x); i += 4 {
		q := x[i : i+4 : i+4]
		a0 = min(a0, q[0])
		a1 = min(a1, q[1])
		a2 = min(a2, q[2])
		a3 = min(a3, q[3])
	}
	for ; i < len(x); i++ {
		a0 = min(a0, x[i])
	}
	return min(min(a0, a1), min(a2, a3))
}

func redAddRow[T Numeric, A float64 | int64](acc []A, x []T) {
	x = x[:len(acc)]
	for j, v := range x {
		acc[j] += A(v)
	}
}

func redMulRow[T Numeric, A float64 | int64](acc []A, x []T) {
	x = x[:len(acc)]
	for j, v := range x {
		acc[j] *= A(v)
	}
}

// redAddRows4 adds four rows to acc, pairwise per column.
func redAddRows4[T Numeric, A float64 | int64](acc []A, x0, x1, x2, x3 []T) {
	n := len(acc)
	x0, x1, x2, x3 = x0[:n], x1[:n], x2[:n], x3[:n]
	for j := range acc {
		acc[j] += (A(x0[j]) + A(x1[j])) + (A(x2[j]) + A(x3[j]))
	}
}

// redAddRows16Vec runs redAddRows4 over the groups of four of count rows
// of x, ld apart, with the vector loop where there is one: float32 rows of
// 16 columns (the blocked layout's pixels), float64 sums. It returns how
// many rows it added.
func redAddRows16Vec[T Numeric, A float64 | int64](acc []A, x []T, ld, count int) int {
	xf, ok := any(x).([]float32)
	af, ok64 := any(acc).([]float64)
	if !ok || !ok64 || len(af) != 16 {
		return 0
	}
	return redAddRows16F32Vec((*[16]float64)(af), xf, ld, count)
}

// redMaxRows4 folds up to four rows into o with max; x1..x3 may be nil
// together, for a single row.
func redMaxRows4[T Numeric](o, x0, x1, x2, x3 []T) {
	n := len(o)
	x0 = x0[:n]
	if x1 == nil {
		for j, v := range x0 {
			o[j] = max(o[j], v)
		}
		return
	}
	x1, x2, x3 = x1[:n], x2[:n], x3[:n]
	for j := range o {
		o[j] = max(o[j], max(x0[j], x1[j]), max(x2[j], x3[j]))
	}
}

// redMinRows4 is redMaxRows4 with min.
func redMinRows4[T Numeric](o, x0, x1, x2, x3 []T) {
	n := len(o)
	x0 = x0[:n]
	if x1 == nil {
		for j, v := range x0 {
			o[j] = min(o[j], v)
		}
		return
	}
	x1, x2, x3 = x1[:n], x2[:n], x3[:n]
	for j := range o {
		o[j] = min(o[j], min(x0[j], x1[j]), min(x2[j], x3[j]))
	}
}

// Argmax writes into out the index along axis of the largest element of x
// (shape given) for every position of the other dims; out's length is the
// product of those dims. Ties give the first index; NaN counts as the
// largest, so the first NaN wins. A size-0 axis with a nonempty output
// returns ErrEmptyReduce.
func Argmax[T Numeric](threads int, out []int64, x []T, shape []int, axis int) error {
	if axis < 0 || axis >= len(shape) {
		return fmt.Errorf("axis %d is out of range for rank %d", axis, len(shape))
	}
	if ewNumel(shape) != len(x) {
		return fmt.Errorf("argmax: input has %d elements, shape %v holds %d", len(x), shape, ewNumel(shape))
	}
	A, R, B := ewNumel(shape[:axis]), shape[axis], ewNumel(shape[axis+1:])
	if len(out) != A*B {
		return fmt.Errorf("argmax: output has %d elements, want %d", len(out), A*B)
	}
	if len(out) == 0 {
		return nil
	}
	if R == 0 {
		return ErrEmptyReduce
	}
	if B == 1 {
		redPar(threads, A, max(1, ewGrain/R), func(lo, hi int) {
			for a := lo; a < hi; a++ {
				out[a] = int64(redArgmaxContig(x[a*R : (a+1)*R]))
			}
		})
		return nil
	}
	nb := (B + redCols - 1) / redCols
	redPar(threads, A*nb, max(1, ewGrain/(R*min(B, redCols))), func(lo, hi int) {
		var best [redCols]T
		for u := lo; u < hi; u++ {
			a, c0 := u/nb, (u%nb)*redCols
			w := min(redCols, B-c0)
			base := a*R*B + c0
			o := out[a*B+c0 : a*B+c0+w]
			bv := best[:w]
			copy(bv, x[base:base+w])
			clear(o)
			for r := 1; r < R; r++ {
				row := x[base+r*B : base+r*B+w]
				for j, v := range row {
					if b := bv[j]; v > b || v != v && b == b {
						bv[j] = v
						o[j] = int64(r)
					}
				}
			}
		}
	})
	return nil
}

func redArgmaxContig[T Numeric](x []T) int {
	best, bi := x[0], 0
	if best != best {
		return 0
	}
	for i := 1; i < len(x); i++ {
		v := x[i]
		if v > best {
			best, bi = v, i
		} else if v != v {
			return i
		}
	}
	return bi
}

// redPar runs fn over [0,n) like the elementwise kernels' ewRun (serial
// below two grains), on the GEMM helpers (perfFor). Each output element is
// computed whole by one call, so the split never changes a result.
func redPar(threads, n, grain int, fn func(lo, hi int)) {
	if redSerial(threads, n, grain) {
		if n > 0 {
			fn(0, n)
		}
		return
	}
	perfFor(threads, n, grain, fn)
}

// redSerial reports whether redPar would run [0,n) on the calling
// goroutine; callers then call their loop directly, without the closure
// redPar takes (a Go allocation per call).
func redSerial(threads, n, grain int) bool { return threads <= 1 || n < 2*grain }
