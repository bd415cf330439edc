package kernels

// ParallelFor splits [0,n) into contiguous ranges of at least grain items
// and runs fn on each, over at most threads goroutines: the caller's and
// the persistent helpers every kernel shares (perfFor). With threads<=1 or
// n<=grain it runs fn(0,n) on the caller's goroutine. The partition is
// fixed for a given (threads, n, grain); which goroutine runs a range is
// not, so fn must not care. ParallelFor returns when every fn call has
// returned; a panic in fn is raised again on the caller's goroutine, as a
// *WorkerPanic, once every call has returned.
func ParallelFor(threads, n, grain int, fn func(lo, hi int)) {
	perfFor(threads, n, grain, fn)
}

// splitRange returns the i-th of parts near-equal contiguous ranges of [0,n);
// sizes differ by at most one, so every range holds at least n/parts items.
func splitRange(n, parts, i int) (lo, hi int) {
	return i * n / parts, (i + 1) * n / parts
}
