package dist

import (
	"fmt"
	"sort"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// OverlapUpdates reorders the ops that follow the first all_reduce_wait at
// the top level of a data-parallel training program (the waits that
// ReduceGradients appended, and the optimizer's updates after them) so
// that each op runs after only the waits it needs: the updates of the
// parameters whose bucket was summed first run while the later buckets
// are still in flight, and a rank that finished its backward pass first
// spends the time it waits for the others on work instead of in the wait.
// The ops keep their relative order otherwise; the waits keep theirs,
// which is the order their sums were started in.
//
// An op depends on the ops before it that define a value it uses
// (directly or in its regions), that update in place a value it reads or
// writes, and that read a value it updates in place (ir.OpSpec.Writes).
// Its level is the number of the last wait it depends on, directly or
// through other ops (0 for none); the ops are then ordered by level,
// stably, which keeps every dependency. The result computes the same
// values with the same kernels, bit for bit: only the order of
// independent ops changes. Every rank reorders the same program the same
// way, so the collectives still meet in the same order.
//
// Programs with a random op after the first wait are left as they are: a
// random op draws from a stream keyed by its position in the program.
func OverlapUpdates(top *ir.Block) error {
	all := top.Ops()
	first := -1
	var waits []*ir.Op
	for i, op := range all {
		if op.Name() == "all_reduce_wait" {
			if first < 0 {
				first = i
			}
			waits = append(waits, op)
		}
	}
	if first < 0 {
		return nil
	}
	// Sums started first are expected to finish first.
	startAt := func(w *ir.Op) int { return top.IndexOf(w.Operand(0).Def()) }
	sort.SliceStable(waits, func(a, b int) bool { return startAt(waits[a]) < startAt(waits[b]) })
	level := make(map[*ir.Op]int, len(all)-first)
	for i, w := range waits {
		level[w] = i + 1
	}
	tail := all[first:]
	if t := top.Terminator(); t != nil {
		tail = all[first : len(all)-1]
	}
	wrote := map[*ir.Value]int{}   // the highest level of an op that updated the value in place
	touched := map[*ir.Value]int{} // the highest level of an op that read or updated it
	for _, op := range tail {
		reads, writes, random := effects(op)
		if random {
			return nil
		}
		lvl := level[op]
		for v := range reads {
			if d := v.Def(); d != nil && d.Block() == top {
				lvl = max(lvl, level[d])
			}
			lvl = max(lvl, wrote[v])
		}
		for v := range writes {
			lvl = max(lvl, touched[v])
		}
		level[op] = lvl
		for v := range reads {
			touched[v] = max(touched[v], lvl)
		}
		for v := range writes {
			touched[v] = max(touched[v], lvl)
			wrote[v] = max(wrote[v], lvl)
		}
	}
	order := append([]*ir.Op(nil), tail...)
	sort.SliceStable(order, func(a, b int) bool { return level[order[a]] < level[order[b]] })
	full := append(append([]*ir.Op(nil), all[:first]...), order...)
	full = append(full, all[first+len(tail):]...)
	if err := top.Reorder(full); err != nil {
		return fmt.Errorf("dist: %w", err)
	}
	return nil
}

// effects lists the values op and the ops nested in it read and update in
// place, and whether one of them draws random numbers.
func effects(op *ir.Op) (reads, writes map[*ir.Value]bool, random bool) {
	reads, writes = map[*ir.Value]bool{}, map[*ir.Value]bool{}
	visit := func(o *ir.Op) bool {
		for _, v := range o.Operands() {
			reads[v] = true
		}
		if d, ok := ops.Lookup(o.Name()); ok {
			for _, i := range d.Writes {
				if i < o.NumOperands() {
					writes[o.Operand(i)] = true
				}
			}
			random = random || d.Pin != nil
		}
		return true
	}
	visit(op)
	for _, r := range op.Regions() {
		ir.WalkBlock(r.Block(), visit)
	}
	return reads, writes, random
}
