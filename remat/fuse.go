package remat

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/optimize"
)

// fusePieces fuses the ops that the pieces of the splits over the batch
// run: a convolution with its bias add and ReLU becomes one conv2d_fused,
// a pool whose indices nothing reads max_pool2d_values, and such a pool
// of a fused convolution's result, which nothing else reads, joins it
// (optimize.FuseWhere; the bits are the separate ops'). A piece runs each
// of its ops on a few samples, so each op it saves is a dispatch and a
// pass over the piece's values, on kernels too small to keep two threads
// busy; and in the forward pieces, which keep only the cut, nothing else
// reads the first blocks' convolutions and pools. The ops fused are
// noted as the pieces' ops they replace, and an op that stood for an
// original one hands that over.
func (r *rewriter) fusePieces() error {
	if len(r.out.splitOps) == 0 {
		return nil
	}
	inPiece := func(op *ir.Op) bool {
		_, ok := r.out.splitOps[op]
		return ok
	}
	made := func(n *ir.Op, replaced []*ir.Op) {
		r.out.splitOps[n] = r.out.splitOps[replaced[0]]
		for _, op := range replaced {
			delete(r.out.splitOps, op)
			if o := r.out.origin[op]; o != nil {
				r.out.origin[n] = o
				delete(r.out.origin, op)
			}
		}
	}
	if _, err := optimize.FuseWhere(r.prog, inPiece, made); err != nil {
		return fmt.Errorf("remat: fusing the pieces' ops: %w", err)
	}
	return nil
}
