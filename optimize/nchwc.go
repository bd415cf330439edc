package optimize

import (
	"fmt"
	"slices"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// NCHWc puts the convolutions of p, and the values between them, in the
// blocked channel layout (ops.NCHWcForm) with the channel block of this
// machine's vector kernels (ops.NCHWcBlock): each op of the top-level block
// that has a blocked form (ops.Def.NCHWc) is replaced by that form when
// it is a convolution the blocked kernel accepts (kernels.ConvNCHWcCheck) (an anchor) or when
// it reads a value the pass has made blocked; a blocked form whose
// operand is still NCHW reads it through a reorder_nchwc (a convolution
// whose input channels are not whole blocks reads it as it is), and every
// other reader of a blocked value (an op without a blocked form, a fetch,
// an op with regions) reads it through a reorder_nchw, one per value,
// placed before its first such reader. A connected part of the program
// that would be blocked around fewer than nchwcMinAnchors convolutions
// stays NCHW: one convolution alone pays two reorders for one faster
// kernel. Region bodies are left alone.
//
// The reorders move elements; the blocked ops compute what the NCHW ops
// do (conv2d_nchwc within float32 rounding: it sums in another order).
// The pass does nothing where the blocked convolution has no vector
// kernels (ops.NCHWcBlock is 0): there the layout only costs. It returns
// the new program and how many ops it replaced.
func NCHWc(p *ir.Program) (*ir.Program, int, error) {
	q := clone(p)
	b := nchwcBlock()
	if b == 0 {
		return q, 0, nil
	}
	forms := planNCHWc(q.Body(), b)
	if err := rewriteNCHWc(q, forms, b); err != nil {
		return nil, 0, err
	}
	return q, len(forms), nil
}

// nchwcBlock is the channel block NCHWc uses (0: it does nothing); tests
// force it.
var nchwcBlock = ops.NCHWcBlock

// nchwcMinAnchors is the fewest convolutions a blocked part of a program
// must hold (see NCHWc).
const nchwcMinAnchors = 2

// nchwcForm is op's form blocked by b, if it has one the pass may use.
func nchwcForm(op *ir.Op, b int) (ops.NCHWcForm, bool) {
	d, ok := ops.Lookup(op.Name())
	if !ok || d.NCHWc == nil || len(op.Regions()) > 0 || op.NumResults() != 1 {
		return ops.NCHWcForm{}, false
	}
	return d.NCHWc(op, b)
}

// planNCHWc chooses the ops of body that go blocked, with their forms:
// the anchors and the ops that read what an op already chosen makes,
// then, of the connected parts they form, those with enough anchors.
func planNCHWc(body *ir.Block, b int) map[*ir.Op]ops.NCHWcForm {
	forms := map[*ir.Op]ops.NCHWcForm{}
	parent := map[*ir.Op]*ir.Op{}
	var root func(*ir.Op) *ir.Op
	root = func(op *ir.Op) *ir.Op {
		if parent[op] == op {
			return op
		}
		r := root(parent[op])
		parent[op] = r
		return r
	}
	for _, op := range body.Ops() {
		f, ok := nchwcForm(op, b)
		if !ok {
			continue
		}
		var feeders []*ir.Op
		for _, i := range f.Blocked {
			if d := op.Operand(i).Def(); d != nil {
				if _, chosen := forms[d]; chosen {
					feeders = append(feeders, d)
				}
			}
		}
		if !f.Anchor && len(feeders) == 0 {
			continue
		}
		forms[op], parent[op] = f, op
		for _, d := range feeders {
			parent[root(d)] = root(op)
		}
	}
	anchors := map[*ir.Op]int{}
	for op, f := range forms {
		if f.Anchor {
			anchors[root(op)]++
		}
	}
	for op := range forms {
		if anchors[root(op)] < nchwcMinAnchors {
			delete(forms, op)
		}
	}
	return forms
}

// rewriteNCHWc replaces the ops of forms, in q's top-level block, by
// their forms blocked by blk, with the reorders at the edges.
func rewriteNCHWc(q *ir.Program, forms map[*ir.Op]ops.NCHWcForm, blk int) error {
	body := q.Body()
	var order []*ir.Op
	for _, op := range body.Ops() {
		if _, ok := forms[op]; ok {
			order = append(order, op)
		}
	}
	blocked := map[*ir.Value]*ir.Value{} // an NCHW value's blocked twin
	for _, op := range order {
		f := forms[op]
		b := builderBefore(q, op)
		in := append([]*ir.Value(nil), op.Operands()...)
		for _, i := range f.Blocked {
			bv, ok := blocked[in[i]]
			if !ok {
				bv = b.Op1("reorder_nchwc", ir.A("block", blk), in[i])
				blocked[in[i]] = bv
			}
			in[i] = bv
		}
		y := b.Op1(f.Op, f.Attrs, in...)
		if err := b.Err(); err != nil {
			return fmt.Errorf("optimize: %s at %s as %s: %w", op.Name(), op.Pos, f.Op, err)
		}
		if want := nchwcBlocked(op.Result(0).Type(), blk); !y.Type().Equal(want) {
			return fmt.Errorf("optimize: %s at %s as %s has type %s, not %s", op.Name(), op.Pos, f.Op, y.Type(), want)
		}
		blocked[op.Result(0)] = y
	}
	for _, op := range order {
		r := op.Result(0)
		if first := firstPlainReader(body, r, forms); first != nil {
			b := builderBefore(q, first)
			back := b.Op1("reorder_nchw", nil, blocked[r])
			if err := b.Err(); err != nil {
				return fmt.Errorf("optimize: reordering %s at %s back to NCHW: %w", op.Name(), op.Pos, err)
			}
			r.ReplaceAllUsesWith(back)
		}
	}
	slices.Reverse(order) // each op's readers go first
	return erase(order...)
}

// firstPlainReader is the first op of body that reads v, or holds a
// reader of v in its regions, other than the ops the pass replaces; nil
// when there is none.
func firstPlainReader(body *ir.Block, v *ir.Value, forms map[*ir.Op]ops.NCHWcForm) *ir.Op {
	var first *ir.Op
	at := -1
	for _, u := range v.Uses() {
		if _, replaced := forms[u.Op]; replaced {
			continue
		}
		top := u.Op
		for top.Block() != body {
			top = top.ParentOp()
		}
		if i := body.IndexOf(top); first == nil || i < at {
			first, at = top, i
		}
	}
	return first
}

// nchwcBlocked is the type of t, an f32 NCHW type whose channels are
// whole blocks of b, blocked by b.
func nchwcBlocked(t ir.Type, b int) ir.Type {
	return ir.TensorOf(t.DType, t.Dims[0], t.Dims[1]/b, t.Dims[2], t.Dims[3], b)
}
