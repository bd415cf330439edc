package exec

import (
	"fmt"
	"runtime/debug"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/tensor"
)

// KernelPanicError reports a panic during a run: a kernel (or the executor
// itself) broke an invariant, which is a bug in gopir, not in the program
// or its feeds. The run is unwound as on any other error: every frame is
// emptied, the operands the kernel owned and the tensors it had allocated
// through ops.Ctx are released, so the allocator is back at its baseline
// and the executable can run again. Allocations a kernel made otherwise
// than through ops.Ctx.New or Zeros cannot be found and stay allocated. A
// panic on a helper goroutine of package kernels' parallel loops is
// raised on the run's goroutine and recovered the same way; one on a
// goroutine a kernel started by itself cannot be recovered by anyone.
type KernelPanicError struct {
	Op    string // the op whose kernel panicked; "" for the executor itself
	Pos   ir.Pos
	Value any    // what the kernel panicked with
	Stack string // the goroutine's stack where it panicked
	// Unwinding is what releasing the run's buffers panicked with in
	// turn (a reference count the kernel broke), or nil.
	Unwinding any
}

func (e *KernelPanicError) Error() string {
	where := "the executor"
	if e.Op != "" {
		where = fmt.Sprintf("the kernel of %q", e.Op)
	}
	also := ""
	if e.Unwinding != nil {
		also = fmt.Sprintf(", and unwinding the run panicked: %v", e.Unwinding)
	}
	return fmt.Sprintf("%s: internal error: %s panicked: %v%s (this is a bug in gopir, please report it with the stack of the KernelPanicError)", e.Pos, where, e.Value, also)
}

// Unwrap returns the panic value when it is an error.
func (e *KernelPanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// workerPanic is what kernels.WorkerPanic provides: a panic that happened
// on a kernel's helper goroutine and was raised again on the run's.
type workerPanic interface {
	PanicValue() any
	PanicStack() string
}

// runTop runs the top-level block, turning a panic into a
// *KernelPanicError after unwinding the run. The recover costs nothing per
// instruction: only kernel records the instruction it runs (e.cur).
func (e *Executable) runTop() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = e.recovered(r, string(debug.Stack()))
		}
	}()
	e.cur = nil
	_, err = e.runBlock(e.top)
	return err
}

// recovered unwinds a run that panicked with r: what an error return would
// have released, block by block, plus what the panicking kernel held.
func (e *Executable) recovered(r any, stack string) error {
	perr := &KernelPanicError{Value: r, Stack: stack}
	if wp, ok := r.(workerPanic); ok {
		perr.Value, perr.Stack = wp.PanicValue(), wp.PanicStack()
	}
	in := e.cur
	e.cur = nil
	if in != nil {
		perr.Op, perr.Pos = in.op.Name(), in.op.Pos
	}
	// Each step runs even if an earlier one panics again (refcounts the
	// kernel left broken): the run must end with an error either way.
	cleanup := func(f func()) {
		defer func() {
			if r2 := recover(); r2 != nil && perr.Unwinding == nil {
				perr.Unwinding = r2
			}
		}()
		f()
	}
	if in != nil && in.kind == kKernel {
		// Operands the kernel still owned (see ops.Ctx.Disown).
		args := e.args[:len(in.inp)]
		for i, x := range args {
			if x != nil && e.kctx.Owns(i) {
				cleanup(x.Release)
			}
			args[i] = nil
		}
	}
	if in != nil && in.kind == kCompute {
		// The results the executor had allocated for the kernel, and its
		// workspace.
		for i, t := range e.results {
			if t != nil {
				e.results[i] = nil
				cleanup(t.Release)
			}
		}
		cleanup(e.releaseWork)
	}
	clear(e.args)
	clear(e.results)
	for _, b := range e.blocks {
		for _, vals := range [][]*tensor.Tensor{b.slots, b.yields} {
			for i, t := range vals {
				if t != nil {
					vals[i] = nil // even if Release panics: the next run needs empty frames
					cleanup(t.Release)
				}
			}
		}
	}
	// What the kernel allocated and had not released or handed on: after
	// the frames are empty, nothing else can hold those tensors, so every
	// remaining reference (the tensor's, its views') is the kernel's.
	if in != nil {
		for _, t := range e.kctx.Made() {
			cleanup(func() { releaseAll(t) })
		}
	}
	e.kctx.Begin(0)
	return perr
}

// releaseAll drops every reference to t's storage.
func releaseAll(t *tensor.Tensor) {
	for t.Refs() > 0 {
		t.Release()
	}
}
