package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// The reorders at the edges of a blocked part of a program (NCHWcForm):
//
//	reorder_nchwc {block: b} (x) -> y    x f32 N×C×H×W, C a static multiple of b; y N×(C/b)×H×W×b
//	reorder_nchw  (x) -> y               x f32 N×Cb×H×W×b, Cb static; y N×(Cb·b)×H×W
//
// y[n, c/b, h, w, c%b] = x[n, c, h, w] and back: the same elements,
// moved. The block b is 8 or 16 (kernels.NCHWcBlockOK); a blocked value
// carries it as its last dimension. Package optimize's nchwc pass inserts
// the reorders; like the fused ops they have no gradient.

func init() {
	register(&Def{Name: "reorder_nchwc", Infer: inferReorderNCHWc, Compute: bindReorder(true), Grad: fusedNoGrad})
	register(&Def{Name: "reorder_nchw", Infer: inferReorderNCHW, Compute: bindReorder(false), Grad: fusedNoGrad})
}

// nchwcBlockedType reports why t is not a blocked f32 value
// N×Cb×H×W×b with a static Cb and a block b the layout takes.
func nchwcBlockedType(what string, t ir.Type) error {
	if t.IsStack() || t.Unranked || t.DType != ir.F32 || t.Rank() != 5 || !kernels.NCHWcBlockOK(t.Dims[4]) || t.Dims[1] == ir.Dynamic {
		return fmt.Errorf("%s %s must be f32 N×Cb×H×W×b, b 8 or 16 (the blocked layout, Cb static)", what, t)
	}
	return nil
}

// nchwcBlockAttr decodes the attribute block: a channel block the layout
// takes.
func nchwcBlockAttr(attrs ir.Attrs) (int, error) {
	b, err := attrs.Int("block")
	if err != nil {
		return 0, err
	}
	if b != 8 && b != 16 || !kernels.NCHWcBlockOK(int(b)) {
		return 0, fmt.Errorf("attribute block:%d: the blocked layout takes 8 or 16", b)
	}
	return int(b), nil
}

// nchwcPlainType reports why t is not an f32 NCHW value whose channels
// the blocked layout with block b holds.
func nchwcPlainType(what string, t ir.Type, b int) error {
	if !nchwcChannels(t, b) {
		return fmt.Errorf("%s %s must be f32 N×C×H×W with C a static multiple of %d", what, t, b)
	}
	return nil
}

// nchwcBlock is the type of t, an NCHW type nchwcChannels holds, blocked
// by b.
func nchwcBlock(t ir.Type, b int) ir.Type {
	return ir.TensorOf(t.DType, t.Dims[0], t.Dims[1]/b, t.Dims[2], t.Dims[3], b)
}

// nchwcUnblock is the NCHW type of t, a blocked type.
func nchwcUnblock(t ir.Type) ir.Type {
	return ir.TensorOf(t.DType, t.Dims[0], t.Dims[1]*t.Dims[4], t.Dims[2], t.Dims[3])
}

func inferReorderNCHWc(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	b, err := nchwcBlockAttr(attrs)
	if err != nil {
		return nil, err
	}
	if err := nchwcPlainType("x", in[0], b); err != nil {
		return nil, err
	}
	return []ir.Type{nchwcBlock(in[0], b)}, nil
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
				b := out[0].Shape()[4]
				kernels.ReorderToNCHWc(in[0].F32(), out[0].F32(), s[0], s[1], s[2]*s[3], b, nnThreads(c))
			} else {
				kernels.ReorderFromNCHWc(in[0].F32(), out[0].F32(), s[0], s[1]*s[4], s[2]*s[3], s[4], nnThreads(c))
			}
			return nil
		}}, nil
	}
}
