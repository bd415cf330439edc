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

// helperSpin is how long an idle helper polls for the next job: long
// enough to span the gaps between the GEMMs of a training step.
const helperSpin = time.Millisecond

type gemmHelper struct {
	next     atomic.Pointer[func()] // job waiting for this helper
	sleeping atomic.Bool
	wake     chan struct{}
}

var gemmHelpers struct {
	mu   sync.Mutex
	list []*gemmHelper
}

// runHelpers offers job to up to n helpers, starting helpers as needed,
// and returns how many got the offer; each of them runs job exactly once.
// A helper still busy with an earlier job is skipped unless it has taken
// that job already, in which case it runs this one next.
func runHelpers(n int, job *func()) int {
	gemmHelpers.mu.Lock()
	for len(gemmHelpers.list) < n {
		h := &gemmHelper{wake: make(chan struct{}, 1)}
		gemmHelpers.list = append(gemmHelpers.list, h)
		go h.loop()
	}
	helpers := gemmHelpers.list[:n]
	gemmHelpers.mu.Unlock()
	woke, offered := false, 0
	for _, h := range helpers {
		if !h.next.CompareAndSwap(nil, job) {
			continue
		}
		offered++
		if h.sleeping.Load() {
			select {
			case h.wake <- struct{}{}:
			default:
			}
			woke = true
		}
	}
	if woke {
		// The woken helper sits in this P's run queue, and an idle P
		// does not always come to take it. Yield once so that it starts
		// here while an idle P picks up the caller.
		runtime.Gosched()
	}
	return offered
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
		// No runtime.Gosched here: see gemmSignal.
		if i%256 == 0 && time.Since(start) > helperSpin {
			break
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
