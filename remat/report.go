package remat

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gopir/gopir/ir"
)

// report lists what st recomputes, in the order of the new program.
func (f *fitter) report(st *state) ([]Recomputation, []Checkpoint) {
	var recs []Recomputation
	ops := st.rw.prog.Body().Ops()
	for i, op := range ops {
		if orig := st.rw.source[op]; orig != nil {
			var before *ir.Op
			for _, next := range ops[i+1:] {
				if o := st.rw.origin[next]; o != nil && !st.rw.hoisted[next] {
					before = o
					break
				}
			}
			recs = append(recs, f.recomputation(st, orig, before, false))
			continue
		}
		if orig := st.rw.origin[op]; orig != nil && orig.Name() == "if" && len(f.a.ifOf[orig]) > 0 {
			walkOp(op, func(o *ir.Op) {
				if src := st.rw.source[o]; src != nil {
					recs = append(recs, f.recomputation(st, src, orig, true))
				}
			})
		}
	}
	var cps []Checkpoint
	for loop, k := range st.s.Every {
		lp := f.a.loops[loop]
		var carried []string
		for _, a := range loop.Region(0).Block().Args()[:lp.counter] {
			carried = append(carried, fmt.Sprintf("%s: %s", f.names[a], a.Type()))
		}
		cps = append(cps, Checkpoint{Pos: loop.Pos, Every: k, Carried: carried, Flops: f.costs.of[loop]})
	}
	sort.Slice(cps, func(i, j int) bool { return cps[i].Pos.String() < cps[j].Pos.String() })
	return recs, cps
}

func (f *fitter) recomputation(st *state, orig, before *ir.Op, inIf bool) Recomputation {
	var vals []string
	for _, r := range orig.Results() {
		if st.s.Drop[r] || inIf || f.readsBack(st, r) {
			vals = append(vals, f.names[r])
		}
	}
	rec := Recomputation{Op: orig.Name(), Values: strings.Join(vals, ", "), Pos: orig.Pos, Flops: f.costs.of[orig], Before: "the end", InIf: inIf}
	if before != nil {
		rec.Before, rec.BeforePos = f.describeOp(before), before.Pos
	}
	return rec
}

// readsBack reports whether value r of a branch is the inner value of a
// dropped residual.
func (f *fitter) readsBack(st *state, r *ir.Value) bool {
	for v, x := range f.a.residuals {
		if x.inner == r && st.s.Drop[v] {
			return true
		}
	}
	return false
}

// describeOp names a top-level op of the original program: its first
// result and name.
func (f *fitter) describeOp(op *ir.Op) string {
	if op.NumResults() > 0 {
		return fmt.Sprintf("%s %s", f.names[op.Result(0)], op.Name())
	}
	return op.Name()
}
