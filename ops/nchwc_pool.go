package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// max_pool2d_nchwc is max_pool2d_values on the blocked layout
// (NCHWcForm):
//
//	max_pool2d_nchwc {kernel_size, strides?, paddings?} (x) -> y
//
// x is N×Cb×H×W×b, y N×Cb×OH×OW×b with max_pool2d_values' window rules;
// each element is the maximum max_pool2d_values gives for its channel,
// bit for bit (kernels.MaxPoolNCHWc). No gradient.

func init() {
	register(&Def{Name: "max_pool2d_nchwc", Infer: inferMaxPoolNCHWc, Compute: bindMaxPoolNCHWc, Grad: fusedNoGrad})
}

func inferMaxPoolNCHWc(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	if err := nchwcBlockedType("x", in[0]); err != nil {
		return nil, err
	}
	a, err := nnPoolDecode(attrs)
	if err != nil {
		return nil, err
	}
	dims, err := nnPoolShape(nchwcUnblock(in[0]), a)
	if err != nil {
		return nil, fmt.Errorf("on the blocked x's channels: %w", err)
	}
	return []ir.Type{nchwcBlock(ir.TensorOf(ir.F32, dims...), in[0].Dims[4])}, nil
}

func bindMaxPoolNCHWc(op *ir.Op) (Compute, error) {
	a, err := nnPoolDecode(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		p := nnPoolParams(in[0].Shape(), a)
		b := in[0].Shape()[4]
		p.C *= b
		kernels.MaxPoolNCHWc(p, b, in[0].F32(), out[0].F32(), nnThreads(c))
		return nil
	}}, nil
}
