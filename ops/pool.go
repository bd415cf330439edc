package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// 2-D pooling over NCHW input.
//
//	max_pool2d {kernel_size, strides, paddings} (x) -> (out, indices)
//	avg_pool2d {kernel_size, strides, paddings} (x) -> out
//
// x is N×C×H×W, f32 or f64. kernel_size [kh, kw] is required; strides
// default to kernel_size; paddings [ph, pw] (default [0, 0]) pad each side
// and must be at most half the window (ph ≤ kh/2, pw ≤ kw/2), and H and W
// must not be 0, so every window holds an input element. Each list may be a single int for both
// dims. out is N×C×OH×OW with OH = (H + 2·ph − kh)/sh + 1 (floor, no
// ceil mode).
//
// Padding never enters a result: max_pool2d ignores it, and avg_pool2d
// divides each window's sum by the number of input elements it covers —
// PyTorch's count_include_pad=False.
//
// max_pool2d has two results: the maxima and, for the backward, indices
// (i64, same shape) holding where each maximum came from as a flat index
// h·W + w into its (sample, channel) input plane, as PyTorch's
// return_indices gives. Among equal maxima the first in row-major window
// order wins; a NaN in a window is the result.

func init() {
	register(&Def{Name: "max_pool2d", Infer: inferPool(true), Bind: bindPool(true)})
	register(&Def{Name: "avg_pool2d", Infer: inferPool(false), Bind: bindPool(false)})
}

type nnPoolAttrs struct{ kernel, strides, paddings [2]int }

func nnPoolDecode(attrs ir.Attrs) (a nnPoolAttrs, err error) {
	if !attrs.Has("kernel_size") {
		return a, &ir.AttrError{Name: "kernel_size", Want: "a list of ints"}
	}
	if a.kernel, err = nnPair(attrs, "kernel_size", [2]int{}, 1); err != nil {
		return
	}
	if a.strides, err = nnPair(attrs, "strides", a.kernel, 1); err != nil {
		return
	}
	if a.paddings, err = nnPair(attrs, "paddings", [2]int{0, 0}, 0); err != nil {
		return
	}
	if 2*a.paddings[0] > a.kernel[0] || 2*a.paddings[1] > a.kernel[1] {
		err = fmt.Errorf("paddings %v must be at most half of kernel_size %v", a.paddings[:], a.kernel[:])
	}
	return
}

// nnPoolShape applies the pooling shape rule.
func nnPoolShape(x ir.Type, a nnPoolAttrs) ([]int, error) {
	if x.Rank() != 4 {
		return nil, fmt.Errorf("x %s must be NCHW (rank 4)", x)
	}
	if x.Dims[2] == 0 || x.Dims[3] == 0 {
		return nil, fmt.Errorf("x %s has an empty spatial dim: every window would be padding", x)
	}
	oh, okH := nnConvOut(x.Dims[2], a.kernel[0], a.strides[0], a.paddings[0], 1)
	ow, okW := nnConvOut(x.Dims[3], a.kernel[1], a.strides[1], a.paddings[1], 1)
	if !okH || !okW {
		return nil, fmt.Errorf("x %s with paddings %v is smaller than kernel_size %v", x, a.paddings[:], a.kernel[:])
	}
	return []int{x.Dims[0], x.Dims[1], oh, ow}, nil
}

func inferPool(isMax bool) func([]ir.Type, ir.Attrs) ([]ir.Type, error) {
	return func(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
		if err := wantOperands(in, 1); err != nil {
			return nil, err
		}
		a, err := nnPoolDecode(attrs)
		if err != nil {
			return nil, err
		}
		if err := nnWantFloat("x", in[0]); err != nil {
			return nil, err
		}
		dims, err := nnPoolShape(in[0], a)
		if err != nil {
			return nil, err
		}
		out := []ir.Type{ir.TensorOf(in[0].DType, dims...)}
		if isMax {
			out = append(out, ir.TensorOf(ir.I64, dims...))
		}
		return out, nil
	}
}

func bindPool(isMax bool) func(*ir.Op) (Kernel, error) {
	return func(op *ir.Op) (Kernel, error) {
		a, err := nnPoolDecode(op.Attrs)
		if err != nil {
			return nil, err
		}
		return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			x := in[0]
			dims, err := nnPoolShape(nnType(x), a)
			if err != nil {
				return nil, err
			}
			xs := x.Shape()
			p := kernels.Pool2DParams{N: xs[0], C: xs[1], H: xs[2], W: xs[3],
				KH: a.kernel[0], KW: a.kernel[1], SH: a.strides[0], SW: a.strides[1],
				PH: a.paddings[0], PW: a.paddings[1]}
			dt := ir.DType(x.DType())
			types := []ir.Type{{DType: dt, Dims: dims}}
			if isMax {
				types = append(types, ir.Type{DType: ir.I64, Dims: dims})
			}
			outs, err := nnNewAll(c, types...)
			if err != nil {
				return nil, err
			}
			th := nnThreads(c)
			switch {
			case isMax && dt == ir.F32:
				kernels.MaxPool2D(p, x.F32(), outs[0].F32(), outs[1].I64(), th)
			case isMax:
				kernels.MaxPool2D(p, x.F64(), outs[0].F64(), outs[1].I64(), th)
			case dt == ir.F32:
				kernels.AvgPool2D(p, x.F32(), outs[0].F32(), th)
			default:
				kernels.AvgPool2D(p, x.F64(), outs[0].F64(), th)
			}
			return outs, nil
		}, nil
	}
}

// MaxPool2D appends a max pooling of x (NCHW) and returns the maxima and
// their flat in-plane indices (i64). strides nil means kernel; paddings nil
// means [0, 0].
func MaxPool2D(b *ir.Builder, x *ir.Value, kernel, strides, paddings []int) (out, indices *ir.Value) {
	op := b.Op("max_pool2d", nnPoolAttrList(kernel, strides, paddings), x)
	return op.Result(0), op.Result(1)
}

// AvgPool2D appends an average pooling of x (NCHW) that excludes padding
// from each window's divisor. strides nil means kernel; paddings nil means
// [0, 0].
func AvgPool2D(b *ir.Builder, x *ir.Value, kernel, strides, paddings []int) *ir.Value {
	return b.Op1("avg_pool2d", nnPoolAttrList(kernel, strides, paddings), x)
}

func nnPoolAttrList(kernel, strides, paddings []int) ir.Attrs {
	attrs := ir.Attrs{{Name: "kernel_size", Value: nnIntList(kernel)}}
	if strides != nil {
		attrs = attrs.With("strides", nnIntList(strides))
	}
	if paddings != nil {
		attrs = attrs.With("paddings", nnIntList(paddings))
	}
	return attrs
}
