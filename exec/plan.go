package exec

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// The static memory planner: it computes the allocated bytes of a run —
// the peak, what is held at the end, and the buffers alive at the peak —
// without running any kernel. It follows the compiled program exactly as
// a run would (docs/memory.md): the same instructions, frames, last uses,
// donations and in-place decisions, the result types that each op's Infer
// hook gives for the operands' shapes (the executor allocates exactly
// those for ops with ops.Compute), each op's workspace, and the
// allocator's rounding of every block to its alignment. Where a run
// depends on values — the branch an "if" takes, how many times a "while"
// runs, the sizes an op reads from its operands — the planner follows a
// recorded path (PlanOptions.Path) or says what it assumed. Without a
// path it still knows the conditions it can compute: an op whose operands
// are all known scalars (constants, and what is computed from them, such
// as a loop's trip counter) is run on them, so a condition that follows
// from counters is followed, not guessed; only those that depend on
// feeds or parameters are.

// PlanOptions describe the run to plan.
type PlanOptions struct {
	// Feeds gives the static type of each feed (the types of the run's
	// tensors). A feed whose data op's type is static may be left out.
	Feeds map[string]ir.Type
	// FeedsAllocated counts the feeds' bytes as allocated on the run's
	// allocator before the run (a training loop allocates its batches
	// there); otherwise they are the caller's.
	FeedsAllocated bool
	// Path lists the values of the conditions a run evaluates, in order (as
	// Options.Conditions reports them): with it the planner follows the
	// run's branches and trip counts and is exact. Without it, an "if"
	// takes the branch that reaches the higher peak and a "while" runs
	// Trips iterations.
	Path []bool
	// Trips is how many iterations a "while" runs when Path does not say
	// (default 1).
	Trips int
	// Replay, if set, is an allocator on which the planner also allocates
	// and frees every buffer it plans, in the order the run would: blocks
	// of the planned sizes, nothing written to them. Where the run would
	// not find room on an allocator in that state (its limit, and the
	// holes its earlier blocks leave), Plan fails with the *OpError a run
	// would, wrapping *memory.ResourceExhausted. Every block is freed
	// again before Plan returns, so the allocator is left as it was.
	Replay *memory.Allocator
	// Warm plans a run that finds every packed copy of a parameter
	// (Options.PackCache) made already, as every run after the first does:
	// the copies the first run makes as it goes are then held from the
	// start, so such a run may peak higher.
	Warm bool
	// warm is, for a Warm plan, the first run's pack cache as it leaves
	// it: the slots it went through and the bytes held.
	warm *planner
}

// Plan is the planner's prediction for one run.
type Plan struct {
	// Base is the allocated bytes before the run: the parameters and
	// optimizer state in the store (and the feeds with FeedsAllocated),
	// and the packed copies of parameters the executable holds
	// (Options.PackCache).
	Base int64
	// Peak is the most bytes allocated at once during the run, Base
	// included: what allocator.Stats().Allocated.Peak reads after the run
	// (with the peak reset just before it).
	Peak int64
	// End is the bytes allocated when the run returns, its fetches held.
	End int64
	// Packed is the bytes of the packed copies of parameters the
	// executable holds when the run returns (Options.PackCache): part of
	// End, and of Base for those it held before.
	Packed int64
	// AtPeak lists the buffers the run had allocated at the peak, largest
	// first (Base is not listed).
	AtPeak []PlannedBuffer
	// PeakAt is where the peak is reached: the top-level op running then
	// and, when that op has regions, the op of its region running then,
	// and so on inwards. Empty when the peak is Base.
	PeakAt []*ir.Op
	// Profile holds, for each top-level op in order, the most bytes
	// allocated while it runs (Base included): the peak seen from every
	// point of the run, for passes that lower more than the highest one.
	Profile []int64
	// Assumed says where the plan is not known to follow the run: an "if"
	// whose branch was guessed, a "while" whose trip count was. Empty when
	// the plan is exact.
	Assumed []string
	// PerTrip is, when trip counts were guessed (PlanOptions.Trips), how
	// many bytes the peak grows by for each more trip of every guessed
	// "while": the stacks the backward pass of a loop keeps grow with the
	// trip count T, so Peak(T) = Peak + PerTrip·(T − Trips). Zero when the
	// peak does not depend on the trip count.
	PerTrip int64
}

// PlannedBuffer is one buffer of a plan: the op, value and position that
// made it (as the allocator's tags say), its bytes, and whether it is a
// workspace.
type PlannedBuffer struct {
	Op, Value string
	Pos       ir.Pos
	Bytes     int64
	Workspace bool
}

// UnplannableError says that the planner cannot size a value without
// running the program: an op whose results' sizes depend on operand
// values, or a feed whose type is not static.
type UnplannableError struct {
	Op    string
	Value string // the op's first result (%7), or ""
	Pos   ir.Pos
	Msg   string
}

func (e *UnplannableError) Error() string {
	if e.Value != "" {
		return fmt.Sprintf("%s: %q (%s): cannot plan: %s", e.Pos, e.Op, e.Value, e.Msg)
	}
	return fmt.Sprintf("%s: %q: cannot plan: %s", e.Pos, e.Op, e.Msg)
}

// unplannable is the UnplannableError of instruction in.
func unplannable(in *instr, msg string) *UnplannableError {
	return &UnplannableError{Op: in.op.Name(), Value: in.tag.Value, Pos: in.op.Pos, Msg: msg}
}

// resultsError explains why the result types of in could not be had from
// its operands' types.
func resultsError(in *instr, err error) *UnplannableError {
	var vd *ops.ValueDependentError
	if errors.As(err, &vd) {
		what := in.tag.Value
		if vd.Result > 0 || what == "" {
			what = fmt.Sprintf("result %d", vd.Result)
		}
		return unplannable(in, fmt.Sprintf("the shape of %s (%s) depends on the values of the op's operands, which a plan does not see; only a run knows it", what, vd.Type))
	}
	return unplannable(in, err.Error())
}

// maxBranchPlans bounds how many combinations of unknown branches Plan
// explores before it gives up on the rest (and says so in Assumed).
const maxBranchPlans = 1024

// Plan predicts the memory of one run of x with the given feeds' types.
// The store's parameters must be set (their shapes are read).
//
// Where the path is not given, every combination of the unknown
// conditions is planned and the one that peaks higher kept. Conditions
// are tied to their values: an "if" on a condition an earlier one read
// (the backward pass's "if" on the forward's condition) takes the same
// branch, so each combination is a run that can happen.
func (e *Executable) Plan(opts PlanOptions) (*Plan, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if opts.Trips <= 0 {
		opts.Trips = 1
	}
	if opts.Warm {
		cold := opts
		cold.Warm = false
		first, err := e.planBest(cold)
		if err != nil {
			return nil, err
		}
		opts.warm = first
	}
	best, err := e.planBest(opts)
	if err != nil {
		return nil, err
	}
	var perTrip int64
	if best.guessedTrips {
		// Stacks that grow with the trip count make the peak grow
		// with it: one more trip tells by how much.
		more := opts
		more.Trips++
		next, err := e.planBest(more)
		if err != nil {
			return nil, err
		}
		perTrip = next.peak - best.peak
		if perTrip != 0 {
			best.assumed = append(best.assumed, fmt.Sprintf("each more trip of the \"while\" adds %d bytes to the peak: peak = %d + %d × (trips − %d)", perTrip, best.peak, perTrip, opts.Trips))
		} else {
			best.assumed = append(best.assumed, "the peak does not depend on the trip counts of the \"while\" loops")
		}
	}
	plan := &Plan{Base: best.base, Peak: best.peak, End: best.cur, Packed: best.packed, PerTrip: perTrip, PeakAt: best.peakAt, Profile: best.profile}
	for _, a := range best.assumed {
		if !slices.Contains(plan.Assumed, a) { // a loop's backward loop says it again
			plan.Assumed = append(plan.Assumed, a)
		}
	}
	for _, b := range best.atPeak {
		plan.AtPeak = append(plan.AtPeak, PlannedBuffer{Op: b.op, Value: b.value, Pos: b.pos, Bytes: b.bytes, Workspace: b.work})
	}
	sort.SliceStable(plan.AtPeak, func(i, j int) bool { return plan.AtPeak[i].Bytes > plan.AtPeak[j].Bytes })
	return plan, nil
}

// planBest plans every combination of the unknown branches and returns
// the one that peaks highest.
func (e *Executable) planBest(opts PlanOptions) (*planner, error) {
	var best *planner
	var guess []bool
	for runs := 0; ; runs++ {
		p, err := e.planOnce(opts, guess)
		if err != nil {
			return nil, err
		}
		if best == nil || p.peak > best.peak {
			best = p
		}
		// The next combination: the decisions taken, counted up in
		// binary from the last (false before true).
		guess = p.decided
		for len(guess) > 0 && guess[len(guess)-1] {
			guess = guess[:len(guess)-1]
		}
		if len(guess) == 0 {
			return best, nil
		}
		if runs+1 == maxBranchPlans {
			best.assumed = append(best.assumed, fmt.Sprintf("planned only %d combinations of the unknown branches", maxBranchPlans))
			return best, nil
		}
		guess[len(guess)-1] = true
	}
}

// planOnce plans one run, taking the unknown branches guess says in
// order (false past its end).
func (e *Executable) planOnce(opts PlanOptions, guess []bool) (*planner, error) {
	p := &planner{e: e, opts: opts, guess: guess, guessed: map[*sbuf]bool{}, folds: map[*instr]ops.Kernel{},
		frames: map[*blockCode][]*sval{}, yields: map[*blockCode][]*sval{}, params: map[string]bool{}}
	// The store's values (parameters, optimizer state), or, for those not
	// created yet, the types the program reads them with.
	for _, n := range e.store.Names() {
		t, _ := e.store.Get(n)
		p.base += p.round(t.Bytes())
	}
	for _, prm := range e.params {
		if _, ok := e.store.Get(prm.name); ok || p.params[prm.name] {
			continue
		}
		p.params[prm.name] = true
		if !prm.typ.IsStatic() {
			return nil, fmt.Errorf("plan: parameter %q has type %s and is not in the store", prm.name, prm.typ)
		}
		p.base += p.round(bytesOf(prm.typ))
	}
	p.feeds = map[string]*sval{}
	for _, f := range e.feeds {
		t := f.typ
		if given, ok := opts.Feeds[f.name]; ok {
			if !given.Refines(f.typ) {
				return nil, fmt.Errorf("plan: feed %q: type %s does not fit the program's %s", f.name, given, f.typ)
			}
			t = given
		}
		if !t.IsStatic() {
			return nil, &UnplannableError{Op: "data", Pos: f.pos, Msg: fmt.Sprintf("feed %q has type %s; give its shape", f.name, t)}
		}
		v := &sval{b: &sbuf{refs: 1}, typ: t}
		if opts.FeedsAllocated {
			p.base += p.round(bytesOf(t))
		}
		p.feeds[f.name] = v
	}
	// The pack cache's copies held now (they stay unless a run finds
	// them stale).
	p.packed = e.packBytes
	if w := opts.warm; w != nil {
		p.packed = w.packed
		p.packsSeen = maps.Clone(w.packsSeen)
	}
	p.base += p.packed
	p.cur, p.peak = p.base, p.base
	err := p.block(e.top)
	p.unreplay()
	if err != nil {
		return nil, err
	}
	return p, nil
}

// sbuf is a simulated storage: its allocator bytes and references, and
// for a stack its items.
type sbuf struct {
	bytes int64
	refs  int
	blk   *memory.Block // on PlanOptions.Replay
	items []*sval
	// who made it, for AtPeak
	op, value string
	pos       ir.Pos
	work      bool
	live      bool
}

// sval is a simulated tensor (a header on a storage) or stack, and its
// value when the planner knows it (a scalar computed from constants).
type sval struct {
	b     *sbuf
	typ   ir.Type
	known *tensor.Tensor
}

func (v *sval) retain() *sval { v.b.refs++; return v }

type planner struct {
	e       *Executable
	opts    PlanOptions
	base    int64
	cur     int64
	peak    int64
	live    []*sbuf
	atPeak  []*sbuf
	running []*ir.Op // the op being planned and those around it, outermost first
	peakAt  []*ir.Op // running when the peak was reached
	profile []int64  // the most allocated during each top-level op
	frames  map[*blockCode][]*sval
	yields  map[*blockCode][]*sval
	feeds   map[string]*sval
	params  map[string]bool // parameters planned from their types
	path    int
	assumed []string
	// Unknown branches: the decisions to take (guess), those taken
	// (decided), and the decision for each condition read so far.
	guess   []bool
	decided []bool
	guessed map[*sbuf]bool
	// guessedTrips: a "while" ran Trips times, not a recorded count.
	guessedTrips bool
	// Folding known scalars: the kernels bound so far and the allocator
	// of the values they make (not the run's).
	folds   map[*instr]ops.Kernel
	scratch *memory.Allocator
	// The pack cache as the run would leave it: the slots planned so far
	// and the bytes held.
	packsSeen map[*packSlot]bool
	packed    int64
}

// maxFold is the most elements a result may have for the planner to
// compute it.
const maxFold = 1

// fold computes the results of in when all its operands are known and
// its results are scalars: for the conditions of loops and branches that
// follow from constants and counters. It never folds random ops or ops
// that update operands in place; a kernel that fails leaves the results
// unknown.
func (p *planner) fold(in *instr, args, outs []*sval) {
	if in.writes || ops.Random(in.op) {
		return
	}
	vals := make([]*tensor.Tensor, len(args))
	for i, a := range args {
		if a.known == nil {
			return
		}
		vals[i] = a.known
	}
	for _, o := range outs {
		if o.typ.IsStack() || !o.typ.IsStatic() || o.typ.NumElements() > maxFold {
			return
		}
	}
	k, ok := p.folds[in]
	if !ok {
		k, _ = ops.Bind(in.op)
		p.folds[in] = k
	}
	if k == nil {
		return
	}
	if p.scratch == nil {
		p.scratch = memory.New(memory.Options{ChunkSize: 4096})
	}
	defer func() {
		if recover() != nil { // a kernel bug: the run will report it; the plan guesses
			for _, o := range outs {
				o.known = nil
			}
		}
	}()
	res, err := k(&ops.Ctx{Alloc: p.scratch, Threads: 1}, vals)
	if err != nil || len(res) != len(outs) {
		return
	}
	for i, o := range outs {
		o.known = res[i]
	}
}

// decide returns the value of condition v: the next of the recorded path,
// else v's when the planner knows it; guessed says that neither did.
func (p *planner) decide(v *sval) (value, guessed bool) {
	if p.path < len(p.opts.Path) {
		c := p.opts.Path[p.path]
		p.path++
		return c, false
	}
	if v != nil && v.known != nil && v.known.DType() == tensor.Bool && v.known.Len() == 1 {
		return v.known.Bool()[0], false
	}
	return false, true
}

func (p *planner) round(n int64) int64 {
	al := p.e.alloc.Options().Alignment
	return (n + al - 1) &^ (al - 1)
}

func bytesOf(t ir.Type) int64 { return int64(t.NumElements()) * int64(t.DType.Size()) }

// alloc makes a storage of t's size for instruction in.
func (p *planner) alloc(in *instr, t ir.Type, work bool) (*sval, error) {
	b := &sbuf{bytes: p.round(bytesOf(t)), refs: 1, op: in.tag.Op, value: in.tag.Value, pos: in.op.Pos, work: work}
	if b.bytes > 0 {
		if r := p.opts.Replay; r != nil {
			blk, err := r.Alloc(bytesOf(t))
			if err != nil {
				return nil, &OpError{Op: in.op.Name(), Pos: in.op.Pos, Err: err}
			}
			b.blk = blk
		}
		p.cur += b.bytes
		b.live = true
		p.live = append(p.live, b)
		if n := len(p.profile); n > 0 && p.cur > p.profile[n-1] {
			p.profile[n-1] = p.cur
		}
		if p.cur > p.peak {
			p.peak = p.cur
			p.peakAt = append(p.peakAt[:0], p.running...)
			p.atPeak = p.atPeak[:0]
			for _, l := range p.live {
				if l.live {
					p.atPeak = append(p.atPeak, l)
				}
			}
		}
	}
	return &sval{b: b, typ: t}, nil
}

// unreplay frees the blocks still held on PlanOptions.Replay.
func (p *planner) unreplay() {
	for _, b := range p.live {
		if b.blk != nil {
			p.opts.Replay.Free(b.blk)
			b.blk = nil
		}
	}
}

func (p *planner) release(v *sval) {
	if v == nil {
		return
	}
	b := v.b
	b.refs--
	if b.refs > 0 {
		return
	}
	for _, it := range b.items {
		p.release(it)
	}
	b.items = nil
	if b.blk != nil {
		p.opts.Replay.Free(b.blk)
		b.blk = nil
	}
	if b.live {
		b.live = false
		p.cur -= b.bytes
		i := slices.Index(p.live, b)
		p.live = slices.Delete(p.live, i, i+1)
	}
}

func (p *planner) frame(b *blockCode) []*sval {
	f, ok := p.frames[b]
	if !ok {
		f = make([]*sval, len(b.slots))
		p.frames[b] = f
	}
	return f
}

func (p *planner) get(r ref) *sval { return p.frame(r.blk)[r.slot] }

// block mirrors runBlock.
func (p *planner) block(b *blockCode) error {
	f := p.frame(b)
	for _, s := range b.dropEntry {
		p.release(f[s])
		f[s] = nil
	}
	for i := range b.instrs {
		in := &b.instrs[i]
		if b == p.e.top {
			p.profile = append(p.profile, p.cur)
		}
		p.running = append(p.running, in.op)
		if err := p.instr(b, in); err != nil {
			return err
		}
		p.running = p.running[:len(p.running)-1]
		for _, s := range in.drop {
			p.release(f[s])
			f[s] = nil
		}
	}
	return nil
}

func (p *planner) instr(b *blockCode, in *instr) error {
	f := p.frame(b)
	switch in.kind {
	case kData:
		f[in.out[0]] = p.feeds[in.name].retain()
	case kParameter:
		typ := in.types[0]
		if t, ok := p.e.store.Get(in.name); ok {
			typ = ir.TensorOf(ir.DType(t.DType()), t.Shape()...)
		}
		f[in.out[0]] = &sval{b: &sbuf{refs: 2}, typ: typ}
	case kFetch:
		p.get(in.in[0]).retain() // the caller holds it past the end of the run
	case kYield:
		ys := make([]*sval, len(in.in))
		for i, r := range in.in {
			ys[i] = p.get(r).retain()
		}
		p.yields[b] = ys
	case kCompute:
		return p.compute(b, in)
	case kKernel:
		return p.kernel(b, in)
	case kRegion:
		switch in.op.Name() {
		case "if":
			return p.ifOp(b, in)
		case "while":
			return p.whileOp(b, in)
		}
		return unplannable(in, "the planner does not know this op with regions")
	}
	return nil
}

// compute mirrors Executable.compute.
func (p *planner) compute(b *blockCode, in *instr) error {
	f := p.frame(b)
	args := make([]*sval, len(in.in))
	types := make([]ir.Type, len(in.in))
	shapes := make([][]int, len(in.in))
	for i, r := range in.in {
		args[i] = p.get(r)
		types[i], shapes[i] = args[i].typ, args[i].typ.Dims
	}
	rt, err := ops.ResultTypesOf(in.op, types)
	if err != nil {
		return resultsError(in, err)
	}
	outs := make([]*sval, len(rt))
	var taken uint64
	for i, t := range rt {
		if in.comp.View != nil && in.comp.View[i] >= 0 {
			src := args[in.comp.View[i]]
			outs[i] = &sval{b: src.b, typ: t}
			src.b.refs++
			continue
		}
		if j := p.takes(in, i, args, t, taken); j >= 0 {
			outs[i] = &sval{b: args[j].b, typ: t}
			p.frame(in.in[j].blk)[in.in[j].slot] = nil
			taken |= 1 << uint(j)
			continue
		}
		if outs[i], err = p.alloc(in, t, false); err != nil {
			return err // unreplay frees what is held
		}
	}
	if in.pack != nil {
		if err := p.pack(in, args, shapes); err != nil {
			return err
		}
	}
	if in.comp.Work != nil {
		if n := in.comp.Work(shapes, p.e.threads); n > 0 {
			ws, err := p.alloc(in, ir.TensorOf(ir.I64, int((n+7)/8)), true)
			if err != nil {
				return err
			}
			p.release(ws)
		}
	}
	p.fold(in, args, outs)
	for i, v := range outs {
		f[in.out[i]] = v
	}
	return nil
}

// pack mirrors Executable.usePack: a slot that holds the parameter as the
// store has it now is used; otherwise its copy (if any) is freed and a
// new one made, when it fits the cache, and kept past the run. A slot
// runs once per plan as it would in a run: later uses of it (a loop's
// trips) find it valid.
func (p *planner) pack(in *instr, args []*sval, shapes [][]int) error {
	ps := in.pack
	if p.packsSeen == nil {
		p.packsSeen = map[*packSlot]bool{}
	}
	if p.packsSeen[ps] {
		return nil
	}
	p.packsSeen[ps] = true
	if t, ok := p.e.store.Get(ps.param); ok && ps.valid(t, packForm(in.comp.Pack, shapes)) {
		return nil
	}
	if ps.t != nil { // stale: freed before the new copy is made
		old := p.e.round(ps.t.Bytes())
		p.cur -= old
		p.packed -= old
	}
	n := in.comp.Pack.Bytes(shapes)
	if n <= 0 || args[in.comp.Pack.Operand].typ.NumElements() == 0 || p.packed+p.e.round(n) > p.e.opts.PackCache {
		return nil
	}
	v, err := p.alloc(in, ir.TensorOf(ir.I64, int((n+7)/8)), false)
	if err != nil {
		return err
	}
	v.b.op, v.b.value = "pack", ps.param
	p.packed += v.b.bytes
	return nil // never released: the executable keeps it
}

// takes mirrors instr.takes.
func (p *planner) takes(in *instr, i int, args []*sval, t ir.Type, taken uint64) int {
	if in.donate == 0 || in.comp.InPlace == nil {
		return -1
	}
	for _, j := range in.comp.InPlace[i] {
		bit := uint64(1) << uint(j)
		if in.donate&bit == 0 || taken&bit != 0 {
			continue
		}
		if x := args[j]; x.b.refs == 1 && x.typ.DType == t.DType && slices.Equal(x.typ.Dims, t.Dims) {
			return j
		}
	}
	return -1
}

// kernel models the ops that allocate their own results (ops.Def.Bind):
// stacks and sequences, whose kernels the planner knows; any other is
// planned like a Compute op without workspace or reuse, when its result
// types follow from its operands' (ops whose sizes depend on values are
// refused).
func (p *planner) kernel(b *blockCode, in *instr) error {
	f := p.frame(b)
	args := make([]*sval, len(in.in))
	for i, r := range in.in {
		args[i] = p.get(r)
	}
	donated := func(i int) bool { return in.donate&(1<<uint(i)) != 0 }
	// exclusive mirrors ops' exclusiveStack: the donated, unshared stack
	// itself, or a copy of its list of items.
	exclusive := func(i int) *sval {
		s := args[i]
		if donated(i) {
			p.frame(in.in[i].blk)[in.in[i].slot] = nil
			if s.b.refs == 1 {
				return s
			}
			defer p.release(s)
		}
		c := &sval{b: &sbuf{refs: 1}, typ: s.typ}
		for _, it := range s.b.items {
			c.b.items = append(c.b.items, it.retain())
		}
		return c
	}
	switch in.op.Name() {
	case "stack_new":
		f[in.out[0]] = &sval{b: &sbuf{refs: 1}, typ: in.types[0]}
	case "stack_push":
		s := exclusive(0)
		s.b.items = append(s.b.items, args[1].retain())
		f[in.out[0]] = s
	case "stack_pop":
		s := exclusive(0)
		if len(s.b.items) == 0 {
			return unplannable(in, "pop from an empty stack")
		}
		top := s.b.items[len(s.b.items)-1]
		s.b.items = s.b.items[:len(s.b.items)-1]
		f[in.out[0]], f[in.out[1]] = s, top
	default:
		types := make([]ir.Type, len(args))
		for i, a := range args {
			if a.typ.IsStack() {
				return unplannable(in, "the planner does not model this sequence op")
			}
			types[i] = a.typ
		}
		rt, err := ops.ResultTypesOf(in.op, types)
		if err != nil {
			return resultsError(in, err)
		}
		outs := make([]*sval, len(rt))
		for i, t := range rt {
			if outs[i], err = p.alloc(in, t, false); err != nil {
				return err
			}
			f[in.out[i]] = outs[i]
		}
		p.fold(in, args, outs)
		for i := range args {
			if donated(i) {
				p.release(args[i])
				p.frame(in.in[i].blk)[in.in[i].slot] = nil
			}
		}
	}
	return nil
}

// ifOp mirrors runIf: the recorded branch, or else the one the
// combination being planned says.
func (p *planner) ifOp(b *blockCode, in *instr) error {
	c := p.get(in.in[0])
	then, guessed := p.decide(c)
	if guessed {
		d, ok := p.guessed[c.b]
		if !ok {
			i := len(p.decided)
			d = i < len(p.guess) && p.guess[i]
			p.decided = append(p.decided, d)
			p.guessed[c.b] = d
			p.assumed = append(p.assumed, fmt.Sprintf("%s: the branch of the \"if\" is not known; planned both, kept the higher peak", in.op.Pos))
		}
		then = d
	}
	region := in.regions[1]
	if then {
		region = in.regions[0]
	}
	return p.runRegion(b, in, region)
}

func (p *planner) runRegion(b *blockCode, in *instr, region *blockCode) error {
	if err := p.block(region); err != nil {
		return err
	}
	f := p.frame(b)
	for i, v := range p.yields[region] {
		f[in.out[i]] = v
	}
	p.yields[region] = nil
	return nil
}

// whileOp mirrors runWhile. A condition neither the path nor the
// planner knows is guessed: the loop runs Trips times.
func (p *planner) whileOp(b *blockCode, in *instr) error {
	body := in.regions[0]
	n := len(in.out)
	times := fmt.Sprintf("%d times", p.opts.Trips)
	if p.opts.Trips == 1 {
		times = "once"
	}
	trips := 0
	guessing := false
	next := func(v *sval) bool {
		c, guessed := p.decide(v)
		if !guessed {
			return c
		}
		if !guessing {
			guessing = true
			p.guessedTrips = true
			p.assumed = append(p.assumed, fmt.Sprintf("%s: the \"while\" runs %s (its trip count is not known)", in.op.Pos, times))
		}
		return trips < p.opts.Trips
	}
	cond := next(p.get(in.in[0]))
	bf := p.frame(body)
	for i := range n {
		r := in.in[i+1]
		if in.donate&(1<<uint(i+1)) != 0 {
			bf[i] = p.get(r)
			p.frame(r.blk)[r.slot] = nil
		} else {
			bf[i] = p.get(r).retain()
		}
	}
	noted := false
	carried := make([]ir.Type, n)
	for cond {
		for i := range n {
			carried[i] = bf[i].typ
		}
		if err := p.block(body); err != nil {
			return err
		}
		trips++
		ys := p.yields[body]
		p.yields[body] = nil
		cond = next(ys[0])
		p.release(ys[0])
		for i := range n {
			if guessing && !noted && !slices.Equal(carried[i].Dims, ys[i+1].typ.Dims) {
				noted = true
				p.assumed = append(p.assumed, fmt.Sprintf("%s: carried value %d of the \"while\" changes shape from %s to %s in a trip: its peak depends on the trip count", in.op.Pos, i, carried[i], ys[i+1].typ))
			}
			bf[i] = ys[i+1]
		}
	}
	f := p.frame(b)
	for i := range n {
		f[in.out[i]] = bf[i]
		bf[i] = nil
	}
	return nil
}
