package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// upsample_nearest_nchwc is resize nearest by whole factors on the
// blocked layout (NCHWcForm):
//
//	upsample_nearest_nchwc {factors:[fh, fw]} (x) -> y
//
// x is N×Cb×H×W×b, y N×Cb×(H·fh)×(W·fw)×b, each input pixel's vector
// repeated over an fh×fw square: what resize with mode nearest,
// asymmetric coordinates and floor rounding gives for scales [fh, fw] on
// the spatial axes (kernels.UpsampleNearestNCHWc). The factors are at
// least 1. No gradient.

func init() {
	register(&Def{Name: "upsample_nearest_nchwc", Infer: inferUpsampleNCHWc, Compute: bindUpsampleNCHWc, Grad: fusedNoGrad})
}

// upsampleFactors decodes the attribute factors.
func upsampleFactors(attrs ir.Attrs) ([2]int, error) {
	f, err := attrs.Ints("factors")
	if err != nil {
		return [2]int{}, err
	}
	if len(f) != 2 || f[0] < 1 || f[1] < 1 {
		return [2]int{}, fmt.Errorf("attribute factors:%v: want two factors >= 1", f)
	}
	return [2]int{f[0], f[1]}, nil
}

// upsampleDim is d times f, or Dynamic.
func upsampleDim(d, f int) int {
	if d == ir.Dynamic {
		return d
	}
	return d * f
}

func inferUpsampleNCHWc(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	if err := nchwcBlockedType("x", in[0]); err != nil {
		return nil, err
	}
	f, err := upsampleFactors(attrs)
	if err != nil {
		return nil, err
	}
	d := in[0].Dims
	return []ir.Type{ir.TensorOf(ir.F32, d[0], d[1], upsampleDim(d[2], f[0]), upsampleDim(d[3], f[1]), d[4])}, nil
}

func bindUpsampleNCHWc(op *ir.Op) (Compute, error) {
	f, err := upsampleFactors(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		s := in[0].Shape()
		kernels.UpsampleNearestNCHWc(in[0].F32(), out[0].F32(), s[0], s[1]*s[4], s[2], s[3], s[4], f[0], f[1], nnThreads(c))
		return nil
	}}, nil
}
