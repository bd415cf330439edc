package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Padding with the amounts (and the constant) read at run time; pad
// (pad.go) takes them as attributes.
//
//	pad_dyn      {mode?, axes?} (x, pads[, value]) -> y
//	pad_dyn_grad {mode?, axes?} (dy, pads)         -> dx
//
// pads is a 1-D i32 or i64 operand of 2·k amounts, the befores then the
// afters, for the k axes listed by the axes attribute (distinct, negative
// ones counting from the end) or, without it, for every axis (k = rank).
// value, constant mode only, holds one element of x's dtype (default 0).
// The result is pad's with the amounts of the other axes 0: negative
// amounts crop, mode is "constant", "reflect" or "edge". It has x's rank
// and dtype; its dims along the padded axes are dynamic.
//
// Gradients (f32, f64): constant mode crops dy back (pad_dyn of dy by the
// negated amounts, zeros where x was cropped), and value gets the sum of
// dy over the positions it filled; the other modes add up the copies with
// pad_dyn_grad (pad_grad's sum for run-time amounts; dx of dy's dims less
// the amounts), whose own gradient is pad_dyn. pads gets none.

func init() {
	register(&Def{Name: "pad_dyn", Infer: padDynInfer, Bind: padDynBind, Grad: padDynGrad})
	register(&Def{Name: "pad_dyn_grad", Infer: padDynInferGrad, Bind: padDynBindGrad, Grad: padDynGradGrad})
}

// padDyn is the decoded attributes of pad_dyn and pad_dyn_grad.
type padDyn struct {
	mode kernels.PadMode
	axes []int // nil: every axis
}

func padDynDecode(attrs ir.Attrs, rank int) (d padDyn, err error) {
	if d.mode, err = padMode(attrs); err != nil {
		return d, err
	}
	if attrs.Has("axes") {
		if d.axes, err = attrs.Ints("axes"); err != nil {
			return d, err
		}
		// shpAxes returns a non-nil list: empty axes pad no axis.
		if d.axes, err = shpAxes("axes", d.axes, rank); err != nil {
			return d, err
		}
	}
	return d, nil
}

// padded lists the axes pads names.
func (d padDyn) padded(rank int) []int {
	if d.axes != nil {
		return d.axes
	}
	axes := make([]int, rank)
	for i := range axes {
		axes[i] = i
	}
	return axes
}

// checkPads checks the type of the pads operand.
func (d padDyn) checkPads(t ir.Type, rank int) error {
	if !t.DType.IsInt() || t.Rank() != 1 {
		return fmt.Errorf("pads %s must be a 1-D i32 or i64 tensor", t)
	}
	if k := len(d.padded(rank)); t.Dims[0] != ir.Dynamic && t.Dims[0] != 2*k {
		return fmt.Errorf("pads %s must have 2·%d entries, two per padded axis", t, k)
	}
	return nil
}

// dims is the result dims for x's: dynamic along the padded axes.
func (d padDyn) dims(x []int) []int {
	out := append([]int(nil), x...)
	for _, a := range d.padded(len(x)) {
		out[a] = ir.Dynamic
	}
	return out
}

// spec reads pads for an operand of the given rank: pad's amounts.
func (d padDyn) spec(pads *tensor.Tensor, rank int) (padSpec, error) {
	axes := d.padded(rank)
	ps := dynInts(pads)
	if len(ps) != 2*len(axes) {
		return padSpec{}, fmt.Errorf("pads %v must have 2·%d entries, two per padded axis", ps, len(axes))
	}
	s := padSpec{pads: make([]int, 2*rank), mode: d.mode}
	for i, a := range axes {
		b, e := ps[i], ps[len(axes)+i]
		if b < -(1<<40) || b > 1<<40 || e < -(1<<40) || e > 1<<40 {
			return s, fmt.Errorf("pads %v: an amount is too large", ps)
		}
		s.pads[a], s.pads[rank+a] = b, e
	}
	return s, nil
}

func padDynInfer(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if len(in) != 2 && len(in) != 3 {
		return nil, fmt.Errorf("takes x, pads and an optional value, got %d operands", len(in))
	}
	x := in[0]
	if x.IsStack() {
		return nil, fmt.Errorf("operand %s is not a tensor", x)
	}
	d, err := padDynDecode(attrs, x.Rank())
	if err != nil {
		return nil, err
	}
	if err := d.checkPads(in[1], x.Rank()); err != nil {
		return nil, err
	}
	if len(in) == 3 {
		v := in[2]
		if d.mode != kernels.PadConstant {
			return nil, fmt.Errorf("value applies to mode constant, not %s", padModeName(d.mode))
		}
		if v.IsStack() || v.DType != x.DType || v.IsStatic() && v.NumElements() != 1 {
			return nil, fmt.Errorf("value %s must hold one element of x's dtype %s", v, x.DType)
		}
	}
	return []ir.Type{ir.TensorOf(x.DType, d.dims(x.Dims)...)}, nil
}

// padDynValue reads the one element of v.
func padDynValue(v *tensor.Tensor) (fillValue, error) {
	if v.Len() != 1 {
		return fillValue{}, fmt.Errorf("value %s must hold one element", v.Type())
	}
	switch v.DType() {
	case tensor.I32:
		return fillValue{f: float64(v.I32()[0]), i: int64(v.I32()[0])}, nil
	case tensor.I64:
		return fillValue{f: float64(v.I64()[0]), i: v.I64()[0]}, nil
	case tensor.Bool:
		if v.Bool()[0] {
			return fillValue{f: 1, i: 1}, nil
		}
		return fillValue{}, nil
	}
	return fillValue{f: v.Float64At(0)}, nil
}

func padDynBind(op *ir.Op) (Kernel, error) {
	d, err := padDynDecode(op.Attrs, op.Operand(0).Type().Rank())
	if err != nil {
		return nil, err
	}
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		s, err := d.spec(in[1], x.Rank())
		if err != nil {
			return nil, fmt.Errorf("x %s: %w", x.Type(), err)
		}
		var v fillValue
		if len(in) == 3 {
			if v, err = padDynValue(in[2]); err != nil {
				return nil, err
			}
		}
		return s.run(c, x, v)
	}, nil
}

// PadDyn appends a padding of x by the amounts pads holds at run time
// (befores then afters, for axes, or every axis when axes is nil), in
// mode "constant" (with value, nil for 0), "reflect" or "edge".
func PadDyn(b *ir.Builder, x, pads, value *ir.Value, axes []int, mode string) *ir.Value {
	var attrs ir.Attrs
	if mode != "constant" {
		attrs = ir.A("mode", mode)
	}
	if axes != nil {
		attrs = attrs.With("axes", nnIntList(axes))
	}
	operands := []*ir.Value{x, pads}
	if value != nil {
		operands = append(operands, value)
	}
	return b.Op1("pad_dyn", attrs, operands...)
}

// padDynGrad: constant mode crops dy back and sums the rest for value;
// the other modes use pad_dyn_grad.
func padDynGrad(g *GradContext) ([]*ir.Value, error) {
	dx := make([]*ir.Value, g.Op.NumOperands())
	if !g.Need(0) && !g.Need(2) {
		return dx, nil
	}
	d, err := padDynDecode(g.Op.Attrs, g.Op.Operand(0).Type().Rank())
	if err != nil {
		return nil, err
	}
	dy, pads := g.DY[0], g.X(1)
	if d.mode != kernels.PadConstant {
		dx[0] = g.B.Op1("pad_dyn_grad", g.Op.Attrs, dy, pads)
		return dx, nil
	}
	crop := g.B.Op1("pad_dyn", g.Op.Attrs, dy, Neg(g.B, pads))
	if g.Need(0) {
		dx[0] = crop
	}
	if g.Need(2) {
		rest := Subtract(g.B, ReduceSum(g.B, dy, nil, false), ReduceSum(g.B, crop, nil, false))
		dx[2] = ReshapeLike(g.B, rest, g.X(2))
	}
	return dx, nil
}

func padDynInferGrad(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 2); err != nil {
		return nil, err
	}
	dy := in[0]
	if err := nnWantFloat("dy", dy); err != nil {
		return nil, err
	}
	d, err := padDynDecode(attrs, dy.Rank())
	if err != nil {
		return nil, err
	}
	if err := d.checkPads(in[1], dy.Rank()); err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(dy.DType, d.dims(dy.Dims)...)}, nil
}

func padDynBindGrad(op *ir.Op) (Kernel, error) {
	d, err := padDynDecode(op.Attrs, op.Operand(0).Type().Rank())
	if err != nil {
		return nil, err
	}
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		dy := in[0]
		s, err := d.spec(in[1], dy.Rank())
		if err != nil {
			return nil, fmt.Errorf("dy %s: %w", dy.Type(), err)
		}
		return s.runGrad(c, dy)
	}, nil
}

// padDynGradGrad: pad_dyn_grad is the adjoint of pad_dyn, so its
// gradient is pad_dyn.
func padDynGradGrad(g *GradContext) ([]*ir.Value, error) {
	dx := make([]*ir.Value, 2)
	if g.Need(0) {
		dx[0] = g.B.Op1("pad_dyn", g.Op.Attrs, g.DY[0], g.X(1))
	}
	return dx, nil
}
