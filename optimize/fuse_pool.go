package optimize

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// FusePool makes each conv2d_fused whose result only a 2×2 stride-2
// unpadded max_pool2d_values reads (conv, bias, ReLU, max pool: the
// blocks of small CNNs, once FuseEpilogue and DropPoolIndices have run)
// one conv2d_fused with pool:"max2x2", which pools each block of its
// output while it is in cache instead of writing the full-resolution
// result and reading it back; the bits are the two ops'. Convolutions
// with a residual keep the pool apart (the fused op takes no residual
// with a pool). It returns the new program and how many pools it fused.
func FusePool(p *ir.Program) (*ir.Program, int, error) {
	q := clone(p)
	n, err := fusePools(q, everyOp, nil)
	if err != nil {
		return nil, 0, err
	}
	return q, n, nil
}

// fusePools is FusePool on q itself, for the pools that pass only with
// the convolutions they read; made, when not nil, hears of each new op
// and the two it replaces.
func fusePools(q *ir.Program, only func(*ir.Op) bool, made func(*ir.Op, []*ir.Op)) (int, error) {
	var found []*ir.Op
	q.Walk(func(op *ir.Op) bool {
		if ops.PoolsMax2x2(op) && only(op) && poolableConv(op.Operand(0), op.Block()) && only(op.Operand(0).Def()) {
			found = append(found, op)
		}
		return true
	})
	for _, pool := range found {
		conv := pool.Operand(0).Def()
		b := ir.NewBuilder(q)
		b.SetInsertionPoint(conv.Block(), conv.Block().IndexOf(conv)+1)
		b.SetPos(conv.Pos)
		y := b.Op1("conv2d_fused", conv.Attrs.With("pool", ir.Str("max2x2")), conv.Operands()...)
		if err := b.Err(); err != nil {
			return 0, fmt.Errorf("optimize: fusing max_pool2d_values at %s into conv2d_fused at %s: %w", pool.Pos, conv.Pos, err)
		}
		if want := pool.Result(0).Type(); !y.Type().Equal(want) {
			return 0, fmt.Errorf("optimize: fusing max_pool2d_values at %s: the fused op has type %s, not %s", pool.Pos, y.Type(), want)
		}
		pool.Result(0).ReplaceAllUsesWith(y)
		if err := erase(pool, conv); err != nil {
			return 0, err
		}
		if made != nil {
			made(y.Def(), []*ir.Op{conv, pool})
		}
	}
	return len(found), nil
}

// poolableConv reports whether v is the result of a conv2d_fused in block
// that the pool reading it may join: nothing else reads v, and the op has
// no residual and no pool yet.
func poolableConv(v *ir.Value, block *ir.Block) bool {
	conv := v.Def()
	if conv == nil || conv.Name() != "conv2d_fused" || conv.Block() != block || conv.NumResults() != 1 {
		return false
	}
	if _, _, ok := soleUser(v); !ok {
		return false
	}
	if conv.Attrs.Has("residual") {
		if res, err := conv.Attrs.Bool("residual"); err != nil || res {
			return false
		}
	}
	if conv.Attrs.Has("pool") {
		if pool, err := conv.Attrs.Str("pool"); err != nil || pool != "none" {
			return false
		}
	}
	return true
}
