package optimize

import (
	"context"
	"fmt"
	"slices"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
)

// MaxFoldBytes bounds the values FoldConstants computes: an op whose
// result (any of them) would hold more bytes is left to run, and so are
// the ops that read it. A folded value lives in the program, as the
// attribute of a constant op, and each run copies it out; 1 MiB keeps the
// program small while taking the index grids and anchor tables models
// build from arange and full (ppyoloe_s's largest is 16.4 KB).
const MaxFoldBytes = 1 << 20

// FoldConstants computes at compile time each op of the program's top
// level whose operands are all known before any run — results of
// constant, full, arange and of other folded ops — and puts a constant
// op holding its value where a value leaves the folded ops. Parameters
// are not known (the store's values may change between runs), nor are
// feeds. An op folds only when its definition lets it (foldable): it has
// a kernel and results of static tensor types of at most MaxFoldBytes,
// no regions, draws no random numbers (ops.Random), writes no operand,
// exchanges nothing with other ranks and takes no stacks. Ops inside
// regions are left as they are.
//
// Each value comes from the op's own kernel, run once on one thread on
// an allocator of the pass's own (the user's allocator is not touched):
// the bits are those a run computes, for every kernel whose bits do not
// depend on the thread count (all the elementwise, shape and index ops;
// a sum split among threads folds to its one-thread bits). An op whose
// kernel fails is left to fail at run time. In ppyoloe_s's head the
// anchor points and strides (arange, full, reshape, add, concat, divide:
// 24 ops) and the bins' [0..16] column (a reshape of an arange) become
// three constants. It returns the new program and how many ops with
// operands it removed.
func FoldConstants(p *ir.Program) (*ir.Program, int, error) {
	q := clone(p)
	alloc := memory.New(memory.Options{})
	known := map[*ir.Value]ir.Dense{}
	var folded []*ir.Op
	for _, op := range q.Body().Ops() {
		if !foldable(op, known) {
			continue
		}
		vals, ok := evalOp(op, known, alloc)
		if !ok {
			continue
		}
		for i, r := range op.Results() {
			known[r] = vals[i]
		}
		folded = append(folded, op)
	}
	// Each value read by an op that did not fold becomes a constant,
	// unless its op has no operands (a constant, full or arange is as
	// cheap as the copy a constant makes).
	removed := 0
	for _, op := range folded {
		if op.NumOperands() == 0 {
			continue
		}
		for _, r := range op.Results() {
			if !readOutside(r, known) {
				continue
			}
			b := builderBefore(q, op)
			c := ops.Constant(b, known[r])
			if err := b.Err(); err != nil {
				return nil, 0, fmt.Errorf("optimize: fold_constants: %s at %s: %w", op.Name(), op.Pos, err)
			}
			known[c] = known[r]
			r.ReplaceAllUsesWith(c)
		}
	}
	// The folded ops are now unused: erase them, last first, so that
	// each is unused when erased.
	for i := len(folded) - 1; i >= 0; i-- {
		op := folded[i]
		if used(op) {
			continue
		}
		if op.NumOperands() > 0 {
			removed++
		}
		if err := op.Erase(); err != nil {
			return nil, 0, fmt.Errorf("optimize: fold_constants: %s at %s: %w", op.Name(), op.Pos, err)
		}
	}
	return q, removed, nil
}

// foldable reports whether op may be computed at compile time: its
// definition allows it (see FoldConstants) and every operand is known.
func foldable(op *ir.Op, known map[*ir.Value]ir.Dense) bool {
	d, ok := ops.Lookup(op.Name())
	if !ok || (d.Compute == nil && d.Bind == nil) || d.Stacks || len(d.Writes) > 0 {
		return false
	}
	if len(op.Regions()) > 0 || op.NumResults() == 0 || ops.Random(op) || ops.Collective(op) {
		return false
	}
	for _, v := range op.Operands() {
		if _, ok := known[v]; !ok {
			return false
		}
	}
	for _, r := range op.Results() {
		t := r.Type()
		if t.IsStack() || t.Unranked || !t.IsStatic() || t.NumElements()*t.DType.Size() > MaxFoldBytes {
			return false
		}
	}
	return true
}

// evalOp runs op alone on its known operands, each given by a constant
// op, and returns its results; false when the kernel fails or a result
// is not of the type op declares.
func evalOp(op *ir.Op, known map[*ir.Value]ir.Dense, alloc *memory.Allocator) ([]ir.Dense, bool) {
	if op.Name() == "constant" {
		d, err := op.Attrs.Dense("value")
		return []ir.Dense{d}, err == nil
	}
	p := ir.NewProgram()
	b := ir.NewBuilder(p)
	operands := make([]*ir.Value, op.NumOperands())
	for i, v := range op.Operands() {
		operands[i] = ops.Constant(b, known[v])
	}
	types := make([]ir.Type, op.NumResults())
	for i, r := range op.Results() {
		types[i] = r.Type()
	}
	e := b.Generic(op.Name(), operands, op.Attrs, types, 0)
	for i, r := range e.Results() {
		ops.Fetch(b, fmt.Sprint("r", i), r)
	}
	if b.Err() != nil {
		return nil, false
	}
	x, err := exec.Compile(p, exec.Options{Alloc: alloc, Threads: 1})
	if err != nil {
		return nil, false
	}
	out, err := x.Run(context.Background(), nil)
	if err != nil {
		return nil, false
	}
	defer out.Release()
	vals := make([]ir.Dense, len(types))
	for i, t := range types {
		r, ok := out[fmt.Sprint("r", i)]
		if !ok || ir.DType(r.DType()) != t.DType || !slices.Equal(r.Shape(), t.Dims) {
			return nil, false
		}
		if vals[i], err = ir.NewDense(t, r.Raw()); err != nil {
			return nil, false
		}
	}
	return vals, true
}

// readOutside reports whether an op that did not fold reads v.
func readOutside(v *ir.Value, known map[*ir.Value]ir.Dense) bool {
	for _, u := range v.Uses() {
		if !foldedOp(u.Op, known) {
			return true
		}
	}
	return false
}

// foldedOp reports whether op's results are known (op folded).
func foldedOp(op *ir.Op, known map[*ir.Value]ir.Dense) bool {
	if op.NumResults() == 0 {
		return false
	}
	_, ok := known[op.Result(0)]
	return ok
}

// used reports whether any result of op has a use.
func used(op *ir.Op) bool {
	for _, r := range op.Results() {
		if len(r.Uses()) > 0 {
			return true
		}
	}
	return false
}
