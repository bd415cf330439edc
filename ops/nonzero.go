package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Positions of nonzero elements.
//
//	nonzero (x) -> i64 [rank(x), ?]
//
// x has any dtype and rank >= 1. Result column t holds the multi-index of
// the t-th element of x (in row-major order) that is nonzero: true for
// i1, and for floats anything but ±0 (NaN included). The number of
// columns is known only at run time. No gradient flows (NoGrad): the
// result is integer.

func init() {
	register(&Def{Name: "nonzero", Infer: nzInfer, Bind: nzBind, NoGrad: true})
}

func nzInfer(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	x := in[0]
	if x.DType.Size() == 0 {
		return nil, fmt.Errorf("operand %s is not a tensor", x)
	}
	if x.Rank() == 0 {
		return nil, fmt.Errorf("operand %s is a scalar; nonzero needs rank >= 1", x)
	}
	return []ir.Type{ir.TensorOf(ir.I64, x.Rank(), ir.Dynamic)}, nil
}

func nzBind(op *ir.Op) (Kernel, error) {
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		th := nnThreads(c)
		counts := make([]int, kernels.NonzeroParts(x.Len(), th))
		var n int
		switch x.DType() {
		case tensor.F32:
			n = kernels.NonzeroCount(x.F32(), counts, th)
		case tensor.F64:
			n = kernels.NonzeroCount(x.F64(), counts, th)
		case tensor.I32:
			n = kernels.NonzeroCount(x.I32(), counts, th)
		case tensor.I64:
			n = kernels.NonzeroCount(x.I64(), counts, th)
		case tensor.Bool:
			n = kernels.NonzeroCount(x.Bool(), counts, th)
		}
		y, err := c.New(ir.I64, []int{x.Rank(), n})
		if err != nil {
			return nil, err
		}
		dst, shape := y.I64(), x.Shape()
		switch x.DType() {
		case tensor.F32:
			kernels.NonzeroIndices(dst, x.F32(), shape, counts, n, th)
		case tensor.F64:
			kernels.NonzeroIndices(dst, x.F64(), shape, counts, n, th)
		case tensor.I32:
			kernels.NonzeroIndices(dst, x.I32(), shape, counts, n, th)
		case tensor.I64:
			kernels.NonzeroIndices(dst, x.I64(), shape, counts, n, th)
		case tensor.Bool:
			kernels.NonzeroIndices(dst, x.Bool(), shape, counts, n, th)
		}
		return c.Result(y), nil
	}, nil
}

// Nonzero appends the multi-indices of x's nonzero elements, one per
// column of an i64 [rank(x), ?] result.
func Nonzero(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("nonzero", nil, x) }
