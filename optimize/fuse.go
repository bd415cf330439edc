package optimize

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// FuseEpilogue replaces each conv2d or matmul (operands of rank >= 2)
// whose result goes only through, in this order, an add of a per-channel
// bias ([C], [C,1,1], [1,C,1,1] for a convolution; [N] or [1,N] for a
// product), an add of a residual of the result's shape (proven equal at
// run time: sameShape), and one activation (relu, sigmoid, silu, clip, or
// multiply(y, sigmoid(y)): swish), each optional, by one conv2d_fused or
// matmul_fused. The fused kernels compute exactly what the ops did, so
// the results are bit for bit the same. The fused op goes where all its
// operands are ready, which is no later than the last op it replaces.
// It returns the new program and how many ops it made.
func FuseEpilogue(p *ir.Program) (*ir.Program, int, error) {
	q := clone(p)
	n, err := fuseEpilogues(q, everyOp, nil)
	if err != nil {
		return nil, 0, err
	}
	return q, n, nil
}

// fuseEpilogues is FuseEpilogue on q itself, for the products whose ops
// (the product and every op of its epilogue) all pass only; made, when
// not nil, hears of each fused op and the ops it replaces.
func fuseEpilogues(q *ir.Program, only func(*ir.Op) bool, made func(*ir.Op, []*ir.Op)) (int, error) {
	var prods []*ir.Op
	q.Walk(func(op *ir.Op) bool {
		if fusible(op) && only(op) {
			prods = append(prods, op)
		}
		return true
	})
	n := 0
	for _, op := range prods {
		e, chain, end := epilogueOf(op)
		if len(chain) == 0 || !all(chain, only) {
			continue
		}
		y, err := fuse(q, op, e, chain, end)
		if err != nil {
			return 0, err
		}
		if made != nil {
			made(y, append([]*ir.Op{op}, chain...))
		}
		n++
	}
	return n, nil
}

// everyOp is the filter that takes every op.
func everyOp(*ir.Op) bool { return true }

func all(list []*ir.Op, only func(*ir.Op) bool) bool {
	for _, op := range list {
		if !only(op) {
			return false
		}
	}
	return true
}

// fusible reports whether op is a conv2d or matmul a fused op can stand
// for.
func fusible(op *ir.Op) bool {
	if op.NumResults() != 1 || op.NumOperands() != 2 || !isFloat(op.Result(0).Type()) {
		return false
	}
	switch op.Name() {
	case "conv2d":
		return op.Result(0).Type().Rank() == 4
	case "matmul":
		return op.Operand(0).Type().Rank() >= 2 && op.Operand(1).Type().Rank() >= 2
	}
	return false
}

// epilogueOf follows op's result through the ops FuseEpilogue fuses and
// returns the epilogue, the ops it replaces in order, and the value that
// the fused op stands for.
func epilogueOf(op *ir.Op) (ops.Epilogue, []*ir.Op, *ir.Value) {
	var e ops.Epilogue
	var chain []*ir.Op
	out := op.Result(0).Type()
	axis := 1
	if op.Name() == "matmul" {
		axis = out.Rank() - 1
	}
	v := op.Result(0)
	next := func() (*ir.Op, int, bool) {
		u, at, ok := soleUser(v)
		if !ok || u.Block() != op.Block() || u.NumResults() != 1 || !u.Result(0).Type().Equal(out) {
			return nil, 0, false
		}
		return u, at, true
	}
	if u, at, ok := next(); ok && u.Name() == "add" && channelShaped(other(u, at).Type(), out, axis) {
		e.Bias, chain, v = other(u, at), append(chain, u), u.Result(0)
	}
	if u, at, ok := next(); ok && u.Name() == "add" && other(u, at) != v && sameShape(v, other(u, at)) {
		e.Residual, chain, v = other(u, at), append(chain, u), u.Result(0)
	}
	if u, _, ok := next(); ok {
		switch u.Name() {
		case "relu", "sigmoid", "silu":
			e.Activation, chain, v = u.Name(), append(chain, u), u.Result(0)
		case "clip":
			lo, err1 := u.Attrs.Float("min")
			hi, err2 := u.Attrs.Float("max")
			if err1 == nil && err2 == nil {
				e.Activation, e.Min, e.Max, chain, v = "clip", lo, hi, append(chain, u), u.Result(0)
			}
		}
		return e, chain, v
	}
	if s, mul, ok := swish(v, op.Block()); ok {
		e.Activation, chain, v = "swish", append(chain, s, mul), mul.Result(0)
	}
	return e, chain, v
}

// swish matches y·sigmoid(y) on v: v used only by a sigmoid and by a
// multiply of v with that sigmoid's result, which nothing else uses.
func swish(v *ir.Value, block *ir.Block) (s, mul *ir.Op, ok bool) {
	uses := v.Uses()
	if len(uses) != 2 {
		return nil, nil, false
	}
	for _, u := range uses {
		if u.Op.Name() == "sigmoid" {
			s = u.Op
		}
	}
	if s == nil || s.Block() != block {
		return nil, nil, false
	}
	m, _, one := soleUser(s.Result(0))
	if !one || m.Name() != "multiply" || m.Block() != block || !m.Result(0).Type().Equal(v.Type()) {
		return nil, nil, false
	}
	a, b := m.Operand(0), m.Operand(1)
	if !(a == v && b == s.Result(0) || a == s.Result(0) && b == v) {
		return nil, nil, false
	}
	return s, m, true
}

// fuse puts the fused op for op and its epilogue e where its operands are
// all ready, makes it stand for end, erases op and chain, and returns the
// fused op.
func fuse(q *ir.Program, op *ir.Op, e ops.Epilogue, chain []*ir.Op, end *ir.Value) (*ir.Op, error) {
	block := op.Block()
	at := block.IndexOf(op)
	for _, v := range []*ir.Value{e.Bias, e.Residual} {
		if v != nil && v.Def() != nil && v.Def().Block() == block {
			at = max(at, block.IndexOf(v.Def()))
		}
	}
	b := ir.NewBuilder(q)
	b.SetInsertionPoint(block, at+1)
	b.SetPos(op.Pos)
	out := op.Result(0).Type()
	if e.Bias != nil {
		e.Bias = vectorOf(b, e.Bias)
	}
	var y *ir.Value
	if op.Name() == "conv2d" {
		y = ops.Conv2DFused(b, op.Operand(0), op.Operand(1), op.Attrs, e)
	} else {
		y = ops.MatmulFused(b, op.Operand(0), op.Operand(1), op.Attrs, e)
	}
	if err := b.Err(); err != nil {
		return nil, fmt.Errorf("optimize: fusing %q at %s: %w", op.Name(), op.Pos, err)
	}
	if !y.Type().Equal(out) {
		return nil, fmt.Errorf("optimize: fusing %q at %s: the fused op has type %s, not %s", op.Name(), op.Pos, y.Type(), out)
	}
	end.ReplaceAllUsesWith(y)
	gone := []*ir.Op{}
	for i := len(chain) - 1; i >= 0; i-- {
		gone = append(gone, chain[i])
	}
	return y.Def(), erase(append(gone, op)...)
}

// vectorOf returns bias as the 1-D vector the fused ops take: the vector
// it views, when it is a reshape (or kin) of one, else a reshape of it.
func vectorOf(b *ir.Builder, bias *ir.Value) *ir.Value {
	n := bias.Type().NumElements()
	for v := bias; ; {
		if v.Type().Rank() == 1 {
			return v
		}
		d := v.Def()
		if d == nil || !isView(d) {
			break
		}
		v = d.Operand(0)
	}
	return ops.Reshape(b, bias, n)
}
