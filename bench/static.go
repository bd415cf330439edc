package bench

import (
	"fmt"
	"slices"

	"github.com/gopir/gopir/ir"
)

// StaticBound is the liveness lower bound of a straight-line program
// computed from its text alone, as a cross-check of TraceRun: the types
// are inferred again through the top-level ops (each op's registered Infer
// hook) from the feeds' actual shapes, so every size is known; then, as in
// exec's liveBound test, each value is alive from the op that defines it
// to its last use (a fetched value to the end) and the bound is the
// largest sum at any op, each value's bytes rounded up to align. Feeds and
// parameters are not counted. Values that share a buffer with an operand
// count once, for as long as any of them lives: the views (reshape,
// flatten, squeeze, unsqueeze, reshape_like), the identities that share
// their operand (assign, stop_gradient, a cast to the same dtype, a
// reduce_sum_to whose result has its operand's shape), and parameters and
// feeds themselves. It fails on programs with regions.
func StaticBound(p *ir.Program, feedShapes map[string][]int, align int64) (int64, error) {
	body := p.Body().Ops()
	types := map[*ir.Value]ir.Type{}
	root := map[*ir.Value]*ir.Value{} // the value whose buffer v uses
	outside := map[*ir.Value]bool{}   // feeds and parameters (and their views)
	for _, op := range body {
		if len(op.Regions()) > 0 {
			return 0, fmt.Errorf("bench: StaticBound: %q at %s has regions", op.Name(), op.Pos)
		}
		in := make([]ir.Type, op.NumOperands())
		for i, v := range op.Operands() {
			in[i] = types[v]
		}
		var out []ir.Type
		switch op.Name() {
		case "data":
			name, _ := op.Attrs.Str("name")
			shape, ok := feedShapes[name]
			if !ok {
				return 0, fmt.Errorf("bench: StaticBound: no feed %q", name)
			}
			out = []ir.Type{ir.TensorOf(op.Result(0).Type().DType, shape...)}
		case "parameter":
			out = []ir.Type{op.Result(0).Type()}
		case "fetch":
		default:
			spec, ok := ir.LookupSpec(op.Name())
			if !ok {
				return 0, fmt.Errorf("bench: StaticBound: unknown op %q", op.Name())
			}
			var err error
			if out, err = spec.Infer(in, op.Attrs); err != nil {
				return 0, fmt.Errorf("bench: StaticBound: %s %q: %w", op.Pos, op.Name(), err)
			}
		}
		for i, r := range op.Results() {
			if !out[i].IsStatic() {
				return 0, fmt.Errorf("bench: StaticBound: %s %q: result %d is %s", op.Pos, op.Name(), i, out[i])
			}
			types[r] = out[i]
			root[r] = r
			switch {
			case op.Name() == "data" || op.Name() == "parameter":
				outside[r] = true
			case sharesOperand(op, in, out[i]):
				root[r] = root[op.Operand(0)]
			}
		}
	}
	// The last use of each buffer, over all the values that share it.
	last := map[*ir.Value]int{}
	for i, op := range body {
		for _, r := range op.Results() {
			last[root[r]] = max(last[root[r]], i)
		}
		for _, v := range op.Operands() {
			at := i
			if op.Name() == "fetch" {
				at = len(body)
			}
			last[root[v]] = max(last[root[v]], at)
		}
	}
	size := func(v *ir.Value) int64 {
		t := types[v]
		n := int64(t.NumElements() * t.DType.Size())
		return (n + align - 1) / align * align
	}
	live := map[*ir.Value]bool{}
	var cur, peak int64
	for i, op := range body {
		for _, r := range op.Results() {
			b := root[r]
			if outside[b] || live[b] {
				continue
			}
			live[b] = true
			cur += size(b)
		}
		peak = max(peak, cur)
		for b := range live {
			if last[b] == i {
				delete(live, b)
				cur -= size(b)
			}
		}
	}
	return peak, nil
}

// sharesOperand reports whether op's result of type out is operand 0's
// buffer, shared (see StaticBound).
func sharesOperand(op *ir.Op, in []ir.Type, out ir.Type) bool {
	switch op.Name() {
	case "reshape", "flatten", "squeeze", "unsqueeze", "reshape_like", "assign", "stop_gradient":
		return true
	case "cast":
		return in[0].DType == out.DType
	case "reduce_sum_to":
		return slices.Equal(in[0].Dims, out.Dims)
	}
	return false
}
