package kernels

import (
	"sync"
	"sync/atomic"
	"time"
)

// gemmSignal lets participants of a parallel GEMM wait for a counter of
// finished items to reach its target. The others' items are short, so a
// waiter polls first; if that takes long (a participant lost its core to
// another process) it blocks, freeing its P. It never calls
// runtime.Gosched: two spinning goroutines yielding to each other can end
// up sharing one P while the other P stays parked, as nothing wakes it.
type gemmSignal struct {
	mu   sync.Mutex
	cond sync.Cond
}

// gemmPollFor bounds the polling before a waiter blocks.
const gemmPollFor = 50 * time.Microsecond

// add counts one finished item and wakes the waiters if it was the last.
func (s *gemmSignal) add(c *atomic.Int32, target int) {
	if int(c.Add(1)) == target {
		s.mu.Lock()
		if s.cond.L != nil {
			s.cond.Broadcast()
		}
		s.mu.Unlock()
	}
}

// wait returns once c has reached target.
func (s *gemmSignal) wait(c *atomic.Int32, target int) {
	start := time.Now()
	for i := 1; int(c.Load()) < target; i++ {
		if i%256 == 0 && time.Since(start) > gemmPollFor {
			s.block(c, target)
			return
		}
	}
}

func (s *gemmSignal) block(c *atomic.Int32, target int) {
	s.mu.Lock()
	if s.cond.L == nil {
		s.cond.L = &s.mu
	}
	for int(c.Load()) < target {
		s.cond.Wait()
	}
	s.mu.Unlock()
}
