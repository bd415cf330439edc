package remat

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
)

// Options say what Fit fits and how it plans.
type Options struct {
	// Budget is the most bytes the planned peak of a step may reach.
	Budget int64
	// Backward is the first top-level op of the backward pass: values
	// made before it and read from it on are what may be recomputed.
	Backward *ir.Op
	// Plan compiles and plans a candidate program for the step (the
	// caller's feeds, parameters and trip counts).
	Plan func(*ir.Program) (*exec.Plan, error)
	// Feeds and Trips size the step for the cost model: the feeds' types
	// (a feed left out has its static type) and the trips of a "while".
	Feeds map[string]ir.Type
	Trips int
}

// Result is a program fitted to a budget.
type Result struct {
	// Program is the rewritten program (the original when it fit).
	Program *ir.Program
	// Natural is the planned peak of the original program, Peak that of
	// Program, Plan its whole plan.
	Natural, Peak int64
	Plan          *exec.Plan
	// StepFlops is the work of one step of the original program and
	// RecomputedFlops the work recomputation adds to it (ops.Flops).
	StepFlops, RecomputedFlops int64
	// Recomputed lists the values recomputed and Checkpointed the loops
	// whose tapes were replaced by checkpoints, in program order.
	Recomputed   []Recomputation
	Checkpointed []Checkpoint
	// Splits lists the cuts at which the step runs over the batch in
	// pieces, in program order.
	Splits []Split
	// EarlyUpdates is how many updates run early, right after their
	// gradients are complete (Schedule.Early), and EarlyGradients how many
	// ops making what only an update reads moved up with them.
	EarlyUpdates, EarlyGradients int

	rw *rewritten
}

// Recomputation is one op of the forward pass run again in the backward.
type Recomputation struct {
	Op     string `json:"op"`
	Values string `json:"values"` // its results the backward reads, as the original program numbers them
	Pos    ir.Pos `json:"pos"`
	Flops  int64  `json:"flops"`
	// Before is the backward op it is recomputed for (its first result, as
	// the original program numbers it, and its name) and BeforePos its
	// position; InIf says that it runs inside that op, a backward "if".
	Before    string `json:"before"`
	BeforePos ir.Pos `json:"before_pos"`
	InIf      bool   `json:"in_if,omitempty"`
}

// Checkpoint is a loop whose tapes were replaced by checkpoints.
type Checkpoint struct {
	Pos     ir.Pos   `json:"pos"`
	Every   int      `json:"every"`   // trips between checkpoints
	Carried []string `json:"carried"` // the values each checkpoint holds
	Flops   int64    `json:"flops"`   // the loop's forward work, done again
}

// Split is a cut at which the step runs over the batch in pieces: the
// forward ops that make it, piece by piece, then the backward ops that
// read their values, each piece recomputing them.
type Split struct {
	Cut        string `json:"cut"` // the value, as the original program numbers it
	Op         string `json:"op"`  // the op that makes it
	Pos        ir.Pos `json:"pos"`
	Pieces     int    `json:"pieces"`
	Samples    int    `json:"samples"`     // per piece
	ForwardOps int    `json:"forward_ops"` // ops of the forward segment
	BackOps    int    `json:"backward_ops"`
	// ForwardPasses and BackPasses count the passes over the pieces: one,
	// or more through batch norms (their statistics' sums, then the rest).
	ForwardPasses int   `json:"forward_passes"`
	BackPasses    int   `json:"backward_passes"`
	Flops         int64 `json:"flops"` // the forward work the backward pieces recompute
	// Kept lists the values of the forward segment whose pieces the
	// forward keeps for the backward pieces instead of their recomputing
	// them (the cut first, when its concatenation is sliced instead).
	Kept []string `json:"kept,omitempty"`
}

// Origin returns the op of the original program that top-level op of
// Program copies, or nil for an op the rematerialization inserted.
func (r *Result) Origin(op *ir.Op) *ir.Op {
	if r.rw == nil {
		return op
	}
	return r.rw.origin[op]
}

// Recomputes returns, for an op of Program inserted to recompute a value,
// a note saying what it recomputes ("recomputes %5"), naming values as
// name does; "" for any other op.
func (r *Result) Recomputes(op *ir.Op, name func(*ir.Value) string) string {
	if r.rw == nil {
		return ""
	}
	if v, ok := r.rw.recomputes[op]; ok {
		if v == nil {
			return "recomputed"
		}
		return "recomputes " + name(v)
	}
	if note, ok := r.rw.splitOps[op]; ok {
		seg := r.rw.segs[note.cut]
		return fmt.Sprintf("piece %d/%d of the batch split at %s (%s)", note.piece+1, seg.pieces(note.k), note.cut.Def().Name(), note.cut.Def().Pos)
	}
	if r.rw.hoisted[op] {
		switch {
		case updates(op):
			return "runs early: right after the last op it must follow"
		case op.NumOperands() > 0:
			return "moved up: only an update reads it"
		}
	}
	if fwd := r.rw.loops[op]; fwd != nil {
		return fmt.Sprintf("recomputes the trips of the loop of %s from its checkpoints", name(fwd.Result(0)))
	}
	return ""
}

// FloorError says that no schedule the rematerializer finds fits the
// budget: Floor is the lowest planned peak it reached, the smallest
// budget that can work.
type FloorError struct {
	Budget, Natural, Floor int64
}

func (e *FloorError) Error() string {
	return fmt.Sprintf("remat: no recomputation fits a peak of %d bytes: the step needs %d without it and at least %d with it", e.Budget, e.Natural, e.Floor)
}

// maxFlat bounds the choices in a row that move the peak elsewhere
// without lowering it (a plateau of equal peaks).
const maxFlat = 8

// Fit rewrites p so that its planned peak fits opts.Budget, recomputing
// what costs least; p itself is left alone. When nothing fits it returns
// a *FloorError.
func Fit(p *ir.Program, opts Options) (*Result, error) {
	f, err := newFitter(p, opts)
	if err != nil {
		return nil, err
	}
	natural, err := opts.Plan(p)
	if err != nil {
		return nil, err
	}
	res := &Result{Program: p, Natural: natural.Peak, Peak: natural.Peak, Plan: natural, StepFlops: f.costs.step}
	if natural.Peak <= opts.Budget {
		return res, nil
	}
	best, err := f.descend(natural)
	if err != nil {
		return nil, err
	}
	if best.plan.Peak > opts.Budget {
		return nil, &FloorError{Budget: opts.Budget, Natural: natural.Peak, Floor: best.plan.Peak}
	}
	best, err = f.prune(best)
	if err != nil {
		return nil, err
	}
	return f.result(res, best), nil
}

// fitter holds one Fit.
type fitter struct {
	opts  Options
	eps   float64 // a thousandth of the step's FLOPs, at least 1
	a     *analysis
	costs *costs
	cands []candidate
	names map[*ir.Value]string
}

// candidate is one choice: a value to drop (with the values it is
// recomputed from that nothing else keeps) or a loop to checkpoint. Its
// memory is held between top-level ops from and to: it can lower a peak
// reached in between.
type candidate struct {
	value    *ir.Value
	loop     *ir.Op
	split    *ir.Value
	from, to int
}

// state is a schedule with its program and plan.
type state struct {
	s    Schedule
	rw   *rewritten
	plan *exec.Plan
	cost int64
}

func newFitter(p *ir.Program, opts Options) (*fitter, error) {
	if opts.Plan == nil || opts.Backward == nil {
		return nil, errors.New("remat: Fit needs Options.Plan and Options.Backward")
	}
	a, err := analyze(p, opts.Backward)
	if err != nil {
		return nil, err
	}
	f := &fitter{opts: opts, a: a, costs: measure(p, opts.Feeds, opts.Trips), names: valueNames(p)}
	f.eps = max(1, float64(f.costs.step)/1000)
	a.typ = f.costs.typ
	for i, op := range a.ops[:a.bwd] {
		for _, v := range op.Results() {
			if seg := f.segmentOf(v); seg != nil {
				a.segs[v] = seg
				to := i
				if late := a.lateUses(v); len(late) > 0 {
					to = late[len(late)-1]
				} else if u := a.uses[v]; len(u) > 0 {
					to = u[len(u)-1]
				}
				if len(seg.bwd) > 0 {
					to = max(to, a.pos[seg.bwd[len(seg.bwd)-1]])
				}
				f.cands = append(f.cands, candidate{split: v, from: a.pos[seg.fwd[0]], to: to})
			}
		}
	}
	for i, op := range a.ops[:a.bwd] {
		if a.loops[op] != nil {
			f.cands = append(f.cands, candidate{loop: op, from: i, to: a.pos[a.loops[op].bwd]})
		}
		for _, v := range op.Results() {
			late := a.lateUses(v)
			if len(late) == 0 || v.Type().IsStack() {
				continue
			}
			if a.residuals[v] == nil && (!recomputable(op) || !f.worth(v)) {
				continue
			}
			f.cands = append(f.cands, candidate{value: v, from: i, to: late[len(late)-1]})
		}
	}
	return f, nil
}

// worth reports whether v holds at least a quarter of the bytes a copy
// of its op makes: recomputing a small result of an op with a large one
// (batch_norm's saved statistics beside y) would make the large one again.
func (f *fitter) worth(v *ir.Value) bool {
	var all float64
	for _, r := range v.Def().Results() {
		all += f.bytes(r)
	}
	return 4*f.bytes(v) >= all
}

// try plans schedule s.
func (f *fitter) try(s Schedule) (*state, error) {
	rw, err := f.a.rewrite(s)
	if err != nil {
		return nil, err
	}
	plan, err := f.opts.Plan(rw.prog)
	if err != nil {
		return nil, err
	}
	st := &state{s: s, rw: rw, plan: plan, cost: rw.copied}
	for _, op := range rw.cloned {
		st.cost += f.costs.of[op]
	}
	return st, nil
}

// dropped returns s with v dropped and, recursively, the operands of its
// op that would otherwise stay alive only to recompute it.
func (f *fitter) dropped(s Schedule, v *ir.Value) Schedule {
	n := s.clone()
	f.dropWith(n, v)
	return n
}

// again returns s with dropped value v recomputed afresh before the op at
// index u.
func again(s Schedule, v *ir.Value, u int) Schedule {
	n := s.clone()
	if n.Again[v] == nil {
		n.Again[v] = map[int]bool{}
	}
	n.Again[v][u] = true
	return n
}

// dropWith drops v and, recursively, the operands of its op that would
// otherwise stay alive only to recompute it: forward values that nothing
// reads late and that can be recomputed themselves.
func (f *fitter) dropWith(s Schedule, v *ir.Value) {
	if s.Drop[v] {
		return
	}
	s.Drop[v] = true
	op := v.Def()
	if op == nil || op.Block() != f.a.top || f.a.residuals[v] != nil {
		return
	}
	for _, u := range op.Operands() {
		d := u.Def()
		if d != nil && d.Block() == f.a.top && f.a.pos[d] < f.a.bwd && len(f.a.lateUses(u)) == 0 && recomputable(d) {
			f.dropWith(s, u)
		}
	}
}

// peakIndex is the index in the original program of the top-level op at
// whose time st peaks: the op itself, or for an inserted or moved op (an
// update run early) the next one that copies an original in its place.
func (f *fitter) peakIndex(st *state) int {
	if len(st.plan.PeakAt) == 0 {
		return -1
	}
	ops := st.rw.prog.Body().Ops()
	for i := st.rw.prog.Body().IndexOf(st.plan.PeakAt[0]); i >= 0 && i < len(ops); i++ {
		if o := st.rw.origin[ops[i]]; o != nil && !st.rw.hoisted[ops[i]] {
			return f.a.pos[o]
		}
	}
	return len(f.a.ops)
}

// A move is a schedule one step from the current one, with the bytes it
// can take off the peak at most (+Inf when unknown): the bytes of what it
// drops. (Dropping a value can let another op write in place, which saves
// more; the search then merely tries that move later.)
type move struct {
	s     Schedule
	bound float64
}

// adds lists the moves that add a choice able to lower a peak reached at
// top-level op pk: drop a value alive there (also recomputing it afresh
// after the peak, in case something recomputed before the peak needs it);
// recompute afresh after the peak a dropped value recomputed before it;
// checkpoint a loop, every k trips for the k worth trying.
func (f *fitter) adds(cur *state, pk int) []move {
	var ms []move
	if cur.s.Early && !cur.s.Grads {
		n := cur.s.clone()
		n.Grads = true
		ms = append(ms, move{s: n, bound: math.Inf(1)})
	}
	for _, c := range f.cands {
		if c.from >= pk || c.to < pk {
			continue
		}
		if c.split != nil {
			if cur.s.Split[c.split] == 0 {
				for _, k := range f.a.segs[c.split].sizes() {
					ms = append(ms, move{s: f.splitAt(cur.s, c.split, k), bound: math.Inf(1)})
				}
			}
			continue
		}
		if c.loop != nil {
			if cur.s.Every[c.loop] > 0 {
				continue
			}
			for _, k := range spacings(f.opts.Trips) {
				n := cur.s.clone()
				n.Every[c.loop] = k
				ms = append(ms, move{s: n, bound: math.Inf(1)})
			}
			continue
		}
		if cur.s.Drop[c.value] {
			continue
		}
		n := f.dropped(cur.s, c.value)
		var bound float64
		for v := range n.Drop {
			if !cur.s.Drop[v] {
				bound += f.bytes(v)
			}
		}
		ms = append(ms, move{s: n, bound: bound})
		for _, u := range f.a.lateUses(c.value) {
			if u > pk {
				ms = append(ms, move{s: again(n, c.value, u), bound: bound})
				break
			}
		}
	}
	made := make([]*ir.Value, 0, len(cur.rw.madeAt))
	for v := range cur.rw.madeAt {
		made = append(made, v)
	}
	sort.Slice(made, func(i, j int) bool { return f.order(made[i], nil) < f.order(made[j], nil) })
	for _, v := range made {
		made := cur.rw.madeAt[v]
		if len(made) == 0 || made[len(made)-1] > pk {
			continue
		}
		for _, u := range f.a.lateUses(v) {
			if u > pk {
				if !cur.s.Again[v][u] {
					ms = append(ms, move{s: again(cur.s, v, u), bound: f.bytes(v)})
				}
				break
			}
		}
	}
	return ms
}

// undos lists the moves that take back one choice: the dropped results
// of one op (together: one copy recomputes them all), a checkpointed loop,
// a fresh recomputation.
func (f *fitter) undos(cur *state) []move {
	var ms []move
	byOp := map[*ir.Op][]*ir.Value{}
	var opsInOrder []*ir.Op
	for v := range cur.s.Drop {
		if byOp[v.Def()] == nil {
			opsInOrder = append(opsInOrder, v.Def())
		}
		byOp[v.Def()] = append(byOp[v.Def()], v)
	}
	sort.Slice(opsInOrder, func(i, j int) bool {
		return f.order(opsInOrder[i].Result(0), nil) < f.order(opsInOrder[j].Result(0), nil)
	})
	for _, op := range opsInOrder {
		n := cur.s.clone()
		for _, v := range byOp[op] {
			delete(n.Drop, v)
			delete(n.Again, v)
		}
		ms = append(ms, move{s: n, bound: math.Inf(1)})
	}
	for loop := range cur.s.Every {
		n := cur.s.clone()
		delete(n.Every, loop)
		ms = append(ms, move{s: n, bound: math.Inf(1)})
	}
	for _, cut := range f.sortedSplits(cur.s) {
		n := cur.s.clone()
		delete(n.Split, cut)
		f.dropKeeps(n)
		ms = append(ms, move{s: n, bound: math.Inf(1)})
	}
	for v, at := range cur.s.Again {
		for u := range at {
			n := cur.s.clone()
			delete(n.Again[v], u)
			ms = append(ms, move{s: n, bound: math.Inf(1)})
		}
	}
	return ms
}

// spacings lists the checkpoint spacings worth trying for a loop planned
// at trips trips: 1, 2, 3, 4, 6, 8, 11, 16, ... (about √2 apart) up to
// half the trips.
func spacings(trips int) []int {
	out := []int{1}
	for k := 2.0; int(k) <= trips/2; k *= math.Sqrt2 {
		if n := int(math.Round(k)); n > out[len(out)-1] {
			out = append(out, n)
		}
	}
	return out
}

// bytes is what value v takes in the allocator for the step, +Inf when
// its size is not known.
func (f *fitter) bytes(v *ir.Value) float64 {
	t := f.costs.typ(v)
	if t.IsStack() || !t.IsStatic() {
		return math.Inf(1)
	}
	return float64((int64(t.NumElements())*int64(t.DType.Size()) + 63) &^ 63)
}

// best plans the moves, the most promising first, and returns the one
// that lowers the peak most per FLOP it adds (FLOPs counted from eps, so
// that a free move must still save bytes to win), or, when none lowers
// it, the cheapest that moves the peak elsewhere at the same height; nil
// when neither exists.
func (f *fitter) best(cur *state, pk int, ms []move) *state {
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].bound > ms[j].bound })
	var best, flat *state
	var bestScore float64
	for _, m := range ms {
		if best != nil && m.bound/f.eps < bestScore {
			break
		}
		st, err := f.try(m.s)
		if err != nil {
			continue // this choice cannot be recomputed
		}
		gain := cur.plan.Peak - st.plan.Peak
		switch {
		case gain > 0:
			score := float64(gain) / (float64(max(st.cost-cur.cost, 0)) + f.eps)
			if best == nil || score > bestScore || score == bestScore && f.excess(st) < f.excess(best) {
				best, bestScore = st, score
			}
		case gain == 0 && f.peakIndex(st) != pk:
			if flat == nil || st.cost < flat.cost {
				flat = st
			}
		}
	}
	if best != nil {
		return best
	}
	return flat
}

// excess is how much st's profile lies above the budget, summed over the
// top-level ops: between moves that lower the peak alike, the one that
// leaves less to lower elsewhere.
func (f *fitter) excess(st *state) int64 {
	var e int64
	for _, p := range st.plan.Profile {
		e += max(0, p-f.opts.Budget)
	}
	return e
}

// descend moves from the natural schedule, greedily, until the plan fits
// or no move lowers it; it returns the lowest state reached.
func (f *fitter) descend(natural *exec.Plan) (*state, error) {
	cur, err := f.try(Schedule{Drop: map[*ir.Value]bool{}, Every: map[*ir.Op]int{}, Again: map[*ir.Value]map[int]bool{}, Split: map[*ir.Value]int{}, Keep: map[*ir.Value]bool{}})
	if err != nil {
		return nil, err
	}
	if cur.plan.Peak != natural.Peak {
		return nil, fmt.Errorf("remat: a plain copy of the program plans to %d bytes, the program to %d", cur.plan.Peak, natural.Peak)
	}
	// Updating each parameter as soon as its gradient is complete adds no
	// work: take it whenever it lowers the peak.
	early := cur.s.clone()
	early.Early = true
	if st, err := f.try(early); err == nil && st.plan.Peak < cur.plan.Peak {
		cur = st
	}
	lowest := cur
	flat := 0
	for cur.plan.Peak > f.opts.Budget {
		pk := f.peakIndex(cur)
		next := f.best(cur, pk, f.adds(cur, pk))
		if next == nil || next.plan.Peak == cur.plan.Peak {
			// Stuck: maybe a choice made earlier stands in the way.
			if undo := f.best(cur, pk, f.undos(cur)); undo != nil && undo.plan.Peak < cur.plan.Peak {
				next = undo
			}
		}
		if next == nil {
			break
		}
		if next.plan.Peak == cur.plan.Peak {
			if flat++; flat > maxFlat {
				break
			}
		} else {
			flat = 0
		}
		cur = next
		if cur.plan.Peak < lowest.plan.Peak {
			lowest = cur
		}
	}
	return lowest, nil
}

// prune undoes the choices the fitted state does not need, the costliest
// first.
func (f *fitter) prune(st *state) (*state, error) {
	type choice struct {
		value *ir.Value
		loop  *ir.Op
		split bool
		cost  int64
	}
	var choices []choice
	for v := range st.s.Drop {
		choices = append(choices, choice{value: v, cost: f.costs.of[v.Def()]})
	}
	for op := range st.s.Every {
		choices = append(choices, choice{loop: op, cost: f.costs.of[op]})
	}
	for _, cut := range f.sortedSplits(st.s) {
		var cost int64
		for _, op := range f.a.segs[cut].need(st.s.Keep) {
			cost += f.costs.of[op]
		}
		choices = append(choices, choice{value: cut, split: true, cost: cost})
	}
	sort.SliceStable(choices, func(i, j int) bool {
		if choices[i].cost != choices[j].cost {
			return choices[i].cost > choices[j].cost
		}
		return f.order(choices[i].value, choices[i].loop) < f.order(choices[j].value, choices[j].loop)
	})
	for _, c := range choices {
		n := st.s.clone()
		switch {
		case c.loop != nil:
			delete(n.Every, c.loop)
		case c.split:
			delete(n.Split, c.value)
			f.dropKeeps(n)
		default:
			delete(n.Drop, c.value)
		}
		next, err := f.try(n)
		if err != nil {
			continue
		}
		if next.plan.Peak <= f.opts.Budget && next.cost <= st.cost {
			st = next
		}
	}
	// A split's shape: where it cuts, its pieces and the forward values it
	// keeps whole. Larger pieces run fewer ops, kept values spare the
	// backward pieces their recomputation, a cut further on splits more
	// ops; which pays most depends on the budget, so every cut that
	// shares ops with the split is tried at each width that fits, with
	// what that leaves room to keep, and the cheapest in modelled time
	// taken.
	for _, cut := range f.sortedSplits(st.s) {
		if st.s.Split[cut] == 0 {
			continue // an earlier split's new cut took its ops
		}
		best := f.keepMore(st)
		without := st.s.clone()
		delete(without.Split, cut)
		f.dropKeeps(without)
		for _, other := range f.overlapping(f.a.segs[cut]) {
			for _, k := range slices.Backward(f.widths(f.a.segs[other])) {
				if other == cut && k <= st.s.Split[cut] {
					break
				}
				next, err := f.try(f.splitAt(without, other, k))
				if err != nil || next.plan.Peak > f.opts.Budget {
					continue
				}
				if next = f.keepMore(next); f.time(next) < f.time(best) {
					best = next
				}
			}
		}
		st = best
	}
	// A checkpointed loop recomputes every trip whatever its spacing, but
	// each segment runs two loops of its own: the widest spacing that
	// still fits runs the fewest ops.
	loops := make([]*ir.Op, 0, len(st.s.Every))
	for op := range st.s.Every {
		loops = append(loops, op)
	}
	sort.Slice(loops, func(i, j int) bool { return f.a.pos[loops[i]] < f.a.pos[loops[j]] })
	for _, op := range loops {
		ks := spacings(f.opts.Trips)
		for i := len(ks) - 1; i >= 0 && ks[i] > st.s.Every[op]; i-- {
			n := st.s.clone()
			n.Every[op] = ks[i]
			if next, err := f.try(n); err == nil && next.plan.Peak <= f.opts.Budget {
				st = next
				break
			}
		}
	}
	return st, nil
}

// keepMore keeps forward values of st's splits whole, one at a time, the
// most work spared first, while the step still fits and its modelled
// time falls.
func (f *fitter) keepMore(st *state) *state {
	for more := true; more; {
		more = false
		for _, n := range f.keeps(st) {
			if next, err := f.try(n); err == nil && next.plan.Peak <= f.opts.Budget && f.time(next) < f.time(st) {
				st, more = next, true
				break
			}
		}
	}
	return st
}

// overlapping lists the cuts whose segments share ops with seg (its own
// among them), in program order.
func (f *fitter) overlapping(seg *segment) []*ir.Value {
	var out []*ir.Value
	for _, c := range f.cands {
		if c.split == nil {
			continue
		}
		for op := range f.a.segs[c.split].in {
			if seg.in[op] {
				out = append(out, c.split)
				break
			}
		}
	}
	return out
}

// widths lists the samples per piece worth trying for seg: for each
// number of pieces, the fewest whole groups per piece that make it
// (pieces of 12 samples cut a batch of 64 in 6, the last of 4).
func (f *fitter) widths(seg *segment) []int {
	var out []int
	for p := seg.pieces(seg.group); p >= 2; p-- {
		k := (seg.n + p - 1) / p
		k = (k + seg.group - 1) / seg.group * seg.group
		if seg.pieces(k) >= 2 && (len(out) == 0 || k > out[len(out)-1]) {
			out = append(out, k)
		}
	}
	return out
}

// order places a choice in program order, so that pruning is
// deterministic.
func (f *fitter) order(v *ir.Value, loop *ir.Op) int {
	if loop != nil {
		return f.a.pos[loop] * 1024
	}
	op := v.Def()
	for op.Block() != f.a.top {
		op = op.ParentOp()
	}
	return f.a.pos[op]*1024 + v.Index()
}

// result fills res from the fitted state.
func (f *fitter) result(res *Result, st *state) *Result {
	res.Program, res.Peak, res.Plan, res.RecomputedFlops, res.rw = st.rw.prog, st.plan.Peak, st.plan, st.cost, st.rw
	res.Recomputed, res.Checkpointed = f.report(st)
	res.Splits = f.reportSplits(st)
	for op := range st.rw.hoisted {
		switch {
		case updates(op):
			res.EarlyUpdates++
		case op.NumOperands() > 0:
			res.EarlyGradients++
		}
	}
	return res
}
