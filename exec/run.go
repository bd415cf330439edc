package exec

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// runState is what one Run uses; runs are serialized by mu.
type runState struct {
	mu       sync.Mutex
	runs     int64
	kctx     ops.Ctx
	done     <-chan struct{}
	ctx      context.Context
	feedv    map[string]*tensor.Tensor
	out      Results
	detach   bool // the results' Go objects must not come back to the pool (Run)
	tags     bool
	log      bool           // MemoryLog or Trace set
	cur      *instr         // the kernel instruction running, for KernelPanicError
	work     *tensor.Tensor // the running Compute kernel's workspace
	workDims [1]int         // its shape
}

// Results maps fetch names to tensors the caller owns.
type Results map[string]*tensor.Tensor

// Release releases every result.
func (r Results) Release() {
	for n, t := range r {
		t.Release()
		delete(r, n)
	}
}

// OpError is a failure of one op during a run. errors.As reaches the cause,
// such as a *memory.ResourceExhausted.
type OpError struct {
	Op  string
	Pos ir.Pos
	Err error
}

func (e *OpError) Error() string { return fmt.Sprintf("%s: %q: %v", e.Pos, e.Op, e.Err) }
func (e *OpError) Unwrap() error { return e.Err }

// SetRuns sets the number of runs started so far, which keys the random
// streams of ops without a seed of their own: a training loop resumed at
// step n sets n to draw the same numbers as the original run.
func (e *Executable) SetRuns(n int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.runs = n
}

// Runs is the number of runs started so far.
func (e *Executable) Runs() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.runs
}

// Run executes the program once with the given feeds (keyed by the "data"
// ops' names) and returns the fetched values, which the caller must
// release. Run does not take over the feeds: the caller still owns them. On
// error no result is returned and every buffer the run made is released.
//
// Cancelling ctx stops the run before its next instruction, unless the run
// has begun to update the store in place (an op with ops.Def.Writes, such
// as an optimizer's update): such a run goes on to the end, so a training
// step is never left half applied.
//
// A kernel that panics makes the run fail with a *KernelPanicError, after
// the same unwinding.
//
// In a data-parallel job (Options.Comm) a run that fails after an
// all_reduce_start waits for that bucket's sum before freeing it, since
// another process writes into it. Every rank must run every step: a
// cancelled run on one rank leaves the others waiting in a collective, so
// callers such as package train cancel between runs, on all ranks at
// once.
func (e *Executable) Run(ctx context.Context, feeds map[string]*tensor.Tensor) (Results, error) {
	out := make(Results, len(e.fetches))
	if err := e.run(ctx, feeds, out, true); err != nil {
		return nil, err
	}
	return out, nil
}

// RunInto is Run for a serving loop that runs the same program again and
// again: it makes no Go heap object once a run like it has been made
// (same feed shapes, same branches). The caller provides the results map:
// out must be empty (Results.Release empties it) and receives the fetched
// values; on error it stays empty. A map that held this program's
// fetches before has room for them.
//
// The results' Go objects (header, storage handle) come back to the
// executable when their last reference is released, for the next run's
// tensors, as the run's own intermediate values do: a result must not be
// used, or released again, after its last release. Debug mode
// (tensor.SetDebug) turns the reuse off and catches both. Run's results
// never come back: they are safe to misuse that way (debug mode catches
// it too).
func (e *Executable) RunInto(ctx context.Context, feeds map[string]*tensor.Tensor, out Results) error {
	return e.run(ctx, feeds, out, false)
}

func (e *Executable) run(ctx context.Context, feeds map[string]*tensor.Tensor, out Results, detach bool) error {
	if out == nil {
		return errors.New("exec: RunInto with a nil Results map")
	}
	if len(out) > 0 {
		return fmt.Errorf("exec: RunInto with a Results map that holds %d values: release them first (Results.Release empties the map)", len(out))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	run := e.runs
	e.runs++
	if err := e.checkFeeds(feeds); err != nil {
		return err
	}
	if err := e.checkParams(); err != nil {
		return err
	}
	var before map[uint64]bool
	if e.opts.CheckLeaks {
		before = liveSet(e.alloc)
	}
	k := &e.kctx // keeps the capacity of its list of allocations (ops.Ctx.Made)
	k.Alloc, k.Threads, k.Seed, k.Run, k.Results, k.Track, k.Pool = e.alloc, e.threads, e.opts.Seed, run, e.results, true, &e.pool
	k.Comm = e.opts.Comm
	e.log = e.opts.MemoryLog != nil || e.opts.Trace != nil
	e.ctx, e.done, e.feedv = ctx, ctx.Done(), feeds
	e.out, e.detach = out, detach
	e.tags = e.opts.CheckLeaks || e.alloc.Options().HistoryCap > 0 || e.opts.MemoryLog != nil || e.opts.Trace != nil
	err := e.runTop()
	// Collectives a failed run started are waited for before their
	// buckets go back to the allocator.
	if serr := k.Settle(); err == nil && serr != nil {
		err = fmt.Errorf("collective ops: %w", serr)
	}
	e.pool.Reclaim() // every frame is empty: the views the run lent are free
	e.out, e.feedv, e.ctx = nil, nil, nil
	if err != nil {
		out.Release()
		return err
	}
	if e.opts.CheckLeaks {
		if err := e.checkLeaks(run, before, out); err != nil {
			out.Release()
			return err
		}
	}
	return nil
}

// runBlock runs the instructions of b, whose block arguments (if any) are
// already in its frame, and returns what its yield hands over (valid until
// b runs again). On error, b's frame is emptied.
func (e *Executable) runBlock(b *blockCode) ([]*tensor.Tensor, error) {
	for _, s := range b.dropEntry {
		b.release(s)
	}
	for i := range b.instrs {
		in := &b.instrs[i]
		if e.done != nil {
			select {
			case <-e.done:
				b.clearFrame()
				return nil, fmt.Errorf("run cancelled at %s %q: %w", in.op.Pos, in.op.Name(), e.ctx.Err())
			default:
			}
		}
		if in.writes {
			// The run starts changing the store: from here it finishes, so
			// that a cancelled step leaves the store as it was before the
			// step or as it is after it, never half updated.
			e.done = nil
		}
		var err error
		var start time.Time
		if e.log {
			start = time.Now()
		}
		switch in.kind {
		case kCompute:
			err = e.compute(in)
		case kKernel:
			err = e.kernel(in)
		default:
			err = e.step(b, in)
		}
		if err != nil {
			b.clearFrame()
			return nil, err
		}
		for _, p := range in.dropp {
			if t := *p; t != nil {
				t.Release()
				*p = nil
			}
		}
		if e.kctx.Pending() > 0 {
			e.kctx.Progress() // buckets in flight (ops/collective.go)
		}
		if e.log {
			e.logMemory(b, in, start)
		}
	}
	if b.yields != nil {
		return b.yields, nil
	}
	return nil, nil
}

func (b *blockCode) release(slot int) {
	if t := b.slots[slot]; t != nil {
		t.Release()
		b.slots[slot] = nil
	}
}

// clearFrame releases every value the frame still holds.
func (b *blockCode) clearFrame() {
	for s := range b.slots {
		b.release(s)
	}
}

func (e *Executable) step(b *blockCode, in *instr) error {
	switch in.kind {
	case kKernel:
		return e.kernel(in)
	case kCompute:
		return e.compute(in)
	case kData:
		b.slots[in.out[0]] = e.feedv[in.name].Retain()
	case kParameter:
		t, _ := e.store.Get(in.name)
		b.slots[in.out[0]] = t.Retain()
	case kFetch:
		t := in.in[0].get()
		if e.detach {
			// Run's caller may keep a pointer to a result after
			// releasing it: its Go objects must not come back.
			tensor.Detach(t)
		} else {
			tensor.Keep(t) // the caller holds it past the run
		}
		e.out[in.name] = t.Retain()
	case kYield:
		for i, r := range in.in {
			b.yields[i] = r.get().Retain()
		}
	case kRegion:
		return in.region.run(e, b, in)
	}
	return nil
}

func (e *Executable) kernel(in *instr) error {
	args := e.args[:len(in.inp)]
	for i, p := range in.inp {
		args[i] = *p
	}
	if d := in.donate; d != 0 {
		for i, p := range in.inp {
			if d&(1<<uint(i)) != 0 {
				*p = nil // the kernel owns it now
			}
		}
	}
	e.kctx.Begin(in.donate)
	if e.tags {
		tag := in.tag
		tag.Step = e.kctx.Run
		e.alloc.SetTag(tag)
	}
	e.cur = in
	outs, err := in.kernel(&e.kctx, args)
	e.cur = nil
	touchWritten(in, args)
	if err == nil && e.tags && in.donate != 0 {
		e.retagReused(in, args, outs)
	}
	for i := range in.inp { // not clear(args): a runtime call costs more for one or two
		args[i] = nil
	}
	if err != nil {
		return &OpError{Op: in.op.Name(), Pos: in.op.Pos, Err: err}
	}
	if err := checkOutputs(in, outs); err != nil {
		for _, t := range outs {
			if t != nil {
				t.Release()
			}
		}
		e.clearResults(len(outs))
		return err
	}
	for i, t := range outs {
		*in.outp[i] = t
	}
	e.clearResults(len(outs)) // the kernel may have returned them in it
	return nil
}

// touchWritten marks the operands in updated in place (ops.Def.Writes)
// as changed, so that whoever derived something from them (another
// executable's packed copy of a parameter) derives it again. An op that
// failed may have written part of them, so this runs either way.
func touchWritten(in *instr, args []*tensor.Tensor) {
	for _, i := range in.written {
		if i < len(args) && args[i] != nil {
			args[i].Storage().Touch()
		}
	}
}

// retagReused gives each donated operand that the kernel returned as a
// result (updated in place) the tag of this instruction, so that leak
// reports name the op whose value the buffer holds. The allocator's tag is
// this instruction's already. Only pointer identity is compared: operands
// the kernel released are not touched.
func (e *Executable) retagReused(in *instr, args, outs []*tensor.Tensor) {
	for i, x := range args {
		if in.donate&(1<<uint(i)) == 0 {
			continue
		}
		for _, t := range outs {
			if t == x {
				if blk := t.Storage().Block(); blk != nil {
					e.alloc.Retag(blk)
				}
				break
			}
		}
	}
}

// clearResults drops the scratch's references to the n results a kernel
// may have returned in it (ops.Ctx.Results).
func (e *Executable) clearResults(n int) {
	r := e.results[:min(n, len(e.results))]
	for i := len(r) - 1; i >= 0; i-- {
		r[i] = nil
	}
}

// checkOutputs guards against a kernel whose results disagree with the
// types the program promises; that is a bug in the kernel, reported as an
// error rather than a corrupted run.
func checkOutputs(in *instr, outs []*tensor.Tensor) error {
	if len(outs) != len(in.types) {
		return in.errorf("kernel returned %d results, op has %d", len(outs), len(in.types))
	}
	for i, t := range outs {
		if t == nil {
			return in.errorf("kernel returned nil for result %d", i)
		}
		if !fits(t, &in.types[i]) {
			return in.errorf("kernel returned %s for result %d of type %s", describeTensor(t), i, in.types[i])
		}
	}
	return nil
}

// fits reports whether tensor t has type typ.
func fits(t *tensor.Tensor, typ *ir.Type) bool {
	if typ.IsStack() || t.IsStack() {
		if !typ.IsStack() || !t.IsStack() {
			return false
		}
		for i := range t.StackLen() {
			if !fits(t.StackItem(i), typ.Elem) {
				return false
			}
		}
		return true
	}
	shape, dims := t.Shape(), typ.Dims
	if typ.Unranked {
		return ir.DType(t.DType()) == typ.DType
	}
	if ir.DType(t.DType()) != typ.DType || len(shape) != len(dims) {
		return false
	}
	for i, d := range shape {
		if dims[i] != ir.Dynamic && dims[i] != d {
			return false
		}
	}
	return true
}

func describeTensor(t *tensor.Tensor) string {
	if t.IsStack() {
		return "a stack"
	}
	return ir.TensorOf(ir.DType(t.DType()), t.Shape()...).String()
}

func (e *Executable) logMemory(b *blockCode, in *instr, start time.Time) {
	st := e.alloc.Stats()
	rec := MemoryRecord{
		Run: e.kctx.Run, Op: in.op.Name(), Value: in.tag.Value, Pos: in.tag.Pos, Depth: b.depth,
		Allocated: st.Allocated.Current, Reserved: st.Reserved.Current,
		Node: in.op, Start: start, End: time.Now(),
	}
	if e.opts.MemoryLog != nil {
		e.opts.MemoryLog(rec)
	}
	if e.opts.Trace != nil {
		fmt.Fprintf(e.opts.Trace, "run %d %*s%-14s %-6s allocated %d reserved %d  %s\n",
			rec.Run, 2*rec.Depth, "", rec.Op, rec.Value, rec.Allocated, rec.Reserved, rec.Pos)
	}
}
