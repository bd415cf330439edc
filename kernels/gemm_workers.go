package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// GEMM helper goroutines. Starting a goroutine is cheap, but the idle core
// it needs may be parked, and waking it (a futex and, in a VM, a halted
// vCPU) can take longer than a mid-sized GEMM. So helpers persist and spin
// for a short while after each job, like BLAS thread pools do, before they
// block. Jobs never depend on a helper showing up: the caller works through
// all of a job by itself if none does.

// helperSpin is how long an idle helper polls for the next job.
const helperSpin = 200 * time.Microsecond

type gemmHelper struct {
	next     atomic.Pointer[func()] // job waiting for this helper
	sleeping atomic.Bool
	wake     chan struct{}
}

var gemmHelpers struct {
	mu   sync.Mutex
	list []*gemmHelper
}

// runHelpers offers job to up to n helpers, starting helpers as needed.
// A helper still busy with an earlier job is skipped unless it has taken
// that job already, in which case it runs this one next.
func runHelpers(n int, job *func()) {
	gemmHelpers.mu.Lock()
	for len(gemmHelpers.list) < n {
		h := &gemmHelper{wake: make(chan struct{}, 1)}
		gemmHelpers.list = append(gemmHelpers.list, h)
		go h.loop()
	}
	helpers := gemmHelpers.list[:n]
	gemmHelpers.mu.Unlock()
	for _, h := range helpers {
		if !h.next.CompareAndSwap(nil, job) {
			continue
		}
		if h.sleeping.Load() {
			select {
			case h.wake <- struct{}{}:
			default:
			}
		}
	}
}

func (h *gemmHelper) loop() {
	for {
		job := h.wait()
		(*job)()
	}
}

// wait takes the next job: it polls for helperSpin, then blocks.
func (h *gemmHelper) wait() *func() {
	start := time.Now()
	for i := 1; ; i++ {
		if h.next.Load() != nil {
			if job := h.next.Swap(nil); job != nil {
				return job
			}
		}
		if i%64 == 0 {
			if time.Since(start) > helperSpin {
				break
			}
			runtime.Gosched() // let goroutines queued on this P run
		}
	}
	for {
		h.sleeping.Store(true)
		if job := h.next.Swap(nil); job != nil {
			h.sleeping.Store(false)
			return job
		}
		<-h.wake
		h.sleeping.Store(false)
	}
}
