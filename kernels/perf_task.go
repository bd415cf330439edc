package kernels

import (
	"reflect"
	"runtime"
	"sync"
)

// Parallel loops without a Go allocation. A closure handed to a parallel
// loop is a Go allocation on every call, since the loop's goroutines keep
// it. The kernels that run on every inference at batch sizes where they
// go parallel (batch norm, ReLU, pooling, elementwise ops, resize, copies
// and concats, reductions, softmax, the direct convolution) instead put
// their loop's state in a job object of their own type, recycled through
// getJob and putJob, and pass it as a ranger (or a workerRanger, for
// per-worker scratch).

// ranger is a parallel loop's body with its state: run computes [lo, hi).
type ranger interface {
	run(lo, hi int)
}

// jobPools holds a sync.Pool per job type.
var jobPools sync.Map // reflect.Type → *sync.Pool

func jobPool[J any]() *sync.Pool {
	t := reflect.TypeFor[J]()
	if p, ok := jobPools.Load(t); ok {
		return p.(*sync.Pool)
	}
	p, _ := jobPools.LoadOrStore(t, new(sync.Pool))
	return p.(*sync.Pool)
}

// getJob returns a zero *J, recycled when one is free.
func getJob[J any]() *J {
	if j, _ := jobPool[J]().Get().(*J); j != nil {
		return j
	}
	return new(J)
}

// putJob zeroes j (dropping what it points to) and recycles it. Call it
// once the loop that used it has returned: its goroutines are done with
// it then.
func putJob[J any](j *J) {
	var zero J
	*j = zero
	jobPool[J]().Put(j)
}

// perfForRanger is perfFor with the body given as a ranger.
func perfForRanger(threads, n, grain int, r ranger) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	parts := min(threads, n/grain)
	if parts <= 1 {
		r.run(0, n)
		return
	}
	perfSplitRanger(parts, min(parts*perfItemsPerWorker, n/grain), n, r)
}

// nnForRanger is nnFor with the body given as a ranger.
func nnForRanger(threads, n, cost int, r ranger) {
	if n <= 0 {
		return
	}
	parts := nnParts(threads, n, cost)
	if parts <= 1 {
		r.run(0, n)
		return
	}
	perfSplitRanger(parts, min(n, parts*perfItemsPerWorker), n, r)
}

// perfSplitRanger is perfSplit with the body given as a ranger.
func perfSplitRanger(t, items, n int, r ranger) {
	t = min(t, items, runtime.GOMAXPROCS(0))
	if t <= 1 {
		for i := range items {
			r.run(splitRange(n, items, i))
		}
		return
	}
	j := newPerfJob(t, items)
	j.ranger, j.n = r, n
	j.start()
}

// workerRanger is a parallel loop's body that also needs the index of the
// worker running it, for per-worker scratch: runWorker computes [lo, hi).
type workerRanger interface {
	runWorker(worker, lo, hi int)
}

// nnForWorkersRanger is nnForWorkers with the body given as a
// workerRanger.
func nnForWorkersRanger(workers, n int, r workerRanger) {
	if n <= 0 {
		return
	}
	workers = max(1, min(workers, n))
	if workers == 1 {
		r.runWorker(0, 0, n)
		return
	}
	items := min(n, workers*perfItemsPerWorker)
	t := min(workers, items, runtime.GOMAXPROCS(0))
	if t <= 1 {
		for i := range items {
			lo, hi := splitRange(n, items, i)
			r.runWorker(0, lo, hi)
		}
		return
	}
	j := newPerfJob(t, items)
	j.worker, j.n = r, n
	j.start()
}
