package kernels

import (
	"runtime"
	"sync"
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
// Items are claimed one at a time, so on a busy machine a helper that
// loses its core holds up at most the item it is running, and if no helper
// comes the caller runs every item itself. The caller claims from the
// front and the helpers from the back (perfJob.claim): with two threads
// the caller computes the first part of every loop and the helper the
// last, so an op that splits its output the way the op before it did
// reads what its own core wrote, from its own caches. Which goroutine
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
	j := newPerfJob(t, items)
	j.each = fn
	j.start()
}

// perfTask is a parallel loop's body with its state, for loops that run
// on every inference: a kernel that keeps its state in a pooled struct
// and passes a pointer to it makes no Go allocation per call, where a
// closure would be one.
type perfTask interface {
	item(worker, i int)
}

// perfRunTask is perfRun with the body given as a perfTask.
func perfRunTask(t, items int, task perfTask) {
	t = min(t, items, runtime.GOMAXPROCS(0))
	if t <= 1 {
		for i := range items {
			task.item(0, i)
		}
		return
	}
	j := newPerfJob(t, items)
	j.task = task
	j.start()
}

// perfJob is the shared state of one parallel loop. Jobs are recycled
// (perfJobs), so that a loop makes no Go allocation: a job goes back when
// its last user is done with it — the caller, and every helper it was
// offered to, which may take it long after the loop has finished (it then
// finds every item claimed).
type perfJob struct {
	t, items int
	// The body: one of each (fn(worker, i)), task, or split (fn(lo, hi)
	// on item i of n's items near-equal ranges, as perfFor cuts them).
	each   func(worker, i int)
	task   perfTask
	split  func(lo, hi int)
	split3 func(who, lo, hi int) // who: the worker, or the item with byItem
	byItem bool
	ranger ranger       // run(lo, hi) on the split ranges
	worker workerRanger // runWorker(worker, lo, hi) on the split ranges
	n      int

	// left holds the items not yet claimed, [lo, hi): lo in the low 32
	// bits, hi in the high ones (claim).
	left         atomic.Uint64
	done, joined atomic.Int32
	users        atomic.Int32
	sig          gemmSignal
	ps           panicSlot
	helper       func() // what helpers run: made once per job object
}

var perfJobs sync.Pool

func newPerfJob(t, items int) *perfJob {
	j, _ := perfJobs.Get().(*perfJob)
	if j == nil {
		j = new(perfJob)
		j.helper = func() {
			if w := int(j.joined.Add(1)); w < j.t {
				j.run(w)
			}
			j.leave()
		}
	}
	j.t, j.items = t, items
	j.left.Store(uint64(items) << 32)
	return j
}

// start runs the job on the caller and up to t-1 helpers, and returns
// once every item is done, raising a helper's panic again.
func (j *perfJob) start() {
	// Users: the caller, and each helper that got the offer. Counted
	// before the offers, so that no helper's leave can see zero early.
	j.users.Store(int32(j.t))
	offered := runHelpers(j.t-1, &j.helper)
	j.users.Add(int32(offered - (j.t - 1)))
	j.run(0)
	j.sig.wait(&j.done, j.items)
	wp := j.ps.p.Load()
	j.leave()
	if wp != nil {
		panic(wp)
	}
}

// leave drops one user; the last one resets the job and recycles it. A
// helper runs every offer it got exactly once (runHelpers), so each
// offered helper leaves once.
func (j *perfJob) leave() {
	if j.users.Add(-1) != 0 {
		return
	}
	j.each, j.task, j.split, j.split3, j.byItem, j.ranger, j.worker = nil, nil, nil, nil, false, nil, nil
	j.left.Store(0)
	j.done.Store(0)
	j.joined.Store(0)
	j.ps.p.Store(nil)
	perfJobs.Put(j)
}

func (j *perfJob) run(w int) {
	for {
		i := j.claim(w == 0)
		if i < 0 {
			return
		}
		j.ps.run(func() { j.item(w, i) })
		j.sig.add(&j.done, j.items)
	}
}

// claim takes an item left and returns it, or -1 when none is: the first
// one for the caller (front), the last one for a helper. The caller's
// items are then always a prefix and, with two threads, the helper's the
// rest, where a shared counter dealt them out in the order the threads
// came (a direct convolution's bands alternating between the cores, each
// band's padded rows copied anew).
func (j *perfJob) claim(front bool) int {
	for {
		s := j.left.Load()
		lo, hi := uint32(s), uint32(s>>32)
		if lo >= hi {
			return -1
		}
		i, next := lo, s+1
		if !front {
			i, next = hi-1, s-1<<32
		}
		if j.left.CompareAndSwap(s, next) {
			return int(i)
		}
	}
}

func (j *perfJob) item(w, i int) {
	switch {
	case j.each != nil:
		j.each(w, i)
	case j.task != nil:
		j.task.item(w, i)
	case j.split != nil:
		j.split(splitRange(j.n, j.items, i))
	case j.ranger != nil:
		j.ranger.run(splitRange(j.n, j.items, i))
	case j.worker != nil:
		lo, hi := splitRange(j.n, j.items, i)
		j.worker.runWorker(w, lo, hi)
	default:
		lo, hi := splitRange(j.n, j.items, i)
		if j.byItem {
			w = i
		}
		j.split3(w, lo, hi)
	}
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
	perfSplit(parts, min(parts*perfItemsPerWorker, n/grain), n, fn)
}

// perfSplit runs fn on each of items near-equal ranges of [0, n) on up to
// t goroutines.
func perfSplit(t, items, n int, fn func(lo, hi int)) {
	t = min(t, items, runtime.GOMAXPROCS(0))
	if t <= 1 {
		for i := range items {
			fn(splitRange(n, items, i))
		}
		return
	}
	j := newPerfJob(t, items)
	j.split, j.n = fn, n
	j.start()
}

// perfSplit3 runs fn(who, lo, hi) on each of items near-equal ranges of
// [0, n) on up to t goroutines; who is the worker running the range, or
// with byItem the range's index.
func perfSplit3(t, items, n int, byItem bool, fn func(who, lo, hi int)) {
	t = min(t, items, runtime.GOMAXPROCS(0))
	if t <= 1 {
		for i := range items {
			lo, hi := splitRange(n, items, i)
			who := 0
			if byItem {
				who = i
			}
			fn(who, lo, hi)
		}
		return
	}
	j := newPerfJob(t, items)
	j.split3, j.byItem, j.n = fn, byItem, n
	j.start()
}
