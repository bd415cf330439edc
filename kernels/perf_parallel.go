package kernels

import (
	"runtime"
	"sync/atomic"
)

// perfRun runs fn(worker, i) for every item i in [0, items), each exactly
// once, on the calling goroutine (worker 0) and up to t-1 of the GEMM
// helpers (workers 1..t-1; see gemm_workers.go), and returns when all have
// returned. Two calls never run at once with the same worker index, so fn
// may use per-worker scratch.
//
// The helpers persist and poll for a while after each job, so a kernel
// that runs right after a GEMM finds one awake, instead of starting a
// goroutine that has to wait for the polling helper's P (on two cores,
// until the caller has done all of its own share). Measured on LeNet's
// training step with two threads: 2.2 ms with the helpers, 3.0 ms with new
// goroutines, 3–4 ms with a pool of its own whose workers competed with
// the polling GEMM helper for the cores.
//
// Items are claimed one at a time from a counter, so on a busy machine a
// helper that loses its core holds up at most the item it is running, and
// if no helper comes the caller runs every item itself. Which goroutine
// runs an item never changes what the item computes, so results do not
// depend on it. A panic in fn is raised again on the caller's goroutine,
// as a *WorkerPanic, once every item has run.
func perfRun(t, items int, fn func(worker, i int)) {
	t = min(t, items, runtime.GOMAXPROCS(0))
	if t <= 1 {
		for i := range items {
			fn(0, i)
		}
		return
	}
	var next, done, joined atomic.Int32
	var sig gemmSignal
	var ps panicSlot
	run := func(w int) {
		for {
			i := int(next.Add(1)) - 1
			if i >= items {
				return
			}
			ps.run(func() { fn(w, i) })
			sig.add(&done, items)
		}
	}
	job := func() {
		if w := int(joined.Add(1)); w < t {
			run(w)
		}
	}
	runHelpers(t-1, &job)
	run(0)
	sig.wait(&done, items)
	ps.rethrow()
}

// perfItemsPerWorker is how many items perfFor and nnFor cut the work of
// each goroutine into, so that one that loses its core to another process
// holds up only a small part.
const perfItemsPerWorker = 4

// perfSerial reports whether perfFor would run [0,n) on the calling
// goroutine alone: callers then run their loop directly, without building
// the closure perfFor takes (a Go allocation per call).
func perfSerial(threads, n, grain int) bool {
	return min(threads, n/max(grain, 1)) <= 1
}

// perfFor is ParallelFor on the GEMM helpers: with parts = min(threads,
// n/grain) goroutines, [0,n) is cut into up to perfItemsPerWorker·parts
// near-equal contiguous ranges of at least grain items each, which the
// goroutines claim in turn.
func perfFor(threads, n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	parts := min(threads, n/grain)
	if parts <= 1 {
		fn(0, n)
		return
	}
	items := min(parts*perfItemsPerWorker, n/grain)
	perfRun(parts, items, func(_, i int) {
		lo, hi := splitRange(n, items, i)
		fn(lo, hi)
	})
}
