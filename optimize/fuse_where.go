package optimize

import "github.com/gopir/gopir/ir"

// FuseWhere runs FuseEpilogue, DropPoolIndices and FusePool, in that
// order, on p itself rather than on a copy, and only where every op a
// rewrite replaces passes only: for a pass that keeps maps of p's ops
// and fuses some of them (package remat fuses the ops its pieces of a
// split over the batch run). made, when not nil, hears of each op a
// rewrite adds with the ops it replaces, which are gone from p by then.
// The rewrites give the same bits as the ops they replace. It returns
// how many rewrites it made.
func FuseWhere(p *ir.Program, only func(*ir.Op) bool, made func(n *ir.Op, replaced []*ir.Op)) (int, error) {
	total := 0
	for _, pass := range []func(*ir.Program, func(*ir.Op) bool, func(*ir.Op, []*ir.Op)) (int, error){fuseEpilogues, dropPoolIndices, fusePools} {
		n, err := pass(p, only, made)
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}
