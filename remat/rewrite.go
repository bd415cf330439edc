package remat

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// Schedule is a choice of what the backward pass recomputes.
type Schedule struct {
	// Drop holds top-level values of the forward pass that the backward
	// pass recomputes instead of keeping: results of plain ops, and
	// residual results of a forward "if" (recomputed inside the backward
	// "if"). A dropped value is recomputed only where something reads it
	// late; the values it is recomputed from are those not dropped.
	Drop map[*ir.Value]bool
	// Every maps a forward "while" whose tapes are replaced by
	// checkpoints to how often they are taken: every k-th trip's carried
	// values.
	Every map[*ir.Op]int
	// Again holds, for a dropped top-level value, the indices of the
	// top-level ops of the original program before which it is
	// recomputed afresh: its earlier copy dies at its last use before
	// them, instead of living on to its last use of all.
	Again map[*ir.Value]map[int]bool
	// Split maps the cuts at which the step runs over the batch in pieces
	// (split.go) to the samples per piece, a multiple of the kernels'
	// group: the forward ops that make the cut, and the backward ops that
	// read their values, run that many samples at a time.
	Split map[*ir.Value]int
	// Keep holds values of a split's forward segment whose pieces the
	// forward keeps for the backward pieces of the same samples, instead
	// of recomputing them.
	Keep map[*ir.Value]bool
	// Early moves the updates of parameters and optimizer state to right
	// after their gradients are complete and their parameters last read
	// (updates.go), instead of after the whole backward pass; with Grads,
	// the ops that make their gradients move up too.
	Early, Grads bool
}

func (s Schedule) clone() Schedule {
	n := Schedule{Drop: make(map[*ir.Value]bool, len(s.Drop)), Every: make(map[*ir.Op]int, len(s.Every)), Again: make(map[*ir.Value]map[int]bool, len(s.Again)), Split: make(map[*ir.Value]int, len(s.Split)), Keep: make(map[*ir.Value]bool, len(s.Keep))}
	for v, k := range s.Split {
		n.Split[v] = k
	}
	for v := range s.Keep {
		n.Keep[v] = true
	}
	for v := range s.Drop {
		n.Drop[v] = true
	}
	for v, at := range s.Again {
		n.Again[v] = make(map[int]bool, len(at))
		for i := range at {
			n.Again[v][i] = true
		}
	}
	for op, k := range s.Every {
		n.Every[op] = k
	}
	n.Early, n.Grads = s.Early, s.Grads
	return n
}

// rewritten is a program with a schedule applied.
type rewritten struct {
	prog *ir.Program
	// recomputes maps each op the rewrite inserted to recompute a value to
	// the value of the new program it stands for (the forward copy), or
	// nil when the forward no longer makes it.
	recomputes map[*ir.Op]*ir.Value
	// origin maps each top-level op of the new program that copies one of
	// the original to that op.
	origin map[*ir.Op]*ir.Op
	// cloned lists the original ops run again, once per copy (the body of
	// a checkpointed loop counts as its "while").
	cloned []*ir.Op
	// source maps each op inserted to recompute a value to the original
	// op it copies.
	source map[*ir.Op]*ir.Op
	// loops maps each loop of the new program that recomputes the trips
	// of a checkpointed loop to that loop's forward copy.
	loops map[*ir.Op]*ir.Op
	// fwdLoops maps each checkpointed loop of the original to its forward
	// copy.
	fwdLoops map[*ir.Op]*ir.Op
	// madeAt lists, for each dropped top-level value, the indices of the
	// original top-level ops before which it was recomputed.
	madeAt map[*ir.Value][]int
	// splitOps notes each op a split over the batch runs, cuts maps each
	// cut to its concatenation in the new program, and copied counts the
	// elements the splits slice, concatenate and add.
	splitOps map[*ir.Op]splitNote
	cuts     map[*ir.Value]*ir.Value
	segs     map[*ir.Value]*segment
	copied   int64
	// hoisted holds the updates moved earlier and the parameter ops moved
	// with them (Schedule.Early).
	hoisted map[*ir.Op]bool
}

type rewriter struct {
	*copier
	a   *analysis
	s   Schedule
	out *rewritten
	top *ir.Builder
	// cur is the top-level op of the new program being built, before
	// which top-level values are recomputed; nil between ops.
	cur *ir.Op
	// fwd maps a dropped value to its copy in the forward pass.
	fwd map[*ir.Value]*ir.Value
	// clones maps a dropped top-level value to its recomputed copy.
	clones map[*ir.Value]*ir.Value
	// at is the index of the original top-level op being copied.
	at int
	// ckpt holds the checkpoint stacks each checkpointed loop returns.
	ckpt map[*ir.Op][]*ir.Value
	// keptPieces holds the forward pieces of each value a split keeps.
	keptPieces map[*ir.Value][]*ir.Value
	// normCoef maps each batch norm a split runs in passes to its
	// finished statistics' coefficients, normAcc each batch_norm_grad to
	// its finished sums.
	normCoef, normAcc map[*ir.Op]*ir.Value
	// running maps each sum over the batch of the backward pieces being
	// built to its running sum so far.
	running map[*ir.Op]*ir.Value
}

// rewrite applies schedule s to the analysed program.
func (a *analysis) rewrite(s Schedule) (*rewritten, error) {
	r := &rewriter{copier: newCopier(), a: a, s: s, fwd: map[*ir.Value]*ir.Value{}, clones: map[*ir.Value]*ir.Value{}, ckpt: map[*ir.Op][]*ir.Value{}, keptPieces: map[*ir.Value][]*ir.Value{}, running: map[*ir.Op]*ir.Value{}, normCoef: map[*ir.Op]*ir.Value{}, normAcc: map[*ir.Op]*ir.Value{},
		out: &rewritten{recomputes: map[*ir.Op]*ir.Value{}, origin: map[*ir.Op]*ir.Op{}, loops: map[*ir.Op]*ir.Op{}, fwdLoops: map[*ir.Op]*ir.Op{}, source: map[*ir.Op]*ir.Op{}, madeAt: map[*ir.Value][]int{},
			splitOps: map[*ir.Op]splitNote{}, cuts: map[*ir.Value]*ir.Value{}, segs: a.segs}}
	r.out.prog = r.prog
	r.top = ir.NewBuilder(r.prog)
	split := r.splits()
	if r.err != nil {
		return nil, r.err
	}
	deferred := map[*ir.Op]bool{}
	for cut := range s.Split {
		for _, op := range a.segs[cut].deferred {
			deferred[op] = true
		}
	}
	for i, op := range a.ops {
		r.at = i
		if deferred[op] {
			continue // after its split's forward pieces (norms.go)
		}
		if seg := split[op]; seg != nil {
			switch {
			case op == seg.cut.Def():
				r.out.origin[r.forwardSplit(seg)] = op
			case len(seg.bwd) > 0 && op == seg.bwd[0]:
				r.out.origin[r.backwardSplit(seg)] = seg.bwd[len(seg.bwd)-1]
			}
			if r.err != nil {
				return nil, r.err
			}
			continue
		}
		if i >= a.bwd {
			for v, at := range s.Again {
				if at[i] {
					delete(r.clones, v)
				}
			}
			for _, v := range r.lateDrops(op) {
				r.materialize(v)
			}
		}
		var n *ir.Op
		switch {
		case len(a.ifOf[op]) > 0 && r.dropsAny(a.ifOf[op]):
			n = r.backwardIf(op)
		case a.loopOf[op] != nil && s.Every[a.loopOf[op].fwd] > 0:
			n = r.backwardLoop(a.loopOf[op])
		case op.Name() == "if" && i < a.bwd:
			n = r.forwardIf(op)
		case a.loops[op] != nil && s.Every[op] > 0:
			n = r.forwardLoop(a.loops[op], s.Every[op])
		default:
			n = r.copyTop(op)
		}
		r.cur = nil
		r.out.origin[n] = op
		if r.err != nil {
			return nil, r.err
		}
	}
	if s.Early {
		from := -1
		for i, op := range r.prog.Body().Ops() {
			if o := r.out.origin[op]; o != nil && a.pos[o] >= a.bwd {
				from = i
				break
			}
		}
		moved, err := hoistUpdates(r.prog.Body(), from, s.Grads)
		if err != nil {
			return nil, fmt.Errorf("remat: moving the updates: %w", err)
		}
		r.out.hoisted = moved
	}
	if err := r.fusePieces(); err != nil {
		return nil, err
	}
	return r.out, nil
}

// dropsAny reports whether the schedule drops one of the residuals.
func (r *rewriter) dropsAny(res []*residual) bool {
	for _, x := range res {
		if r.s.Drop[x.fwd.Result(x.j)] {
			return true
		}
	}
	return false
}

// copyTop copies a top-level op, pinning the stream of a random op whose
// results are dropped, and notes the forward copies of dropped values.
func (r *rewriter) copyTop(op *ir.Op) *ir.Op {
	pin := false
	for _, v := range op.Results() {
		pin = pin || r.s.Drop[v] && ops.Random(op)
	}
	var n *ir.Op
	if pin {
		operands := make([]*ir.Value, op.NumOperands())
		for i, v := range op.Operands() {
			operands[i] = r.val(v)
		}
		n = r.emit(r.top, op, operands, ops.Pin(op))
		r.mapResults(op, n)
	} else {
		n = r.copyOp(r.top, op)
	}
	r.noteForward(op)
	return n
}

func (r *rewriter) noteForward(op *ir.Op) {
	for _, v := range op.Results() {
		if r.s.Drop[v] {
			r.fwd[v] = r.vals[v]
		}
	}
}

// lateDrops lists the dropped top-level values that top-level op reads,
// itself or inside its regions, except residuals of an "if" (recomputed
// inside the backward "if").
func (r *rewriter) lateDrops(op *ir.Op) []*ir.Value {
	var out []*ir.Value
	seen := map[*ir.Value]bool{}
	walkOp(op, func(o *ir.Op) {
		for _, v := range o.Operands() {
			if v != nil && r.s.Drop[v] && v.Block() == r.a.top && r.a.residuals[v] == nil && !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
	})
	return out
}

// here returns a builder that inserts top-level recomputation: before the
// op being built, or at the end.
func (r *rewriter) here() *ir.Builder {
	if r.cur != nil {
		return r.top.At(r.prog.Body(), r.prog.Body().IndexOf(r.cur))
	}
	return r.top
}

// materialize recomputes dropped top-level value v (and the dropped
// values it is made from) where here says, once.
func (r *rewriter) materialize(v *ir.Value) *ir.Value {
	if n, ok := r.clones[v]; ok {
		return n
	}
	op := v.Def()
	if op == nil || op.Block() != r.a.top || !recomputable(op) || r.a.residuals[v] != nil {
		r.fail(fmt.Errorf("remat: %s cannot be recomputed at the top level", describe(v)))
		return nil
	}
	var dropped []int
	for i, res := range op.Results() {
		if r.s.Drop[res] {
			dropped = append(dropped, i)
		}
	}
	if r.a.overwritten(op, r.a.pos[op]+1, r.at, dropped) {
		r.fail(fmt.Errorf("remat: %s reads a value that is updated in place before the backward pass needs it", describe(v)))
		return nil
	}
	operands := make([]*ir.Value, op.NumOperands())
	for i, u := range op.Operands() {
		if r.s.Drop[u] && r.a.residuals[u] == nil {
			operands[i] = r.materialize(u)
		} else {
			operands[i] = r.val(u)
		}
	}
	n := r.emit(r.here(), op, operands, ops.Pin(op))
	r.out.cloned = append(r.out.cloned, op)
	r.out.source[n] = op
	r.out.recomputes[n] = r.fwd[v]
	for _, i := range dropped {
		res := op.Result(i)
		r.clones[res] = n.Result(i)
		r.vals[res] = n.Result(i)
		r.out.madeAt[res] = append(r.out.madeAt[res], r.at)
	}
	return r.clones[v]
}

// forwardIf copies a forward "if" without the residual results the
// schedule drops; ops of its branches that only fed those go too. Random
// ops in the branches are pinned, so that what goes does not move them.
func (r *rewriter) forwardIf(op *ir.Op) *ir.Op {
	var keep []int
	var types []ir.Type
	for j, res := range op.Results() {
		if !r.s.Drop[res] {
			keep = append(keep, j)
			types = append(types, res.Type())
		}
	}
	if len(keep) == op.NumResults() {
		return r.copyTop(op)
	}
	r.top.SetPos(op.Pos)
	n := r.top.Generic("if", []*ir.Value{r.val(op.Operand(0))}, op.Attrs, types, 2)
	for k := range 2 {
		blk := op.Region(k).Block()
		y := blk.Terminator()
		gone := map[int]bool{}
		for j, res := range op.Results() {
			if r.s.Drop[res] {
				gone[j] = true
			}
		}
		b := r.top.At(n.Region(k).Block(), -1)
		for _, o := range blk.Ops() {
			if o == y {
				break
			}
			if feedsOnly(o, y, gone) {
				continue
			}
			operands := make([]*ir.Value, o.NumOperands())
			for i, v := range o.Operands() {
				operands[i] = r.val(v)
			}
			if len(o.Regions()) > 0 {
				r.copyOp(b, o)
				continue
			}
			c := r.emit(b, o, operands, ops.Pin(o))
			r.mapResults(o, c)
		}
		var ys []*ir.Value
		for _, j := range keep {
			ys = append(ys, r.val(y.Operand(j)))
		}
		b.Yield(ys...).Pos = y.Pos
	}
	for i, j := range keep {
		r.vals[op.Result(j)] = n.Result(i)
	}
	for j, res := range op.Results() {
		if r.s.Drop[res] {
			inner := op.Region(r.a.residuals[res].k).Block().Terminator().Operand(j)
			r.fwd[res] = r.vals[inner] // nil when it went
		}
	}
	return n
}

// feedsOnly reports whether every result of o is read only by the given
// operands of yield y (and o is free of effects).
func feedsOnly(o, y *ir.Op, operands map[int]bool) bool {
	if !recomputable(o) {
		return false
	}
	for _, res := range o.Results() {
		for _, u := range res.Uses() {
			if u.Op != y || !operands[u.Index] {
				return false
			}
		}
	}
	return true
}

// backwardIf copies a backward "if" whose forward drops residuals: the
// branch that reads them recomputes each before its first use there.
func (r *rewriter) backwardIf(op *ir.Op) *ir.Op {
	fwd := r.a.ifOf[op][0].fwd
	types := make([]ir.Type, op.NumResults())
	for i, v := range op.Results() {
		types[i] = v.Type()
	}
	r.top.SetPos(op.Pos)
	n := r.top.Generic("if", []*ir.Value{r.val(op.Operand(0))}, op.Attrs, types, 2)
	r.cur = n
	for kk := range 2 {
		b := r.top.At(n.Region(kk).Block(), -1)
		br := &branchCopy{r: r, fwd: fwd, k: kk, b: b, clones: map[*ir.Value]*ir.Value{}}
		var set []*ir.Value
		for _, o := range op.Region(kk).Block().Ops() {
			walkOp(o, func(inner *ir.Op) {
				for _, v := range inner.Operands() {
					x := r.a.residuals[v]
					if x == nil || x.fwd != fwd || !r.s.Drop[v] {
						continue
					}
					if _, done := r.vals[v]; done {
						continue
					}
					if x.k != kk {
						r.fail(fmt.Errorf("remat: %s is read by the other branch of the backward \"if\"", describe(v)))
						return
					}
					r.vals[v] = br.recompute(x.inner)
					set = append(set, v)
				}
			})
			r.copyOp(b, o)
		}
		for _, v := range set {
			delete(r.vals, v)
		}
	}
	r.mapResults(op, n)
	return n
}

// branchCopy recomputes values of branch k of forward "if" fwd inside the
// matching branch of its backward "if" (builder b).
type branchCopy struct {
	r      *rewriter
	fwd    *ir.Op
	k      int
	b      *ir.Builder
	clones map[*ir.Value]*ir.Value
}

// recompute returns value v of the forward branch recomputed in the
// backward branch: a kept residual that holds v, or a copy of the op
// that made it, from recomputed operands of the branch and values from
// outside the "if".
func (br *branchCopy) recompute(v *ir.Value) *ir.Value {
	r := br.r
	if n, ok := br.clones[v]; ok {
		return n
	}
	branch := br.fwd.Region(br.k).Block()
	y := branch.Terminator()
	for j, u := range y.Operands() {
		if u == v && r.a.residuals[br.fwd.Result(j)] != nil && !r.s.Drop[br.fwd.Result(j)] {
			return r.val(br.fwd.Result(j))
		}
	}
	op := v.Def()
	if op == nil || op.Block() != branch || !recomputable(op) {
		r.fail(fmt.Errorf("remat: %s cannot be recomputed in the backward \"if\"", describe(v)))
		return nil
	}
	all := make([]int, op.NumResults())
	for i := range all {
		all[i] = i
	}
	if r.a.overwritten(op, r.a.pos[br.fwd], r.at, all) {
		r.fail(fmt.Errorf("remat: %s reads a value that is updated in place before the backward pass needs it", describe(v)))
		return nil
	}
	operands := make([]*ir.Value, op.NumOperands())
	for i, u := range op.Operands() {
		switch {
		case u.Block() == branch:
			operands[i] = br.recompute(u)
		case r.s.Drop[u] && u.Block() == r.a.top && r.a.residuals[u] == nil:
			operands[i] = r.materialize(u)
		default:
			operands[i] = r.val(u)
		}
	}
	n := r.emit(br.b, op, operands, ops.Pin(op))
	r.out.cloned = append(r.out.cloned, op)
	r.out.source[n] = op
	r.out.recomputes[n] = r.vals[v]
	for i, res := range op.Results() {
		br.clones[res] = n.Result(i)
	}
	return br.clones[v]
}
