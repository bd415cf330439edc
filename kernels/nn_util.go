package kernels

// nnFloat is the element type of the neural-network kernels (conv, pool,
// norm, softmax, losses, dropout).
type nnFloat interface{ float32 | float64 }

// nnGemm dispatches to Sgemm or Dgemm by element type.
func nnGemm[T nnFloat](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int, threads int) {
	switch a := any(a).(type) {
	case []float32:
		Sgemm(transA, transB, m, n, k, float32(alpha), a, lda, any(b).([]float32), ldb, float32(beta), any(c).([]float32), ldc, threads)
	case []float64:
		Dgemm(transA, transB, m, n, k, float64(alpha), a, lda, any(b).([]float64), ldb, float64(beta), any(c).([]float64), ldc, threads)
	}
}

// nnParts is how many goroutines to use for n items of about cost units of
// work each: at most threads, at most n, and none that would get less than
// nnMinWork units.
func nnParts(threads, n, cost int) int {
	if threads <= 1 || n <= 1 {
		return 1
	}
	cost = max(cost, 1)
	byWork := n * cost / nnMinWork
	return max(1, min(threads, n, byWork))
}

// nnMinWork is the work (in element-operations) below which another
// goroutine costs more than it saves.
const nnMinWork = 32 * 1024

// nnSerial reports whether nnFor would run [0,n) on the calling goroutine
// alone: callers then run their loop directly, without building the
// closure nnFor takes (a Go allocation per call).
func nnSerial(threads, n, cost int) bool { return nnParts(threads, n, cost) <= 1 }

// nnFor runs fn over [0,n) on nnParts(threads, n, cost) goroutines, cut
// into up to perfItemsPerWorker contiguous ranges per goroutine; the split
// never changes what is computed for an item, so results do not depend on
// the thread count.
func nnFor(threads, n, cost int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	parts := nnParts(threads, n, cost)
	if parts <= 1 {
		fn(0, n)
		return
	}
	perfSplit(parts, min(n, parts*perfItemsPerWorker), n, fn)
}

// nnForParts is nnFor that also tells fn which part it runs, for work that
// keeps a result per part. Part p covers items [p*n/parts, (p+1)*n/parts).
func nnForParts(parts, n int, fn func(part, lo, hi int)) {
	if n <= 0 {
		return
	}
	parts = max(1, min(parts, n))
	if parts == 1 {
		fn(0, 0, n)
		return
	}
	perfSplit3(parts, parts, n, true, fn)
}

// nnForWorkers runs fn over [0,n) on up to workers goroutines, cut into
// up to perfItemsPerWorker contiguous ranges per goroutine (whole items
// each), and tells fn which worker, in [0, workers), runs it: no two calls
// with one worker index overlap, for per-goroutine scratch.
func nnForWorkers(workers, n int, fn func(worker, lo, hi int)) {
	if n <= 0 {
		return
	}
	workers = max(1, min(workers, n))
	if workers == 1 {
		fn(0, 0, n)
		return
	}
	perfSplit3(workers, min(n, workers*perfItemsPerWorker), n, false, fn)
}
