package kernels

import (
	"fmt"
	"runtime/debug"
	"sync/atomic"
)

// WorkerPanic is what a parallel loop panics with on the calling goroutine
// when fn panicked on a helper goroutine: the helper's panic value and its
// stack. A panic on a helper goroutine could not be recovered by anyone,
// so the loops catch it there, let every goroutine finish with the shared
// buffers, and raise it again where the caller can recover it (the
// executor turns it into an error of the run).
type WorkerPanic struct {
	Value any
	Stack string
}

func (p *WorkerPanic) Error() string { return fmt.Sprintf("panic in a kernel worker: %v", p.Value) }

// PanicValue and PanicStack let callers that do not import this package
// find the original value and stack.
func (p *WorkerPanic) PanicValue() any    { return p.Value }
func (p *WorkerPanic) PanicStack() string { return p.Stack }

// panicSlot keeps the first panic of a parallel loop's goroutines.
type panicSlot struct{ p atomic.Pointer[WorkerPanic] }

// run calls f, recording a panic instead of letting it unwind further.
func (s *panicSlot) run(f func()) {
	defer func() {
		if r := recover(); r != nil {
			wp, ok := r.(*WorkerPanic)
			if !ok {
				wp = &WorkerPanic{Value: r, Stack: string(debug.Stack())}
			}
			s.p.CompareAndSwap(nil, wp)
		}
	}()
	f()
}

// rethrow panics with the recorded panic, if any, on the caller's
// goroutine; call it once every goroutine of the loop has finished.
func (s *panicSlot) rethrow() {
	if wp := s.p.Load(); wp != nil {
		panic(wp)
	}
}
