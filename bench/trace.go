package bench

import (
	"fmt"
	"math"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// The liveness lower bound of one run of a program, computed without
// package exec: a small reference interpreter of its own runs the program
// (the ops' kernels from package ops, its own handling of data, parameter,
// fetch, yield, if and while), never frees anything, and records for every
// buffer (a tensor.Storage: views and shared results are one buffer) its
// size rounded up to the allocator's alignment, the instruction that made
// it and the last instruction that used it. The bound is the largest sum
// of the sizes of the buffers alive at any executed instruction, where a
// buffer is alive from the instruction that makes it to its last use,
// both included (an op's results and its operands coexist while it runs),
// and fetched buffers stay alive to the end. Feeds and parameters are not
// in it (the caller adds their bytes: they are alive throughout).
//
// Instructions are counted dynamically: each op executed inside an if
// branch or a while iteration is one instruction, so shapes, the branch
// taken and the trip counts are those of the actual run. Two variants:
//
//   - Bound: a buffer dies at its last dynamic use, wherever that is: the
//     least any executor that frees at last use (and never updates an
//     operand's buffer in place) can reach.
//   - RegionBound: a value used inside a nested region counts as used by
//     the region's op when that op ends (the ownership rule of
//     the ownership rule (docs/architecture.md): a captured value is released only after the if or the
//     whole while that captures it), and so does the if's or while's
//     condition operand. It equals Bound on straight-line programs.

// Trace is the result of a reference run.
type Trace struct {
	Bound       int64 // intermediate bytes, buffers die at their last use
	RegionBound int64 // intermediate bytes, captured values held to the end of their region op
	// WorkspaceBound is RegionBound with, at each instruction, the
	// scratch memory its kernel took from the allocator beside its
	// operands and results (an im2col buffer, say): the allocator's peak
	// during the kernel less what it held after. It models an executor
	// that follows the ownership rules and frees at last use, with the
	// kernels as they are.
	WorkspaceBound int64
	Instrs         int // instructions executed
	Buffers        int // buffers made
}

type interval struct {
	bytes           int64
	birth           int
	last, lastRules int
}

type tracer struct {
	ctx      ops.Ctx
	feeds    map[string]*tensor.Tensor
	params   map[string]*tensor.Tensor
	kernels  map[*ir.Op]ops.Kernel
	captured map[*ir.Op][]*ir.Value
	env      map[*ir.Value]*tensor.Tensor
	outside  map[*tensor.Storage]bool // feeds' and parameters' buffers
	bufs     map[*tensor.Storage]*interval
	keep     []*tensor.Tensor // every reference the run made, released at the end
	align    int64
	clock    int
	alloc    *memory.Allocator
	scratch  map[int]int64 // kernel workspace bytes by instruction
}

// TraceRun runs p once on feeds and params (which it may update in place:
// pass copies) with kernels allocating from a and using threads
// goroutines (which can change their scratch memory), and returns its
// bounds. seed and run key the random ops as exec.Options.Seed and
// exec.Executable.SetRuns do.
func TraceRun(p *ir.Program, a *memory.Allocator, feeds, params map[string]*tensor.Tensor, threads int, seed, run int64) (Trace, error) {
	align := a.Options().Alignment
	if align == 0 {
		align = memory.DefaultAlignment
	}
	t := &tracer{
		ctx:      ops.Ctx{Alloc: a, Threads: max(1, threads), Seed: seed, Run: run},
		feeds:    feeds,
		params:   params,
		kernels:  map[*ir.Op]ops.Kernel{},
		captured: map[*ir.Op][]*ir.Value{},
		env:      map[*ir.Value]*tensor.Tensor{},
		outside:  map[*tensor.Storage]bool{},
		bufs:     map[*tensor.Storage]*interval{},
		align:    align,
		alloc:    a,
		scratch:  map[int]int64{},
	}
	defer func() {
		for _, x := range t.keep {
			x.Release()
		}
	}()
	for _, m := range []map[string]*tensor.Tensor{feeds, params} {
		for _, x := range m {
			t.outside[x.Storage()] = true
		}
	}
	if _, err := t.block(p.Body()); err != nil {
		return Trace{}, err
	}
	tr := Trace{Instrs: t.clock, Buffers: len(t.bufs)}
	tr.Bound, _ = t.peak(func(iv *interval) int { return iv.last })
	tr.RegionBound, tr.WorkspaceBound = t.peak(func(iv *interval) int { return iv.lastRules })
	return tr, nil
}

// peak sums the sizes of the buffers alive at each instruction, a buffer
// being alive over [birth, end(iv)], and returns the largest sum, and the
// largest sum plus the instruction's kernel workspace.
func (t *tracer) peak(end func(*interval) int) (live, withScratch int64) {
	delta := make([]int64, t.clock+2)
	for _, iv := range t.bufs {
		delta[iv.birth] += iv.bytes
		if e := end(iv); e < math.MaxInt {
			delta[e+1] -= iv.bytes
		}
	}
	var cur int64
	for at := range delta {
		cur += delta[at]
		live = max(live, cur)
		withScratch = max(withScratch, cur+t.scratch[at])
	}
	return live, withScratch
}

// use records that x is read at instruction at (for both variants).
func (t *tracer) use(x *tensor.Tensor, at int) {
	if iv := t.bufs[x.Storage()]; iv != nil {
		iv.last = max(iv.last, at)
		iv.lastRules = max(iv.lastRules, at)
	}
}

// useRules records a use that counts for RegionBound only.
func (t *tracer) useRules(x *tensor.Tensor, at int) {
	if iv := t.bufs[x.Storage()]; iv != nil {
		iv.lastRules = max(iv.lastRules, at)
	}
}

// made records x as a result of instruction at: a new buffer, or one more
// value of a buffer that exists (a view or a shared result).
func (t *tracer) made(x *tensor.Tensor, at int) {
	t.keep = append(t.keep, x)
	s := x.Storage()
	if x.IsStack() || t.outside[s] {
		return
	}
	if iv := t.bufs[s]; iv != nil {
		t.use(x, at)
		return
	}
	n := (s.Bytes() + t.align - 1) / t.align * t.align
	t.bufs[s] = &interval{bytes: n, birth: at, last: at, lastRules: at}
}

func (t *tracer) get(v *ir.Value) (*tensor.Tensor, error) {
	x, ok := t.env[v]
	if !ok {
		return nil, fmt.Errorf("bench: value %d used before it was computed", v.ID())
	}
	return x, nil
}

func (t *tracer) operands(op *ir.Op) ([]*tensor.Tensor, error) {
	in := make([]*tensor.Tensor, op.NumOperands())
	for i, v := range op.Operands() {
		x, err := t.get(v)
		if err != nil {
			return nil, err
		}
		in[i] = x
	}
	return in, nil
}

// block runs the ops of b and returns what its yield hands over.
func (t *tracer) block(b *ir.Block) ([]*tensor.Tensor, error) {
	for _, op := range b.Ops() {
		switch op.Name() {
		case "data", "parameter":
			name, err := op.Attrs.Str("name")
			if err != nil {
				return nil, err
			}
			src := t.feeds
			if op.Name() == "parameter" {
				src = t.params
			}
			x, ok := src[name]
			if !ok {
				return nil, fmt.Errorf("bench: no %s %q", op.Name(), name)
			}
			t.env[op.Result(0)] = x
		case "fetch":
			x, err := t.get(op.Operand(0))
			if err != nil {
				return nil, err
			}
			t.clock++
			t.use(x, math.MaxInt) // the caller holds it to the end
		case "yield":
			in, err := t.operands(op)
			if err != nil {
				return nil, err
			}
			t.clock++
			for _, x := range in {
				t.use(x, t.clock)
			}
			return in, nil
		case "if", "while":
			if err := t.region(op); err != nil {
				return nil, err
			}
		default:
			if err := t.kernel(op); err != nil {
				return nil, err
			}
		}
	}
	return nil, nil
}

func (t *tracer) kernel(op *ir.Op) error {
	k, ok := t.kernels[op]
	if !ok {
		var err error
		if k, err = ops.Bind(op); err != nil {
			return fmt.Errorf("bench: %s %q: %w", op.Pos, op.Name(), err)
		}
		t.kernels[op] = k
	}
	in, err := t.operands(op)
	if err != nil {
		return err
	}
	t.clock++
	t.alloc.ResetPeak()
	outs, err := k(&t.ctx, in)
	if err != nil {
		return fmt.Errorf("bench: %s %q: %w", op.Pos, op.Name(), err)
	}
	st := t.alloc.Stats().Allocated
	if ws := st.Peak - st.Current; ws > 0 {
		// Memory the kernel held for a while beyond its results: added
		// to the live bytes at this instruction (which include the
		// results), it gives the allocator's true peak during the
		// kernel, whether the scratch was taken before or beside the
		// results.
		t.scratch[t.clock] = ws
	}
	for _, x := range in {
		t.use(x, t.clock)
	}
	for i, x := range outs {
		t.made(x, t.clock)
		t.env[op.Result(i)] = x
	}
	return nil
}

// region runs an if or a while.
func (t *tracer) region(op *ir.Op) error {
	in, err := t.operands(op)
	if err != nil {
		return err
	}
	t.clock++
	for _, x := range in {
		t.use(x, t.clock)
	}
	var out []*tensor.Tensor
	switch op.Name() {
	case "if":
		r := op.Region(1)
		if in[0].Bool()[0] {
			r = op.Region(0)
		}
		if out, err = t.block(r.Block()); err != nil {
			return err
		}
	case "while":
		body := op.Region(0).Block()
		cond, vals := in[0].Bool()[0], in[1:]
		for cond {
			for i, a := range body.Args() {
				t.env[a] = vals[i]
			}
			y, err := t.block(body)
			if err != nil {
				return err
			}
			cond, vals = y[0].Bool()[0], y[1:]
		}
		out = vals
	}
	for i, x := range out {
		t.env[op.Result(i)] = x
	}
	// The op ends: under the ownership rules, its condition operand and
	// what it captured die no earlier than now (the initial values of a
	// while move into the loop when they die there).
	t.clock++
	t.useRules(in[0], t.clock)
	for _, v := range t.captures(op) {
		if x, ok := t.env[v]; ok {
			t.useRules(x, t.clock)
		}
	}
	return nil
}

// captures lists the values defined outside op that ops inside its regions
// use.
func (t *tracer) captures(op *ir.Op) []*ir.Value {
	if c, ok := t.captured[op]; ok {
		return c
	}
	seen := map[*ir.Value]bool{}
	var c []*ir.Value
	for _, r := range op.Regions() {
		ir.WalkBlock(r.Block(), func(inner *ir.Op) bool {
			for _, v := range inner.Operands() {
				inside := false
				for _, r2 := range op.Regions() {
					if r2.Block().Encloses(v.Block()) {
						inside = true
					}
				}
				if !inside && !seen[v] {
					seen[v] = true
					c = append(c, v)
				}
			}
			return true
		})
	}
	t.captured[op] = c
	return c
}
