package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// The reorders at the edges of a blocked part of a program (NCHWcForm):
//
//	reorder_nchwc (x) -> y    x f32 N×C×H×W, C a static multiple of 16; y N×(C/16)×H×W×16
//	reorder_nchw  (x) -> y    x f32 N×Cb×H×W×16, Cb static; y N×(Cb·16)×H×W
//
// y[n, c/16, h, w, c%16] = x[n, c, h, w] and back: the same elements,
// moved. Package optimize's nchwc pass inserts them; like the fused ops
// they have no gradient.

func init() {
	register(&Def{Name: "reorder_nchwc", Infer: inferReorderNCHWc, Compute: bindReorder(true), Grad: fusedNoGrad})
	register(&Def{Name: "reorder_nchw", Infer: inferReorderNCHW, Compute: bindReorder(false), Grad: fusedNoGrad})
}

// nchwcBlockedType reports why t is not a blocked f32 value
// N×Cb×H×W×16 with a static Cb.
func nchwcBlockedType(what string, t ir.Type) error {
	if t.IsStack() || t.Unranked || t.DType != ir.F32 || t.Rank() != 5 || t.Dims[4] != kernels.NCHWcBlock || t.Dims[1] == ir.Dynamic {
		return fmt.Errorf("%s %s must be f32 N×Cb×H×W×%d (the blocked layout, Cb static)", what, t, kernels.NCHWcBlock)
	}
	return nil
}

// nchwcPlainType reports why t is not an f32 NCHW value whose channels
// the blocked layout holds.
func nchwcPlainType(what string, t ir.Type) error {
	if !nchwcChannels(t) {
		return fmt.Errorf("%s %s must be f32 N×C×H×W with C a static multiple of %d", what, t, kernels.NCHWcBlock)
	}
	return nil
}

// nchwcBlock is the blocked type of t, an NCHW type nchwcChannels holds.
func nchwcBlock(t ir.Type) ir.Type {
	return ir.TensorOf(t.DType, t.Dims[0], t.Dims[1]/kernels.NCHWcBlock, t.Dims[2], t.Dims[3], kernels.NCHWcBlock)
}

// nchwcUnblock is the NCHW type of t, a blocked type.
func nchwcUnblock(t ir.Type) ir.Type {
	return ir.TensorOf(t.DType, t.Dims[0], t.Dims[1]*kernels.NCHWcBlock, t.Dims[2], t.Dims[3])
}

func inferReorderNCHWc(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	if err := nchwcPlainType("x", in[0]); err != nil {
		return nil, err
	}
	return []ir.Type{nchwcBlock(in[0])}, nil
}

func inferReorderNCHW(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	if err := nchwcBlockedType("x", in[0]); err != nil {
		return nil, err
	}
	return []ir.Type{nchwcUnblock(in[0])}, nil
}

// bindReorder is reorder_nchwc's kernel (toBlocked) or reorder_nchw's.
func bindReorder(toBlocked bool) func(*ir.Op) (Compute, error) {
	return func(op *ir.Op) (Compute, error) {
		return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
			s := in[0].Shape()
			if out[0].Len() == 0 {
				return nil // the kernels index whole planes
			}
			if toBlocked {
				kernels.ReorderToNCHWc(in[0].F32(), out[0].F32(), s[0], s[1], s[2]*s[3], nnThreads(c))
			} else {
				kernels.ReorderFromNCHWc(in[0].F32(), out[0].F32(), s[0], s[1]*kernels.NCHWcBlock, s[2]*s[3], nnThreads(c))
			}
			return nil
		}}, nil
	}
}
