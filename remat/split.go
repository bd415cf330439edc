package remat

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// Splitting over the batch. The first layers of a convolutional model
// work sample by sample: every op from the batch's feed to a cut value
// (the forward segment) reads and writes one sample of each batch value
// independently, and so does the part of the backward pass that reads
// them (the backward segment), up to the sums over the batch that give
// the parameters' gradients. Such a step can run in pieces of a few
// samples: the forward segment piece by piece, keeping only the cut (its
// pieces concatenated), and the backward segment piece by piece, each
// piece recomputing the forward values it reads from its slice of the
// feeds and adding its sums to the running ones. Only one piece's
// activations are alive at a time.
//
// The pieces give the bits of the whole batch because every sum over the
// batch in a backward segment is one whose kernel sums the canonical way
// (ops.BatchGroup: partials of fixed groups of samples added in order),
// a piece is a whole number of groups, and each piece after the first
// adds its groups' partials into the running sum with the accumulating
// form of the op (ops.AccumulateInto): the kernel's own additions, in its
// order. The other ops compute each sample's values alike whatever the
// batch (they are per sample). The search (fit.go) tries pieces of one
// group, two, four, ...; a split may also keep the forward pieces of some
// values for the backward pieces of the same samples instead of
// recomputing them.

// segment is a split: the forward ops that make cut from the batch's
// feeds, the backward ops that read their values (and each other's), and
// the pieces.
type segment struct {
	cut *ir.Value
	fwd []*ir.Op // in program order; the last makes cut
	bwd []*ir.Op // in program order
	in  map[*ir.Op]bool
	// at is the index of the first backward op: the backward pieces run
	// there.
	at int
	// sums are the results of the backward segment that leave it: sums
	// over the batch.
	sums []*ir.Value
	// n is the batch, group the samples of the sums' canonical groups.
	n, group int
	// lvl is the phase of each op of the segment (norms.go): that of its
	// values for a per-sample op, of its (first) pass over the pieces for
	// a batch norm, a batch_norm_grad or a sum over the batch.
	lvl map[*ir.Op]int
	// deferred are the forward ops outside the segment that read a batch
	// norm's running statistics (assign_into): they run right after the
	// forward pieces, which make them.
	deferred []*ir.Op
}

// pieces is how many pieces of k samples the batch runs in.
func (s *segment) pieces(k int) int { return (s.n + k - 1) / k }

// sizes lists the samples per piece worth trying: the group, twice it,
// four times, ... while the batch still makes two pieces.
func (s *segment) sizes() []int {
	var out []int
	for k := s.group; s.pieces(k) >= 2; k *= 2 {
		out = append(out, k)
	}
	return out
}

// batchy reports whether v carries the batch: a tensor whose first dim
// is the dynamic one (the feeds' batch).
func batchy(v *ir.Value) bool {
	t := v.Type()
	return !t.IsStack() && t.Rank() > 0 && t.Dims[0] == ir.Dynamic
}

// perSample reports whether op can run on pieces of the batch
// (ops.PerSample): it is recomputable, draws no random numbers, and every
// result carries the batch.
func perSample(op *ir.Op) bool {
	if !recomputable(op) || ops.Random(op) || op.NumResults() == 0 {
		return false
	}
	for _, r := range op.Results() {
		if !batchy(r) {
			return false
		}
	}
	return ops.PerSample(op, batchy)
}

// segmentOf returns the split whose forward segment ends in cut, or nil
// when there is none: an op on the way is not per sample, a value of the
// forward segment other than cut is read by a forward op outside it, or a
// backward op reading the segment's values is neither per sample nor a
// canonical sum over the batch.
func (f *fitter) segmentOf(cut *ir.Value) *segment {
	a := f.a
	def := cut.Def()
	if def == nil || def.Block() != a.top || a.pos[def] >= a.bwd || !batchy(cut) {
		return nil
	}
	n := f.costs.typ(cut).Dims[0]
	if n <= 0 {
		return nil
	}
	s := &segment{cut: cut, in: map[*ir.Op]bool{}, n: n}
	sameBatch := func(v *ir.Value) bool {
		t := f.costs.typ(v)
		return t.IsStatic() && t.Dims[0] == n
	}
	// The forward segment: back from cut to the feeds.
	work := []*ir.Op{def}
	s.in[def] = true
	for len(work) > 0 {
		op := work[len(work)-1]
		work = work[:len(work)-1]
		if !perSample(op) && !f.splitNorm(op, n) {
			return nil
		}
		for _, u := range op.Operands() {
			if !batchy(u) {
				continue
			}
			d := u.Def()
			if d == nil || d.Block() != a.top || !sameBatch(u) {
				return nil
			}
			if d.Name() == "data" || s.in[d] {
				continue
			}
			s.in[d] = true
			work = append(work, d)
		}
	}
	for _, op := range a.ops[:a.bwd] {
		if s.in[op] {
			s.fwd = append(s.fwd, op)
		}
	}
	// Its values other than cut are read by it and the backward pass
	// alone; the backward ops that read them join the backward segment,
	// and so, from value to value, do those that read theirs.
	var vals []*ir.Value
	for _, op := range s.fwd {
		for _, v := range op.Results() {
			if !batchy(v) {
				// A batch norm's statistics, made whole by the forward
				// pieces: the forward may read them after those.
				if !s.deferUses(a, v) {
					return nil
				}
				continue
			}
			for _, u := range a.uses[v] {
				if u < a.bwd && !s.in[a.ops[u]] && v != cut {
					return nil
				}
			}
			vals = append(vals, v)
		}
	}
	bwd := map[*ir.Op]bool{}
	for len(vals) > 0 {
		v := vals[len(vals)-1]
		vals = vals[:len(vals)-1]
		for _, u := range a.lateUses(v) {
			op := a.ops[u]
			if bwd[op] {
				continue
			}
			if len(op.Regions()) > 0 || !recomputable(op) || ops.Random(op) {
				return nil
			}
			bwd[op] = true
			if f.splitNormGrad(op, n) {
				if !sameBatch(op.Result(0)) {
					return nil
				}
				vals = append(vals, op.Result(0))
				continue
			}
			if perSample(op) {
				for _, r := range op.Results() {
					if !sameBatch(r) {
						return nil
					}
					vals = append(vals, r)
				}
				continue
			}
			if !f.canonicalSum(op, n) {
				return nil
			}
		}
	}
	for _, op := range a.ops[a.bwd:] {
		if bwd[op] {
			s.bwd = append(s.bwd, op)
			s.in[op] = true
		}
	}
	if len(s.bwd) > 0 {
		s.at = a.pos[s.bwd[0]]
	}
	// What the backward pieces read from outside must be there before the
	// first of them, and what they make leaves them only as sums.
	for _, op := range s.bwd {
		for _, u := range op.Operands() {
			d := u.Def()
			switch {
			case d != nil && s.in[d]:
			case d == nil || d.Block() != a.top || a.pos[d] >= s.at:
				return nil
			case batchy(u) && !sameBatch(u):
				return nil
			}
		}
		if isNormGrad(op) {
			// dx stays in the segment, dscale and dbias leave it.
			for _, u := range a.uses[op.Result(0)] {
				if !s.in[a.ops[u]] {
					return nil
				}
			}
			for _, r := range op.Results()[1:] {
				for _, u := range a.uses[r] {
					if s.in[a.ops[u]] {
						return nil
					}
				}
			}
			continue
		}
		if !perSample(op) {
			r := op.Result(0)
			for _, u := range a.uses[r] {
				if s.in[a.ops[u]] {
					return nil // a piece would read its partial sum
				}
			}
			s.sums = append(s.sums, r)
			if g := f.sumGroup(op, n); s.group == 0 {
				s.group = g
			} else if g != s.group {
				return nil
			}
			continue
		}
		for _, r := range op.Results() {
			for _, u := range a.uses[r] {
				if !s.in[a.ops[u]] {
					return nil
				}
			}
		}
	}
	if s.group <= 0 {
		s.group = defaultGroup
	}
	if s.pieces(s.group) < 2 || !s.deferSafe(a) {
		return nil
	}
	s.levels()
	return s
}

// need lists the ops the pieces run again when the forward keeps the
// pieces of the values of keep: the forward ops of the forward's phases
// before its last (batch norms' passes), the forward ops each backward
// phase recomputes, and the backward ops a later phase runs again. A kept
// cut is sliced from its concatenation.
func (s *segment) need(keep map[*ir.Value]bool) []*ir.Op {
	var out []*ir.Op
	for p := range s.lastPhase(false) {
		list, _ := s.phase(p, false, nil)
		out = append(out, list...)
	}
	return append(out, s.backNeed(keep)...)
}

// backNeed is the part of need that the backward pieces run again.
func (s *segment) backNeed(keep map[*ir.Value]bool) []*ir.Op {
	var out []*ir.Op
	ran := map[*ir.Op]bool{}
	for p := range s.lastPhase(true) + 1 {
		list, _ := s.phase(p, true, keep)
		for _, op := range list {
			if !s.isBackward(op) || ran[op] {
				out = append(out, op)
			}
			ran[op] = true
		}
	}
	return out
}

// isBackward reports whether op is of the backward segment.
func (s *segment) isBackward(op *ir.Op) bool {
	return len(s.bwd) > 0 && slices.Contains(s.bwd, op)
}

// kept lists the values of s's forward segment that keep holds, in
// program order.
func (s *segment) kept(keep map[*ir.Value]bool) []*ir.Value {
	var out []*ir.Value
	for _, op := range s.fwd {
		for _, v := range op.Results() {
			if keep[v] && v != s.cut {
				out = append(out, v)
			}
		}
	}
	return out
}

// defaultGroup is the samples per piece of a split whose backward segment
// sums nothing over the batch (a forward segment alone).
const defaultGroup = 4

// canonicalSum reports whether op sums over the batch the canonical way,
// for the whole batch of n samples and for one piece alike.
func (f *fitter) canonicalSum(op *ir.Op, n int) bool {
	if op.NumResults() != 1 || batchy(op.Result(0)) {
		return false
	}
	return f.sumGroup(op, n) > 0
}

// sumGroup is the group of op's canonical sum over n samples, 0 when its
// kernel does not sum that way for the batch or for a group of it.
func (f *fitter) sumGroup(op *ir.Op, n int) int {
	in := make([]ir.Type, op.NumOperands())
	for i, v := range op.Operands() {
		in[i] = f.costs.typ(v)
	}
	g := ops.BatchGroup(op, in)
	if g <= 0 {
		return 0
	}
	for i, v := range op.Operands() {
		if batchy(v) {
			in[i] = ir.TensorOf(in[i].DType, append([]int{min(g, n)}, in[i].Dims[1:]...)...)
		}
	}
	if ops.BatchGroup(op, in) != g {
		return 0
	}
	return g
}

// bounds returns the slice of samples of piece i of k samples: the last
// one runs to the end of whatever batch comes.
func (s *segment) bounds(i, k int) (lo, hi int) {
	lo, hi = i*k, (i+1)*k
	if i == s.pieces(k)-1 {
		hi = math.MaxInt32
	}
	return lo, hi
}

// piece emits one piece's copies of the given ops, reading the segment's
// values from local (and adding theirs), slicing the batch operands from
// outside and reading the others whole.
func (r *rewriter) piece(s *segment, i int, list []*ir.Op, local map[*ir.Value]*ir.Value, cut map[*ir.Value]*ir.Value) {
	k := r.s.Split[s.cut]
	for _, op := range list {
		operands := make([]*ir.Value, op.NumOperands())
		for j, u := range op.Operands() {
			r.top.SetPos(op.Pos)
			operands[j] = r.pieceOf(s, i, u, local, cut)
		}
		if isNorm(op) || isNormGrad(op) {
			n := r.normPiece(op, operands)
			if n == nil {
				return
			}
			r.out.splitOps[n] = splitNote{s.cut, i, k}
			local[op.Result(0)] = n.Result(0)
			continue
		}
		if acc := r.running[op]; acc != nil {
			// A later piece adds its sum over the batch into the running
			// one, continuing the kernel's own order.
			v, err := ops.AccumulateInto(r.top, op, acc, operands)
			if err != nil {
				r.fail(fmt.Errorf("remat: %w", err))
				return
			}
			r.out.splitOps[v.Def()] = splitNote{s.cut, i, k}
			local[op.Result(0)] = v
			continue
		}
		n := r.emit(r.top, op, operands, op.Attrs)
		r.out.splitOps[n] = splitNote{s.cut, i, k}
		for j, res := range op.Results() {
			local[res] = n.Result(j)
		}
	}
}

// pieceOf is what piece i reads for u: the piece's own value, a slice of
// a batch value from outside (cut holds the piece's slices), or u whole.
func (r *rewriter) pieceOf(s *segment, i int, u *ir.Value, local, cut map[*ir.Value]*ir.Value) *ir.Value {
	switch {
	case local[u] != nil:
		return local[u]
	case !batchy(u):
		return r.val(u)
	case cut[u] == nil:
		k := r.s.Split[s.cut]
		lo, hi := s.bounds(i, k)
		cut[u] = r.top.Op1("slice", ir.A("axes", []int{0}, "starts", []int{lo}, "ends", []int{hi}), r.val(u))
		r.out.splitOps[cut[u].Def()] = splitNote{s.cut, i, k}
		r.out.copied += r.a.elems(u) / int64(s.pieces(k))
	}
	return cut[u]
}

// forwardSplit runs the forward segment of s piece by piece and
// concatenates the pieces of its cut: first the passes of its batch
// norms' statistics, each over every piece, then every op; the ops that
// read the statistics outside the segment follow.
func (r *rewriter) forwardSplit(s *segment) *ir.Op {
	k := r.s.Split[s.cut]
	state := map[*ir.Op][2]*ir.Value{}
	for p := range s.lastPhase(false) {
		list, passes := s.phase(p, false, nil)
		r.startPasses(s, p, passes, state)
		for i := range s.pieces(k) {
			local, cut := map[*ir.Value]*ir.Value{}, map[*ir.Value]*ir.Value{}
			r.piece(s, i, list, local, cut)
			for _, op := range passes {
				r.pass(s, i, p, op, state, local, cut)
			}
			if r.err != nil {
				return nil
			}
		}
		r.out.cloned = append(r.out.cloned, list...)
		r.finishPasses(s, p, passes, state)
	}
	kept := s.kept(r.s.Keep)
	var parts []*ir.Value
	for i := range s.pieces(k) {
		local := map[*ir.Value]*ir.Value{}
		r.piece(s, i, s.fwd, local, map[*ir.Value]*ir.Value{})
		if r.err != nil {
			return nil
		}
		parts = append(parts, local[s.cut])
		for _, v := range kept {
			r.keptPieces[v] = append(r.keptPieces[v], local[v])
		}
	}
	r.top.SetPos(s.cut.Def().Pos)
	c := ops.Concat(r.top, 0, parts...)
	r.vals[s.cut] = c
	r.out.cuts[s.cut] = c
	r.out.copied += r.a.elems(s.cut)
	last := c.Def()
	for _, op := range s.deferred {
		last = r.copyTop(op)
		r.out.origin[last] = op
	}
	return last
}

// backwardSplit runs the backward segment of s piece by piece, phase by
// phase: each piece recomputes the forward values it reads, adds its
// sums over the batch to the running ones and its batch_norm_grads' sums
// to theirs, which are finished after the phase's last piece. It returns
// the last op it emits.
func (r *rewriter) backwardSplit(s *segment) *ir.Op {
	for _, op := range s.bwd {
		for _, u := range op.Operands() {
			if r.s.Drop[u] && !s.in[u.Def()] && r.a.residuals[u] == nil {
				r.materialize(u)
			}
		}
	}
	k := r.s.Split[s.cut]
	state := map[*ir.Op][2]*ir.Value{}
	for p := range s.lastPhase(true) + 1 {
		list, passes := s.phase(p, true, r.s.Keep)
		r.startPasses(s, p, passes, state)
		for i := range s.pieces(k) {
			local := map[*ir.Value]*ir.Value{}
			for _, v := range s.kept(r.s.Keep) {
				local[v] = r.keptPieces[v][i]
			}
			cut := map[*ir.Value]*ir.Value{}
			r.piece(s, i, list, local, cut)
			for _, op := range passes {
				r.pass(s, i, p, op, state, local, cut)
			}
			for _, v := range s.sums {
				if local[v] != nil {
					r.running[v.Def()] = local[v]
				}
			}
			if r.err != nil {
				return nil
			}
		}
		r.finishPasses(s, p, passes, state)
	}
	r.out.cloned = append(r.out.cloned, s.backNeed(r.s.Keep)...)
	for _, v := range s.sums {
		r.vals[v] = r.running[v.Def()]
		delete(r.running, v.Def())
	}
	ops := r.prog.Body().Ops()
	return ops[len(ops)-1]
}

// splitNote says which split, and which piece of it, an op runs.
type splitNote struct {
	cut      *ir.Value
	piece, k int // piece piece of k samples
}

// elems is the elements of v for the step (0 when not known).
func (a *analysis) elems(v *ir.Value) int64 {
	t := v.Type()
	if a.typ != nil {
		t = a.typ(v)
	}
	if !t.IsStatic() {
		return 0
	}
	return int64(t.NumElements())
}

// splits maps each op of the original program that a split of s runs to
// its segment; it fails when two splits share ops or when s drops a value
// a split makes.
func (r *rewriter) splits() map[*ir.Op]*segment {
	of := map[*ir.Op]*segment{}
	for cut := range r.s.Split {
		seg := r.a.segs[cut]
		if seg == nil {
			r.fail(fmt.Errorf("remat: %s is not a cut the batch can be split at", describe(cut)))
			return nil
		}
		if k := r.s.Split[cut]; k <= 0 || k%seg.group != 0 {
			r.fail(fmt.Errorf("remat: pieces of %d samples at %s: not whole groups of %d", k, describe(cut), seg.group))
			return nil
		}
		for op := range seg.in {
			if of[op] != nil {
				r.fail(fmt.Errorf("remat: two splits over the batch share %q at %s", op.Name(), op.Pos))
				return nil
			}
			of[op] = seg
			for _, v := range op.Results() {
				if r.s.Drop[v] {
					r.fail(fmt.Errorf("remat: %s is both dropped and split over the batch", describe(v)))
					return nil
				}
			}
		}
	}
	for v := range r.s.Keep {
		if seg := of[v.Def()]; seg == nil || !slices.Contains(seg.fwd, v.Def()) {
			r.fail(fmt.Errorf("remat: %s is kept whole for a split over the batch that does not make it", describe(v)))
			return nil
		}
	}
	return of
}

// splitAt returns s with the step split at cut in pieces of k samples:
// the splits whose ops it shares are taken back, and so are the drops of
// the values it makes (the pieces recompute them).
func (f *fitter) splitAt(s Schedule, cut *ir.Value, k int) Schedule {
	n := s.clone()
	seg := f.a.segs[cut]
	for other := range n.Split {
		for op := range f.a.segs[other].in {
			if seg.in[op] {
				delete(n.Split, other)
				break
			}
		}
	}
	for op := range seg.in {
		for _, v := range op.Results() {
			delete(n.Drop, v)
			delete(n.Again, v)
		}
	}
	n.Split[cut] = k
	f.dropKeeps(n)
	return n
}

// dropKeeps takes back the values kept whole for splits that s no longer
// makes.
func (f *fitter) dropKeeps(s Schedule) {
	for v := range s.Keep {
		split := false
		for cut := range s.Split {
			split = split || slices.Contains(f.a.segs[cut].fwd, v.Def())
		}
		if !split {
			delete(s.Keep, v)
		}
	}
}

// keeps lists the moves that keep one more value of a split's forward
// segment whole instead of recomputing it in the backward pieces: the
// values the pieces recompute, those whose keeping spares the most work
// first.
func (f *fitter) keeps(st *state) []Schedule {
	type keep struct {
		v     *ir.Value
		saved int64
	}
	var ks []keep
	for _, cut := range f.sortedSplits(st.s) {
		seg := f.a.segs[cut]
		var before int64
		need := seg.need(st.s.Keep)
		for _, op := range need {
			before += f.costs.of[op]
		}
		for _, op := range need {
			for _, v := range op.Results() {
				if !batchy(v) {
					continue
				}
				with := map[*ir.Value]bool{v: true}
				for k := range st.s.Keep {
					with[k] = true
				}
				var after int64
				for _, o := range seg.need(with) {
					after += f.costs.of[o]
				}
				if after < before {
					ks = append(ks, keep{v, before - after})
				}
			}
		}
	}
	sort.SliceStable(ks, func(i, j int) bool { return ks[i].saved > ks[j].saved })
	out := make([]Schedule, len(ks))
	for i, k := range ks {
		out[i] = st.s.clone()
		out[i].Keep[k.v] = true
	}
	return out
}

// sortedSplits lists the cuts of s in program order.
func (f *fitter) sortedSplits(s Schedule) []*ir.Value {
	cuts := make([]*ir.Value, 0, len(s.Split))
	for v := range s.Split {
		cuts = append(cuts, v)
	}
	slices.SortFunc(cuts, func(x, y *ir.Value) int { return f.order(x, nil) - f.order(y, nil) })
	return cuts
}

// reportSplits lists the splits of st.
func (f *fitter) reportSplits(st *state) []Split {
	var out []Split
	for _, cut := range f.sortedSplits(st.s) {
		seg := f.a.segs[cut]
		var flops int64
		for _, op := range seg.need(st.s.Keep) {
			flops += f.costs.of[op]
		}
		var kept []string
		if st.s.Keep[cut] {
			kept = append(kept, f.names[cut])
		}
		for _, v := range seg.kept(st.s.Keep) {
			kept = append(kept, f.names[v])
		}
		k := st.s.Split[cut]
		out = append(out, Split{Cut: f.names[cut], Op: cut.Def().Name(), Pos: cut.Def().Pos, Pieces: seg.pieces(k), Samples: k,
			ForwardOps: len(seg.fwd), BackOps: len(seg.bwd), Flops: flops, Kept: kept,
			ForwardPasses: seg.lastPhase(false) + 1, BackPasses: seg.lastPhase(true) + 1})
	}
	return out
}
