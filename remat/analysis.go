package remat

import (
	"fmt"
	"slices"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// analysis is what the rematerializer knows of the original program: its
// top-level ops, where the backward pass begins, who uses each top-level
// value, what is updated in place, and the pairs of forward and backward
// regions whose residuals can be recomputed.
type analysis struct {
	prog *ir.Program
	top  *ir.Block
	ops  []*ir.Op
	pos  map[*ir.Op]int // index of each top-level op
	bwd  int            // index of the first op of the backward pass
	// uses lists, for each top-level value, the indices of the top-level
	// ops that read it (directly or inside their regions), ascending.
	uses map[*ir.Value][]int
	// writes lists the in-place updates: the top-level index of the op
	// that makes them and what they update.
	writes []written
	// residuals: each residual result of a forward "if" that only the
	// matching branch of one backward "if" reads.
	residuals map[*ir.Value]*residual
	// loops: each forward "while" whose tapes one backward "while" pops,
	// in a form the checkpointing rewrite knows.
	loops map[*ir.Op]*loopPair
	// backwardOf maps a backward region op to what it pairs with.
	ifOf   map[*ir.Op][]*residual
	loopOf map[*ir.Op]*loopPair
	// segs: the cuts at which the step can be split over the batch, and
	// typ the values' types for the step (both set by the fitter).
	segs map[*ir.Value]*segment
	typ  func(*ir.Value) ir.Type
}

type written struct {
	at  int
	key any
}

// residual is result j of forward "if" fwd, yielded by branch k as value
// inner and read only inside branch k of backward "if" bwd.
type residual struct {
	fwd, bwd *ir.Op
	k, j     int
	inner    *ir.Value
}

// loopPair is a forward "while" and the backward "while" autodiff made for
// it: the forward carries its original values, then its trip counter
// (index counter), then its tapes (stacks of residuals) from first to
// last; the backward carries gradients, its count of trips left (index
// bwdCounter among its carried values) and the same tapes (bwdTapes).
type loopPair struct {
	fwd, bwd   *ir.Op
	counter    int
	bwdCounter int
	bwdTapes   []int
}

// storageKey is what an in-place update of v changes: the store's entry
// for a parameter (two "parameter" ops of one name share it), else v.
func storageKey(v *ir.Value) any {
	if op := v.Def(); op != nil && op.Name() == "parameter" {
		name, _ := op.Attrs.Str("name")
		return "parameter " + name
	}
	return v
}

func analyze(p *ir.Program, backward *ir.Op) (*analysis, error) {
	a := &analysis{prog: p, top: p.Body(), ops: p.Body().Ops(), pos: map[*ir.Op]int{}, uses: map[*ir.Value][]int{},
		residuals: map[*ir.Value]*residual{}, loops: map[*ir.Op]*loopPair{}, ifOf: map[*ir.Op][]*residual{}, loopOf: map[*ir.Op]*loopPair{}, segs: map[*ir.Value]*segment{}}
	for i, op := range a.ops {
		a.pos[op] = i
	}
	bwd, ok := a.pos[backward]
	if !ok {
		return nil, fmt.Errorf("remat: the first op of the backward pass is not an op of the program's top level")
	}
	a.bwd = bwd
	for i, op := range a.ops {
		walkOp(op, func(o *ir.Op) {
			for _, v := range o.Operands() {
				if v != nil && v.Block() == a.top {
					if u := a.uses[v]; len(u) == 0 || u[len(u)-1] != i {
						a.uses[v] = append(u, i)
					}
				}
			}
			if spec, ok := ir.LookupSpec(o.Name()); ok {
				for _, j := range spec.Writes {
					if j < o.NumOperands() {
						a.writes = append(a.writes, written{at: i, key: storageKey(o.Operand(j))})
					}
				}
			}
		})
	}
	for _, op := range a.ops[:bwd] {
		switch op.Name() {
		case "if":
			a.findResiduals(op)
		case "while":
			if lp := a.findLoop(op); lp != nil {
				a.loops[op] = lp
				a.loopOf[lp.bwd] = lp
			}
		}
	}
	return a, nil
}

// walkOp calls fn on op and on every op nested in its regions.
func walkOp(op *ir.Op, fn func(*ir.Op)) {
	fn(op)
	for _, r := range op.Regions() {
		ir.WalkBlock(r.Block(), func(o *ir.Op) bool { fn(o); return true })
	}
}

// lateUses returns the indices of the ops at or after the start of the
// backward pass that read top-level value v.
func (a *analysis) lateUses(v *ir.Value) []int {
	u := a.uses[v]
	i, _ := slices.BinarySearch(u, a.bwd)
	return u[i:]
}

// overwritten reports whether an operand of op that one of the given
// results reads is updated in place by a top-level op in [from, to): a
// copy of op run before op to would read the new contents.
func (a *analysis) overwritten(op *ir.Op, from, to int, results []int) bool {
	for _, r := range results {
		for _, j := range ops.Reads(op, r) {
			key := storageKey(op.Operand(j))
			for _, w := range a.writes {
				if w.at >= from && w.at < to && w.key == key {
					return true
				}
			}
		}
	}
	return false
}

// findResiduals records the residual results of forward "if" op: results
// that no forward op reads and that only one branch of one backward "if"
// reads, yielded by that branch as a value of its own.
func (a *analysis) findResiduals(op *ir.Op) {
	for j, r := range op.Results() {
		uses := a.uses[r]
		if len(uses) != 1 || uses[0] < a.bwd {
			continue
		}
		bwd := a.ops[uses[0]]
		if bwd.Name() != "if" || bwd.Operand(0) != op.Operand(0) {
			continue
		}
		k := branchOf(bwd, r.Uses()[0].Op)
		for _, u := range r.Uses()[1:] {
			if branchOf(bwd, u.Op) != k {
				k = -1
			}
		}
		if k < 0 {
			continue
		}
		inner := op.Region(k).Block().Terminator().Operand(j)
		if inner.Def() == nil || inner.Block() != op.Region(k).Block() {
			continue
		}
		res := &residual{fwd: op, bwd: bwd, k: k, j: j, inner: inner}
		a.residuals[r] = res
		a.ifOf[bwd] = append(a.ifOf[bwd], res)
	}
}

// branchOf returns the branch of "if" op that holds o (at any depth), or
// -1.
func branchOf(op, o *ir.Op) int {
	for k := range 2 {
		if op.Region(k).Block().Encloses(o.Block()) {
			return k
		}
	}
	return -1
}

// findLoop recognizes a forward "while" with tapes and its backward: the
// backward takes the forward's trip count and its tapes, the forward
// counts its trips from 0 in the carried value after its own, and its
// body has no regions, no random or collective ops and no stacks of its
// own.
func (a *analysis) findLoop(fwd *ir.Op) *loopPair {
	// The backward: the loop that takes the forward's tapes, which only it
	// reads; the counter: the one other result it takes.
	var bwd *ir.Op
	var tapes []int
	for i, r := range fwd.Results() {
		if !r.Type().IsStack() {
			continue
		}
		uses := a.uses[r]
		if len(uses) != 1 || uses[0] < a.bwd || a.ops[uses[0]].Name() != "while" || bwd != nil && a.ops[uses[0]] != bwd {
			return nil
		}
		bwd = a.ops[uses[0]]
		tapes = append(tapes, i)
	}
	if bwd == nil {
		return nil
	}
	counter := -1
	for _, v := range bwd.Operands() {
		if v.Def() == fwd && !v.Type().IsStack() {
			if counter >= 0 {
				return nil
			}
			counter = v.Index()
		}
	}
	if counter < 0 {
		return nil
	}
	// The carried values: originals, the counter, then the tapes alone.
	if tapes[0] != counter+1 || tapes[len(tapes)-1] != fwd.NumResults()-1 || len(tapes) != fwd.NumResults()-counter-1 {
		return nil
	}
	body := fwd.Region(0).Block()
	args := body.Args()
	for _, v := range args[:counter] {
		if v.Type().IsStack() {
			return nil
		}
	}
	init := fwd.Operand(1 + counter)
	if init.Def() == nil || init.Def().Name() != "full" || init.Type().DType != ir.I64 {
		return nil
	}
	next := body.Terminator().Operand(1 + counter)
	if next.Def() == nil || next.Def().Name() != "add" || next.Def().Operand(0) != args[counter] {
		return nil
	}
	chain := map[*ir.Value]bool{}
	for _, v := range args[counter+1:] {
		chain[v] = true
	}
	for _, op := range body.Ops() {
		if len(op.Regions()) > 0 || ops.Random(op) || ops.Collective(op) {
			return nil
		}
		if d, ok := ops.Lookup(op.Name()); ok && d.Stacks {
			if op.Name() != "stack_push" || !chain[op.Operand(0)] {
				return nil
			}
			chain[op.Result(0)] = true
		}
	}
	for _, t := range tapes {
		if d := fwd.Operand(1 + t).Def(); d == nil || d.Name() != "stack_new" {
			return nil
		}
	}
	lp := &loopPair{fwd: fwd, bwd: bwd, counter: counter, bwdCounter: -1}
	for i, v := range bwd.Operands()[1:] {
		switch {
		case v == fwd.Result(counter):
			lp.bwdCounter = i
		case v.Def() == fwd:
			lp.bwdTapes = append(lp.bwdTapes, i)
		}
	}
	if lp.bwdCounter < 0 || len(lp.bwdTapes) != len(tapes) {
		return nil
	}
	bb := bwd.Region(0).Block()
	y := bb.Terminator()
	cond := y.Operand(0)
	if cond.Def() == nil || cond.Def().Name() != "greater_than" || cond.Def().Operand(0) != y.Operand(1+lp.bwdCounter) {
		return nil
	}
	for _, t := range lp.bwdTapes {
		if len(a.uses[bwd.Result(t)]) > 0 || t <= lp.bwdCounter {
			return nil
		}
	}
	return lp
}
