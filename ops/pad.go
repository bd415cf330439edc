package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Padding.
//
//	pad      {pads, mode?, value?} (x) -> y
//	pad_grad {pads, mode} (dy) -> dx
//
// pads lists 2·rank ints, ONNX's order: the amounts added before axes 0,
// 1, …, then the amounts added after them. A negative amount crops: dim i
// of y is x's dim i + pads[i] + pads[rank+i], and the crops of an axis must
// fit in it. Cropping comes first, then padding from what is left, by mode:
// "constant" (the default) fills with value (default 0, a number x's dtype
// holds), "reflect" mirrors the axis about its first and last elements
// without repeating them, periodically when the padding is wider than the
// axis (numpy's "reflect"; a one-element axis repeats), and "edge" repeats
// the first and last elements. Reflect and edge need a non-empty axis
// wherever they pad. pad takes every dtype.
//
// pad's gradient is constant-mode pad of dy with the amounts negated
// (crops become zero padding and padding is cropped) in constant mode, and
// pad_grad otherwise: dx (float) is the sum of dy over the positions that
// read each element of x; pads and mode are pad's, for the shape of pad's
// operand. pad_grad's own gradient is pad.
//
// Both write their result directly and take no workspace; each kernel
// keeps the source index tables (kernels.PadSource, one number per output
// position along each axis) of the last shape it ran on.

func init() {
	register(&Def{Name: "pad", Infer: padInfer, Compute: padBind, Grad: padGrad})
	register(&Def{Name: "pad_grad", Infer: padInferGrad, Compute: padBindGrad, Grad: padGradGrad})
}

// padSpec is the decoded attributes of pad and pad_grad.
type padSpec struct {
	pads []int
	mode kernels.PadMode
}

func padDecode(attrs ir.Attrs, rank int) (padSpec, error) {
	var s padSpec
	var err error
	if s.pads, err = attrs.Ints("pads"); err != nil {
		return s, err
	}
	if len(s.pads) != 2*rank {
		return s, fmt.Errorf("pads %v must have 2·rank = %d entries", s.pads, 2*rank)
	}
	s.mode, err = padMode(attrs)
	return s, err
}

// padMode decodes the mode attribute of the pad ops.
func padMode(attrs ir.Attrs) (kernels.PadMode, error) {
	mode := "constant"
	if attrs.Has("mode") {
		var err error
		if mode, err = attrs.Str("mode"); err != nil {
			return 0, err
		}
	}
	switch mode {
	case "constant":
		return kernels.PadConstant, nil
	case "reflect":
		return kernels.PadReflect, nil
	case "edge":
		return kernels.PadEdge, nil
	}
	return 0, fmt.Errorf("mode %q is not constant, reflect or edge", mode)
}

// outDims returns the padded dims of in (dynamic dims stay dynamic), or
// an error when a crop does not fit or reflect or edge would pad an empty
// range.
func (s padSpec) outDims(in []int) ([]int, error) {
	r := len(in)
	out := make([]int, r)
	for i, d := range in {
		b, e := s.pads[i], s.pads[r+i]
		if d == ir.Dynamic {
			out[i] = ir.Dynamic
			continue
		}
		left := d - max(0, -b) - max(0, -e)
		if left < 0 {
			return nil, fmt.Errorf("pads %v crop %d elements from axis %d of size %d", s.pads, max(0, -b)+max(0, -e), i, d)
		}
		if left == 0 && s.mode != kernels.PadConstant && (b > 0 || e > 0) {
			return nil, fmt.Errorf("pads %v: axis %d is empty after cropping and has nothing to pad from in mode %s", s.pads, i, padModeName(s.mode))
		}
		out[i] = d + b + e
	}
	return out, nil
}

func padModeName(m kernels.PadMode) string {
	return [...]string{"constant", "reflect", "edge"}[m]
}

// sources returns the PadSource table of every axis of static dims in.
func (s padSpec) sources(in []int) [][]int {
	r := len(in)
	srcs := make([][]int, r)
	for i, d := range in {
		srcs[i] = kernels.PadSource(d, s.pads[i], s.pads[r+i], s.mode)
	}
	return srcs
}

func padInfer(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	x := in[0]
	if x.IsStack() {
		return nil, fmt.Errorf("operand %s is not a tensor", x)
	}
	s, err := padDecode(attrs, x.Rank())
	if err != nil {
		return nil, err
	}
	if _, err := fillValueAttr(padValueAttrs(attrs), x.DType); err != nil {
		return nil, err
	}
	out, err := s.outDims(x.Dims)
	if err != nil {
		return nil, fmt.Errorf("x %s: %w", x, err)
	}
	return []ir.Type{ir.TensorOf(x.DType, out...)}, nil
}

// padValueAttrs is attrs with value defaulting to 0.
func padValueAttrs(attrs ir.Attrs) ir.Attrs {
	if attrs.Has("value") {
		return attrs
	}
	return attrs.With("value", ir.Int(0))
}

func padBind(op *ir.Op) (Compute, error) {
	x := op.Operand(0).Type()
	s, err := padDecode(op.Attrs, x.Rank())
	if err != nil {
		return Compute{}, err
	}
	v, err := fillValueAttr(padValueAttrs(op.Attrs), x.DType)
	if err != nil {
		return Compute{}, err
	}
	var memo shapeMemo[[][]int]
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		x := in[0]
		srcs, ok := memo.lookup(x.Shape())
		if !ok {
			srcs = s.sources(x.Shape())
			memo.store(srcs, x.Shape())
		}
		s.into(c, srcs, x, out[0], v)
		return nil
	}}, nil
}

// run pads x, filling with v in constant mode, for pad_dyn, whose pads
// are read at run time.
func (s padSpec) run(c *Ctx, x *tensor.Tensor, v fillValue) ([]*tensor.Tensor, error) {
	dims, err := s.outDims(x.Shape())
	if err != nil {
		return nil, fmt.Errorf("x %s: %w", x.Type(), err)
	}
	out, err := c.New(ir.DType(x.DType()), dims)
	if err != nil {
		return nil, err
	}
	s.into(c, s.sources(x.Shape()), x, out, v)
	return c.Result(out), nil
}

// into pads x into out; srcs is s.sources of x's shape.
func (s padSpec) into(c *Ctx, srcs [][]int, x, out *tensor.Tensor, v fillValue) {
	th := nnThreads(c)
	switch x.DType() {
	case tensor.F32:
		kernels.Pad(x.Shape(), srcs, x.F32(), out.F32(), float32(v.f), th)
	case tensor.F64:
		kernels.Pad(x.Shape(), srcs, x.F64(), out.F64(), v.f, th)
	case tensor.I32:
		kernels.Pad(x.Shape(), srcs, x.I32(), out.I32(), int32(v.i), th)
	case tensor.I64:
		kernels.Pad(x.Shape(), srcs, x.I64(), out.I64(), v.i, th)
	case tensor.Bool:
		kernels.Pad(x.Shape(), srcs, x.Bool(), out.Bool(), v.i != 0, th)
	}
}

// Pad appends a padding of x by pads (2·rank amounts, the befores then the
// afters; negative ones crop) in mode "constant" (with value), "reflect" or
// "edge".
func Pad(b *ir.Builder, x *ir.Value, pads []int, mode string, value float64) *ir.Value {
	attrs := ir.A("pads", pads)
	if mode != "constant" {
		attrs = attrs.With("mode", ir.Str(mode))
	}
	if value != 0 {
		attrs = attrs.With("value", ir.Float(value))
	}
	return b.Op1("pad", attrs, x)
}

// padGrad: constant mode crops dy back (a pad with the amounts negated),
// the other modes add up the copies with pad_grad.
func padGrad(g *GradContext) ([]*ir.Value, error) {
	if !g.Need(0) {
		return []*ir.Value{nil}, nil
	}
	s, err := padDecode(g.Op.Attrs, g.Op.Operand(0).Type().Rank())
	if err != nil {
		return nil, err
	}
	if s.mode == kernels.PadConstant {
		neg := make([]int, len(s.pads))
		for i, p := range s.pads {
			neg[i] = -p
		}
		return []*ir.Value{Pad(g.B, g.DY[0], neg, "constant", 0)}, nil
	}
	attrs := ir.A("pads", s.pads, "mode", padModeName(s.mode))
	return []*ir.Value{g.B.Op1("pad_grad", attrs, g.DY[0])}, nil
}

// gradDims returns dx's dims for dy's (dynamic ones stay dynamic),
// checking that they have a padding of shape dy.
func (s padSpec) gradDims(dy []int) ([]int, error) {
	r := len(dy)
	dims := make([]int, r)
	for i, d := range dy {
		dims[i] = ir.Dynamic
		if d == ir.Dynamic {
			continue
		}
		if dims[i] = d - s.pads[i] - s.pads[r+i]; dims[i] < 0 {
			return nil, fmt.Errorf("axis %d of size %d is smaller than its padding in %v", i, d, s.pads)
		}
	}
	if _, err := s.outDims(dims); err != nil {
		return nil, err
	}
	return dims, nil
}

func padInferGrad(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	dy := in[0]
	if err := nnWantFloat("dy", dy); err != nil {
		return nil, err
	}
	s, err := padDecode(attrs, dy.Rank())
	if err != nil {
		return nil, err
	}
	dims, err := s.gradDims(dy.Dims)
	if err != nil {
		return nil, fmt.Errorf("dy %s: %w", dy, err)
	}
	return []ir.Type{ir.TensorOf(dy.DType, dims...)}, nil
}

func padBindGrad(op *ir.Op) (Compute, error) {
	s, err := padDecode(op.Attrs, op.Operand(0).Type().Rank())
	if err != nil {
		return Compute{}, err
	}
	var memo shapeMemo[[][]int]
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		dx := out[0]
		srcs, ok := memo.lookup(dx.Shape())
		if !ok {
			srcs = s.sources(dx.Shape())
			memo.store(srcs, dx.Shape())
		}
		s.gradInto(c, srcs, in[0], dx)
		return nil
	}}, nil
}

// runGrad sums dy over the positions that read each element of x.
func (s padSpec) runGrad(c *Ctx, dy *tensor.Tensor) ([]*tensor.Tensor, error) {
	dims, err := s.gradDims(dy.Shape())
	if err != nil {
		return nil, fmt.Errorf("dy %s: %w", dy.Type(), err)
	}
	dx, err := c.New(ir.DType(dy.DType()), dims)
	if err != nil {
		return nil, err
	}
	s.gradInto(c, s.sources(dims), dy, dx)
	return c.Result(dx), nil
}

// gradInto sums dy into dx over the positions that read each element;
// srcs is s.sources of dx's shape.
func (s padSpec) gradInto(c *Ctx, srcs [][]int, dy, dx *tensor.Tensor) {
	dims, th := dx.Shape(), nnThreads(c)
	switch dy.DType() {
	case tensor.F32:
		kernels.PadGrad(dims, srcs, dy.F32(), dx.F32(), th)
	case tensor.F64:
		kernels.PadGrad(dims, srcs, dy.F64(), dx.F64(), th)
	}
}

// padGradGrad: pad_grad is the adjoint of pad, so its gradient is pad.
func padGradGrad(g *GradContext) ([]*ir.Value, error) {
	if !g.Need(0) {
		return []*ir.Value{nil}, nil
	}
	return []*ir.Value{g.B.Op1("pad", g.Op.Attrs, g.DY[0])}, nil
}
