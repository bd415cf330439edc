package kernels

import "sync"

// ParallelFor splits [0,n) into contiguous ranges of at least grain items
// over at most threads goroutines; with threads<=1 or n<=grain it runs
// fn(0,n) on the caller's goroutine. Deterministic partition for a given
// (threads, n, grain). The last range runs on the caller's goroutine, and
// ParallelFor returns when every fn call has returned. A panic in fn is
// raised again on the caller's goroutine, as a *WorkerPanic, once every
// call has returned.
func ParallelFor(threads, n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	if grain < 1 {
		grain = 1
	}
	parts := min(threads, n/grain)
	if parts <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	var ps panicSlot
	wg.Add(parts - 1)
	for i := 0; i < parts-1; i++ {
		lo, hi := splitRange(n, parts, i)
		go func() {
			defer wg.Done()
			ps.run(func() { fn(lo, hi) })
		}()
	}
	lo, hi := splitRange(n, parts, parts-1)
	ps.run(func() { fn(lo, hi) })
	wg.Wait()
	ps.rethrow()
}

// splitRange returns the i-th of parts near-equal contiguous ranges of [0,n);
// sizes differ by at most one, so every range holds at least n/parts items.
func splitRange(n, parts, i int) (lo, hi int) {
	return i * n / parts, (i + 1) * n / parts
}
