package timeline

import (
	"sync"
	"time"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
)

// Run is one recorded run: its instructions in the order they finished
// and the allocator's events between Begin and End.
type Run struct {
	Label string
	// Base and BaseReserved are the allocator's allocated and reserved
	// bytes at Begin: what the run started with (parameters, optimizer
	// state, its feeds when they share the allocator).
	Base, BaseReserved int64
	Start              time.Time
	Instrs             []Instr
	Events             []Event
}

// Instr is one executed instruction.
type Instr struct {
	Op, Value, Pos string
	Depth          int    // region nesting depth, 0 at top level
	Phase          string // the phase of its top-level op, or ""
	Start, End     time.Duration
	// Events is how many of the run's events happened before the
	// instruction finished: its own are Events[prev.Events:Events].
	Events int
}

// Event is an allocator event of a run and when it happened.
type Event struct {
	memory.Event
	At time.Duration
}

// Peak is the most bytes the run's allocator held at once: Base or more.
func (r *Run) Peak() int64 {
	peak := r.Base
	for _, e := range r.Events {
		peak = max(peak, e.Allocated)
	}
	return peak
}

// Recorder records runs, one at a time. Its Instr method is the
// executable's exec.Options.MemoryLog; records outside Begin and End are
// ignored (an evaluation program sharing the options, say).
type Recorder struct {
	// Phase, if set, names the phase (forward, backward, update) of a
	// top-level op.
	Phase func(*ir.Op) string

	mu    sync.Mutex
	alloc *memory.Allocator
	run   *Run
}

// Begin starts recording a run on a: from now on every allocation and
// free of a, and every instruction Instr receives, belong to it.
func (r *Recorder) Begin(a *memory.Allocator, label string) {
	st := a.Stats()
	run := &Run{Label: label, Base: st.Allocated.Current, BaseReserved: st.Reserved.Current, Start: time.Now()}
	r.mu.Lock()
	r.alloc, r.run = a, run
	r.mu.Unlock()
	a.Observe(func(e memory.Event) {
		// Under a's lock; r.mu orders it with Instr.
		r.mu.Lock()
		run.Events = append(run.Events, Event{Event: e, At: time.Since(run.Start)})
		r.mu.Unlock()
	})
}

// Instr records an instruction of the run being recorded.
func (r *Recorder) Instr(rec exec.MemoryRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	run := r.run
	if run == nil {
		return
	}
	in := Instr{
		Op: rec.Op, Value: rec.Value, Pos: rec.Pos, Depth: rec.Depth,
		Start: rec.Start.Sub(run.Start), End: rec.End.Sub(run.Start), Events: len(run.Events),
	}
	if r.Phase != nil && rec.Node != nil {
		top := rec.Node
		for p := top.ParentOp(); p != nil; p = p.ParentOp() {
			top = p
		}
		in.Phase = r.Phase(top)
	}
	run.Instrs = append(run.Instrs, in)
}

// End stops recording and returns the run.
func (r *Recorder) End() *Run {
	r.mu.Lock()
	a, run := r.alloc, r.run
	r.alloc, r.run = nil, nil
	r.mu.Unlock()
	if a == nil {
		return nil
	}
	a.Observe(nil)
	return run
}
