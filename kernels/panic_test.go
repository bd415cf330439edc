package kernels

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// catch runs f and returns what it panicked with.
func catch(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}

// TestParallelLoopsRaisePanicsOnTheCaller: a panic in any goroutine of a
// parallel loop comes back on the caller's goroutine as a *WorkerPanic
// with the original value and stack, after every item has run, instead
// of crashing the process or leaving the caller waiting.
func TestParallelLoopsRaisePanicsOnTheCaller(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs 2 Ps for perfRun to use a helper")
	}
	loops := map[string]func(fn func(i int)) int{
		"ParallelFor": func(fn func(i int)) int {
			ParallelFor(4, 4, 1, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					fn(i)
				}
			})
			return 4
		},
		"perfRun": func(fn func(i int)) int {
			perfRun(2, 8, func(_, i int) { fn(i) })
			return 8
		},
		"claimItems": func(fn func(i int)) int {
			flags := make([]atomic.Bool, 8)
			var ps panicSlot
			var done atomic.Int32
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				claimItems(flags, 1, 2, &ps, fn, func() { done.Add(1) })
			}()
			claimItems(flags, 0, 2, &ps, fn, func() { done.Add(1) })
			wg.Wait()
			if done.Load() != 8 {
				t.Errorf("claimItems: %d items done, want 8", done.Load())
			}
			ps.rethrow()
			return 8
		},
	}
	for name, loop := range loops {
		for _, bad := range []int{0, 1, -1} { // item 0, item 1, every item
			var ran atomic.Int32
			r := catch(func() {
				loop(func(i int) {
					ran.Add(1)
					if bad < 0 || i == bad {
						panic("boom")
					}
				})
			})
			wp, ok := r.(*WorkerPanic)
			if !ok || wp.Value != "boom" || !strings.Contains(wp.Stack, "panic_test.go") {
				t.Fatalf("%s, bad item %d: recovered %#v, want a *WorkerPanic of \"boom\" with its stack", name, bad, r)
			}
			if want := loop(func(int) {}); ran.Load() != int32(want) {
				t.Errorf("%s, bad item %d: %d items ran, want all %d", name, bad, ran.Load(), want)
			}
		}
	}
}
