package kernels

import "slices"

// The parallel loops of the copy kernels (StridedCopy, ConcatRows,
// SplitRows) as pooled jobs, so that a call that goes parallel makes no Go
// allocation (see perf_task.go). A job keeps its own copies of the
// caller's dims and operand lists, inline up to a bound, since the
// caller's may be on its stack.

// shpInline is how many operands a concat or split job holds inline; more
// are copied to the heap.
const shpInline = 16

// shpCopyJob is StridedCopy's loop: rows of a strided copy, or bands of a
// blocked transpose.
type shpCopyJob[T any] struct {
	dst, src   []T
	dims, st   []int
	dbuf, sbuf [shpRank]int
	off        int
	transpose  bool
}

func (j *shpCopyJob[T]) run(lo, hi int) {
	if j.transpose {
		shpTransposeRange(j.dst, j.src, j.dims, j.off, j.st, lo, hi)
		return
	}
	shpStridedRange(j.dst, j.src, j.dims, j.off, j.st, lo, hi)
}

// shpCopyRun runs the rows (or, with transpose, the bands) [0, n) of a
// strided copy over threads.
func shpCopyRun[T any](dst, src []T, dims []int, off int, st []int, transpose bool, threads, n, grain int) {
	j := getJob[shpCopyJob[T]]()
	j.dst, j.src, j.off, j.transpose = dst, src, off, transpose
	j.dims, j.st = inlineInts(&j.dbuf, dims), inlineInts(&j.sbuf, st)
	perfForRanger(threads, n, grain, j)
	putJob(j)
}

// inlineInts copies x into buf when it fits, else onto the heap.
func inlineInts(buf *[shpRank]int, x []int) []int {
	if len(x) <= len(buf) {
		return buf[:copy(buf[:], x)]
	}
	return slices.Clone(x)
}

// shpRowsJob is ConcatRows's loop, or with split SplitRows's (parts are
// then the destinations).
type shpRowsJob[T any] struct {
	whole  []T
	parts  [][]T
	widths []int
	pbuf   [shpInline][]T
	wbuf   [shpInline]int
	w      int
	split  bool
}

func (j *shpRowsJob[T]) run(lo, hi int) {
	if j.split {
		splitRangeRows(j.parts, j.whole, j.widths, j.w, lo, hi)
		return
	}
	concatRange(j.whole, j.parts, j.widths, j.w, lo, hi)
}

// shpRowsRun runs a concat (or with split, a split) of rows of w elements
// over threads.
func shpRowsRun[T any](whole []T, parts [][]T, widths []int, w, outer int, split bool, threads int) {
	j := getJob[shpRowsJob[T]]()
	j.whole, j.w, j.split = whole, w, split
	if len(parts) <= shpInline {
		j.parts = j.pbuf[:copy(j.pbuf[:], parts)]
		j.widths = j.wbuf[:copy(j.wbuf[:], widths)]
	} else {
		j.parts, j.widths = slices.Clone(parts), slices.Clone(widths)
	}
	perfForRanger(threads, outer*w, CopyGrain, j)
	putJob(j)
}
