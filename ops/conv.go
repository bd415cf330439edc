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
// dilated kernel larger than the padded input is an error.
//
// The kernel runs im2col + GEMM per sample and group, samples spread over
// threads; the im2col workspace comes from the context's allocator and is
// released before the kernel returns. 1×1 convolutions with unit strides
// and no padding multiply the input directly, with no workspace.

func init() {
	register(&Def{Name: "conv2d", Infer: inferConv2D, Bind: bindConv2D})
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

func bindConv2D(op *ir.Op) (Kernel, error) {
	a, err := nnConvDecode(op.Attrs)
	if err != nil {
		return nil, err
	}
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, w := in[0], in[1]
		dims, err := nnConvShape(nnType(x), nnType(w), a)
		if err != nil {
			return nil, err
		}
		xs, ws := x.Shape(), w.Shape()
		p := kernels.Conv2DParams{
			N: xs[0], C: xs[1], H: xs[2], W: xs[3], O: ws[0], KH: ws[2], KW: ws[3],
			SH: a.strides[0], SW: a.strides[1], PH: a.paddings[0], PW: a.paddings[1],
			DH: a.dilations[0], DW: a.dilations[1], Groups: a.groups,
		}
		dt := ir.DType(x.DType())
		out, err := c.New(dt, dims)
		if err != nil {
			return nil, err
		}
		th := nnThreads(c)
		var work *tensor.Tensor
		if n := kernels.Conv2DWorkspace(p, th); n > 0 {
			if work, err = c.New(dt, []int{n}); err != nil {
				out.Release()
				return nil, err
			}
			defer work.Release()
		}
		switch x.DType() {
		case tensor.F32:
			var buf []float32
			if work != nil {
				buf = work.F32()
			}
			kernels.Conv2D(p, x.F32(), w.F32(), out.F32(), buf, th)
		case tensor.F64:
			var buf []float64
			if work != nil {
				buf = work.F64()
			}
			kernels.Conv2D(p, x.F64(), w.F64(), out.F64(), buf, th)
		}
		return []*tensor.Tensor{out}, nil
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
