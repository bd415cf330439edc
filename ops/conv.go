package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// 2-D convolution.
//
//	conv2d {strides, paddings, dilations, groups} (x, w) -> out
//
// x is N×C×H×W (NCHW), w is O×(C/groups)×KH×KW (OIHW), both f32 or both
// f64; there is no bias operand (add one with broadcasting). strides
// [sh, sw] default [1, 1]; paddings [ph, pw] pad each side symmetrically
// with zeros, default [0, 0]; dilations [dh, dw] default [1, 1]; groups
// default 1 must divide C and O. Each list attribute may also be a single
// int for both dims. out is N×O×OH×OW with
// OH = (H + 2·ph − dh·(KH−1) − 1)/sh + 1 (floor), and likewise OW; a
// dilated kernel larger than the padded input is an error, and so is a
// kernel with no elements (KH or KW 0), as in PyTorch. N, O, C, H and W
// may be 0: an empty result, or zeros where every product is with padding
// or there are no input channels (PyTorch refuses O = 0 and an empty H or
// W).
//
// The kernel runs im2col + GEMM per sample and group, samples spread over
// threads, or for float32 with unit strides and few output channels per
// group a direct convolution over a zero-padded copy of each sample. Its
// scratch (one im2col block per goroutine, or the reordered weights and a
// padded sample per goroutine) is the op's workspace (Compute.Work), which
// the executor allocates before the kernel and frees after it: its size
// follows from the shapes, the dtype and the thread count, since each
// goroutine has its own. 1×1 convolutions with unit strides and no padding
// multiply the input directly, with no workspace.
//
// Its gradient uses two helper ops, which take conv2d's attributes:
//
//	conv2d_grad_input  {…, input_size?:[H,W]}  (dy, w[, x]) -> dx
//	conv2d_grad_filter {…, filter_size?:[KH,KW]} (dy, x[, w]) -> dw
//
// conv2d_grad_input is the gradient with respect to x of
// sum(conv2d(x, w)·dy): N×C×H×W with N from dy and C = w's dim 1 · groups.
// Several input sizes give the same output size, so H and W come from the
// input_size attribute or, when it is absent, from the dims 2 and 3 of the
// optional third operand (only its shape is read). conv2d_grad_filter is
// the gradient with respect to w: O×(C/groups)×KH×KW with O from dy, and
// KH, KW from filter_size or the third operand's dims 2 and 3. Both check
// that dy has the shape conv2d would give. They run GEMM + col2im (input)
// and im2col + GEMM (filter), or direct kernels for float32 with unit
// strides, with a workspace like conv2d's (for the filter gradient also
// the partial sums of its fixed chunks of samples).
//
// Both are linear in each operand, and differentiate through each other:
// conv2d_grad_input(dy, w) is the adjoint of conv2d in x, so its gradient
// ddx gives conv2d(ddx, w) for dy and conv2d_grad_filter(dy, ddx) for w;
// conv2d_grad_filter(dy, x) is the adjoint in w, so ddw gives
// conv2d(x, ddw) for dy and conv2d_grad_input(dy, ddw) for x. So
// convolutions have second derivatives, and conv2d_grad_input, used as a
// transposed convolution, trains.

func init() {
	register(&Def{Name: "conv2d", Infer: inferConv2D, Compute: bindConv2D, Grad: nnGradConv2D, Flops: convFlops, PerSample: perSampleFirst, NCHWc: nchwcConv})
	register(&Def{Name: "conv2d_grad_input", Grad: nnGradConvGradInput, Infer: nnInferConvGrad(true), Compute: nnBindConvGrad(true), Flops: convFlops, PerSample: perSampleFirst})
	register(&Def{Name: "conv2d_grad_filter", Grad: nnGradConvGradFilter, Infer: nnInferConvGrad(false), Compute: nnBindConvGrad(false), Flops: convFlops, BatchSum: convGradFilterBatch})
}

type nnConvAttrs struct {
	strides, paddings, dilations [2]int
	groups                       int
}

func nnConvDecode(attrs ir.Attrs) (a nnConvAttrs, err error) {
	if a.strides, err = nnPair(attrs, "strides", [2]int{1, 1}, 1); err != nil {
		return
	}
	if a.paddings, err = nnPair(attrs, "paddings", [2]int{0, 0}, 0); err != nil {
		return
	}
	if a.dilations, err = nnPair(attrs, "dilations", [2]int{1, 1}, 1); err != nil {
		return
	}
	if a.groups, err = nnInt(attrs, "groups", 1); err != nil {
		return
	}
	if a.groups < 1 {
		err = fmt.Errorf("attribute groups:%d must be >= 1", a.groups)
	}
	return
}

// nnConvOut is one spatial output size, or Dynamic; it fails when the
// dilated kernel does not fit in the padded input.
func nnConvOut(in, k, stride, pad, dil int) (int, bool) {
	if in == ir.Dynamic || k == ir.Dynamic {
		return ir.Dynamic, true
	}
	num := in + 2*pad - dil*(k-1) - 1
	if num < 0 {
		return 0, false
	}
	return num/stride + 1, true
}

// nnConvShape applies the conv2d shape rule; it returns the output dims.
func nnConvShape(x, w ir.Type, a nnConvAttrs) ([]int, error) {
	if x.Rank() != 4 || w.Rank() != 4 {
		return nil, fmt.Errorf("x %s must be NCHW and w %s OIHW (rank 4)", x, w)
	}
	c, cg, o := x.Dims[1], w.Dims[1], w.Dims[0]
	if c != ir.Dynamic && cg != ir.Dynamic && c != cg*a.groups {
		return nil, fmt.Errorf("x %s has %d channels but w %s with groups=%d takes %d", x, c, w, a.groups, cg*a.groups)
	}
	if o != ir.Dynamic && o%a.groups != 0 {
		return nil, fmt.Errorf("w %s: %d output channels are not divisible by groups=%d", w, o, a.groups)
	}
	// A kernel without elements would make an output larger than the
	// input out of nothing (the kernels assume KH, KW >= 1); PyTorch
	// refuses it too.
	if w.Dims[2] == 0 || w.Dims[3] == 0 {
		return nil, fmt.Errorf("w %s: the kernel size must be at least 1×1", w)
	}
	oh, okH := nnConvOut(x.Dims[2], w.Dims[2], a.strides[0], a.paddings[0], a.dilations[0])
	ow, okW := nnConvOut(x.Dims[3], w.Dims[3], a.strides[1], a.paddings[1], a.dilations[1])
	if !okH || !okW {
		return nil, fmt.Errorf("x %s with paddings %v: kernel of w %s with dilations %v is larger than the padded input",
			x, a.paddings[:], w, a.dilations[:])
	}
	return []int{x.Dims[0], o, oh, ow}, nil
}

func inferConv2D(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 2); err != nil {
		return nil, err
	}
	a, err := nnConvDecode(attrs)
	if err != nil {
		return nil, err
	}
	if err := nnWantFloat("x", in[0]); err != nil {
		return nil, err
	}
	if err := nnSameDType("w", in[1], in[0].DType, "x", in[0]); err != nil {
		return nil, err
	}
	out, err := nnConvShape(in[0], in[1], a)
	if err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(in[0].DType, out...)}, nil
}

// nnConvParams is the kernels' description of a convolution of x by w,
// of static shapes xs and ws.
func nnConvParams(xs, ws []int, a nnConvAttrs) kernels.Conv2DParams {
	return kernels.Conv2DParams{
		N: xs[0], C: xs[1], H: xs[2], W: xs[3], O: ws[0], KH: ws[2], KW: ws[3],
		SH: a.strides[0], SW: a.strides[1], PH: a.paddings[0], PW: a.paddings[1],
		DH: a.dilations[0], DW: a.dilations[1], Groups: a.groups,
	}
}

// nnConvWorkBytes is the workspace of a convolution kernel that takes
// elems elements of dtype dt.
func nnConvWorkBytes(elems int, dt ir.DType) int64 { return WorkBytes(elems, dt.Size()) }

func bindConv2D(op *ir.Op) (Compute, error) {
	a, err := nnConvDecode(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	name, dts := op.Name(), ewOperandDTypes(op)
	dt := dts[0]
	f32 := dt == ir.F32
	return Compute{
		Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
			if err := ewCheckInputs(name, in, dts); err != nil {
				return err
			}
			x, w := in[0], in[1]
			p, th := nnConvParams(x.Shape(), w.Shape(), a), nnThreads(c)
			p.Packed = convPacked(c, f32)
			n := kernels.Conv2DWorkspaceFor(p, th, f32)
			switch dt {
			case ir.F32:
				kernels.Conv2D(p, x.F32(), w.F32(), out[0].F32(), Scratch[float32](c, n), th)
			case ir.F64:
				kernels.Conv2D(p, x.F64(), w.F64(), out[0].F64(), Scratch[float64](c, n), th)
			}
			return nil
		},
		Work: func(shapes [][]int, threads int) int64 {
			p := nnConvParams(shapes[0], shapes[1], a)
			return nnConvWorkBytes(kernels.Conv2DWorkspaceFor(p, max(threads, 1), f32), dt)
		},
		Pack: convPack(a, dt, false),
	}, nil
}

// Conv2D appends a 2-D convolution of x (NCHW) with w (OIHW); strides,
// paddings and dilations are [h, w] pairs, nil for the defaults ([1,1],
// [0,0], [1,1]); groups 0 means 1.
func Conv2D(b *ir.Builder, x, w *ir.Value, strides, paddings, dilations []int, groups int) *ir.Value {
	attrs := ir.Attrs{}
	if strides != nil {
		attrs = attrs.With("strides", nnIntList(strides))
	}
	if paddings != nil {
		attrs = attrs.With("paddings", nnIntList(paddings))
	}
	if dilations != nil {
		attrs = attrs.With("dilations", nnIntList(dilations))
	}
	if groups != 0 {
		attrs = attrs.With("groups", ir.Int(groups))
	}
	return b.Op1("conv2d", attrs, x, w)
}

// nnGradConv2D: dx = conv2d_grad_input(dy, w), dw = conv2d_grad_filter(dy,
// x). The sizes the helpers cannot infer from dy come from the forward
// operands' static types when known, so that nothing more is kept alive.
func nnGradConv2D(g *GradContext) ([]*ir.Value, error) {
	dy := g.DY[0]
	dx := make([]*ir.Value, 2)
	if g.Need(0) {
		dx[0] = nnGradWithSize(g, g.Op.Attrs, "conv2d_grad_input", "input_size", 0, dy, g.X(1))
	}
	if g.Need(1) {
		dx[1] = nnGradWithSize(g, g.Op.Attrs, "conv2d_grad_filter", "filter_size", 1, dy, g.X(0))
	}
	return dx, nil
}

// nnGradWithSize appends the helper op name on operands with attrs plus
// the spatial size (dims 2 and 3) of forward operand i: as the attribute
// size when static, else by passing operand i itself.
func nnGradWithSize(g *GradContext, attrs ir.Attrs, name, size string, i int, operands ...*ir.Value) *ir.Value {
	t := g.Op.Operand(i).Type()
	if t.Rank() == 4 && t.Dims[2] != ir.Dynamic && t.Dims[3] != ir.Dynamic {
		return g.B.Op1(name, attrs.With(size, nnIntList(t.Dims[2:4])), operands...)
	}
	return g.B.Op1(name, attrs, append(operands, g.X(i))...)
}

// nnConvOnly is attrs without the helper ops' input_size and filter_size.
func nnConvOnly(attrs ir.Attrs) ir.Attrs {
	var out ir.Attrs
	for _, a := range attrs {
		if a.Name != "input_size" && a.Name != "filter_size" {
			out = append(out, a)
		}
	}
	return out
}

// nnGradConvGradInput: for dx = conv2d_grad_input(dy, w) and its gradient
// ddx, dy gets conv2d(ddx, w) and w gets conv2d_grad_filter(dy, ddx).
func nnGradConvGradInput(g *GradContext) ([]*ir.Value, error) {
	dx := make([]*ir.Value, g.Op.NumOperands())
	ddx, attrs := g.DY[0], nnConvOnly(g.Op.Attrs)
	if g.Need(0) {
		dx[0] = g.B.Op1("conv2d", attrs, ddx, g.X(1))
	}
	if g.Need(1) {
		dx[1] = nnGradWithSize(g, attrs, "conv2d_grad_filter", "filter_size", 1, g.X(0), ddx)
	}
	return dx, nil
}

// nnGradConvGradFilter: for dw = conv2d_grad_filter(dy, x) and its
// gradient ddw, dy gets conv2d(x, ddw) and x gets conv2d_grad_input(dy,
// ddw).
func nnGradConvGradFilter(g *GradContext) ([]*ir.Value, error) {
	dx := make([]*ir.Value, g.Op.NumOperands())
	ddw, attrs := g.DY[0], nnConvOnly(g.Op.Attrs)
	if g.Need(0) {
		dx[0] = g.B.Op1("conv2d", attrs, g.X(1), ddw)
	}
	if g.Need(1) {
		dx[1] = nnGradWithSize(g, attrs, "conv2d_grad_input", "input_size", 1, g.X(0), ddw)
	}
	return dx, nil
}

// nnSpatialSize returns the [h, w] size named by attribute name or, when
// it is absent, dims 2 and 3 of like (nil when there is no like). A
// missing or wrong-rank like is an error.
func nnSpatialSize(attrs ir.Attrs, name string, like *ir.Type) ([2]int, error) {
	if attrs.Has(name) {
		if like != nil {
			return [2]int{}, fmt.Errorf("takes attribute %s or a third operand, not both", name)
		}
		return nnPair(attrs, name, [2]int{}, 0)
	}
	if like == nil {
		return [2]int{}, fmt.Errorf("needs attribute %s or a third operand to take it from", name)
	}
	if like.Rank() != 4 {
		return [2]int{}, fmt.Errorf("third operand %s must have rank 4", *like)
	}
	return [2]int{like.Dims[2], like.Dims[3]}, nil
}

// nnConvGradTypes checks the operands of conv2d_grad_input (input) or
// conv2d_grad_filter and returns the types of x, w and dy they stand for
// (dims may be dynamic) and the result type.
func nnConvGradTypes(input bool, in []ir.Type, attrs ir.Attrs) (a nnConvAttrs, x, w ir.Type, out ir.Type, err error) {
	if len(in) != 2 && len(in) != 3 {
		err = fmt.Errorf("takes 2 or 3 operands, got %d", len(in))
		return
	}
	if a, err = nnConvDecode(attrs); err != nil {
		return
	}
	dy, other := in[0], in[1]
	if err = nnWantFloat("dy", dy); err != nil {
		return
	}
	if err = nnSameDType("operand 1", other, dy.DType, "dy", dy); err != nil {
		return
	}
	if dy.Rank() != 4 || other.Rank() != 4 {
		err = fmt.Errorf("dy %s and operand 1 %s must have rank 4", dy, other)
		return
	}
	var like *ir.Type
	if len(in) == 3 {
		like = &in[2]
	}
	sizeName := "filter_size"
	if input {
		sizeName = "input_size"
	}
	size, err := nnSpatialSize(attrs, sizeName, like)
	if err != nil {
		return
	}
	if input {
		w = other
		c := ir.Dynamic
		if w.Dims[1] != ir.Dynamic {
			c = w.Dims[1] * a.groups
		}
		if like != nil && like.Dims[1] != ir.Dynamic {
			if !nnDimEq(c, like.Dims[1]) {
				err = fmt.Errorf("x %s has %d channels but w %s with groups=%d takes %d", *like, like.Dims[1], w, a.groups, c)
				return
			}
			c = like.Dims[1]
		}
		n := dy.Dims[0]
		if like != nil {
			if !nnDimEq(n, like.Dims[0]) {
				err = fmt.Errorf("dy %s and x %s differ in batch size", dy, *like)
				return
			}
			if n == ir.Dynamic {
				n = like.Dims[0]
			}
		}
		x = ir.TensorOf(dy.DType, n, c, size[0], size[1])
		out = x
	} else {
		x = other
		cg := ir.Dynamic
		if x.Dims[1] != ir.Dynamic {
			if x.Dims[1]%a.groups != 0 {
				err = fmt.Errorf("x %s: %d channels are not divisible by groups=%d", x, x.Dims[1], a.groups)
				return
			}
			cg = x.Dims[1] / a.groups
		}
		w = ir.TensorOf(dy.DType, dy.Dims[1], cg, size[0], size[1])
		out = w
	}
	want, err := nnConvShape(x, w, a)
	if err != nil {
		return
	}
	for i, d := range want {
		if !nnDimEq(d, dy.Dims[i]) {
			err = fmt.Errorf("dy %s does not have the shape %s of conv2d's output for x %s and w %s", dy, dimsString(want), x, w)
			return
		}
	}
	return
}

func nnInferConvGrad(input bool) func([]ir.Type, ir.Attrs) ([]ir.Type, error) {
	return func(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
		_, _, _, out, err := nnConvGradTypes(input, in, attrs)
		if err != nil {
			return nil, err
		}
		return []ir.Type{out}, nil
	}
}

// nnConvGradParams is the kernels' description of the convolution whose
// gradient conv2d_grad_input (input) or conv2d_grad_filter computes, from
// the static shapes of its operand 1 (w or x) and its result (dx or dw).
func nnConvGradParams(input bool, a nnConvAttrs, other, res []int) kernels.Conv2DParams {
	if input {
		return nnConvParams(res, other, a)
	}
	return nnConvParams(other, res, a)
}

func nnBindConvGrad(input bool) func(*ir.Op) (Compute, error) {
	return func(op *ir.Op) (Compute, error) {
		attrs := op.Attrs
		a, err := nnConvDecode(attrs)
		if err != nil {
			return Compute{}, err
		}
		name, dts := op.Name(), ewOperandDTypes(op)
		dt := dts[0]
		f32 := dt == ir.F32
		workspace := kernels.Conv2DGradFilterWorkspaceFor
		if input {
			workspace = kernels.Conv2DGradInputWorkspaceFor
		}
		return Compute{
			Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
				if err := ewCheckInputs(name, in, dts); err != nil {
					return err
				}
				dy, other, res := in[0], in[1], out[0]
				p, th := nnConvGradParams(input, a, other.Shape(), res.Shape()), nnThreads(c)
				n := workspace(p, th, f32)
				switch dt {
				case ir.F32:
					buf := Scratch[float32](c, n)
					if input {
						kernels.Conv2DGradInput(p, dy.F32(), other.F32(), res.F32(), buf, th)
					} else {
						kernels.Conv2DGradFilter(p, dy.F32(), other.F32(), res.F32(), buf, th)
					}
				case ir.F64:
					buf := Scratch[float64](c, n)
					if input {
						kernels.Conv2DGradInput(p, dy.F64(), other.F64(), res.F64(), buf, th)
					} else {
						kernels.Conv2DGradFilter(p, dy.F64(), other.F64(), res.F64(), buf, th)
					}
				}
				return nil
			},
			Work: func(shapes [][]int, threads int) int64 {
				types := make([]ir.Type, len(shapes))
				for i, s := range shapes {
					types[i] = ir.Type{DType: dts[i], Dims: s}
				}
				_, _, _, out, err := nnConvGradTypes(input, types, attrs)
				if err != nil {
					return 0 // Infer failed first: the kernel does not run
				}
				p := nnConvGradParams(input, a, shapes[1], out.Dims)
				return nnConvWorkBytes(workspace(p, max(threads, 1), f32), dt)
			},
		}, nil
	}
}
