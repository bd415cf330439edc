package ops

import (
	"errors"
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Determinant.
//
//	det (x) -> y     f32 f64; x [..., n, n] -> y [...]
//
// The determinant of each n×n matrix of the last two dims, by LU
// decomposition with partial pivoting in float64 (f32 results are rounded
// once); a 0×0 matrix has determinant 1. A dynamic n must turn out square
// at run time.
//
// Gradients are not implemented (d det(x)/dx = det(x)·x⁻ᵀ needs an
// inverse gopir does not have); asking for one is an error.

func init() {
	register(&Def{Name: "det", Infer: inferDet, Compute: bindDet, Grad: gradDet})
}

func inferDet(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	x := in[0]
	if err := ewFloats.check(x); err != nil {
		return nil, err
	}
	r := x.Rank()
	if r < 2 {
		return nil, fmt.Errorf("operand type %s: want rank ≥ 2 (square matrices in the last two dims)", x)
	}
	if m, n := x.Dims[r-2], x.Dims[r-1]; m != n && m != ir.Dynamic && n != ir.Dynamic {
		return nil, fmt.Errorf("operand type %s: the matrices are %d×%d, not square", x, m, n)
	}
	return []ir.Type{ir.TensorOf(x.DType, x.Dims[:r-2]...)}, nil
}

// bindDet returns det's kernel: Infer has checked that the run-time
// matrices are square, and the executor allocates the result.
func bindDet(op *ir.Op) (Compute, error) {
	var run func(c *Ctx, out, x *tensor.Tensor, n int) error
	switch dt := op.Operand(0).Type().DType; dt {
	case ir.F32:
		run = func(c *Ctx, out, x *tensor.Tensor, n int) error {
			return kernels.Det(c.Threads, out.F32(), x.F32(), n)
		}
	case ir.F64:
		run = func(c *Ctx, out, x *tensor.Tensor, n int) error {
			return kernels.Det(c.Threads, out.F64(), x.F64(), n)
		}
	default:
		return Compute{}, fmt.Errorf("det: no kernel for %s", dt)
	}
	dts := ewOperandDTypes(op)
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		if err := ewCheckInputs("det", in, dts); err != nil {
			return err
		}
		x := in[0]
		s := x.Shape()
		r := len(s)
		if r < 2 || s[r-2] != s[r-1] {
			return fmt.Errorf("det: operand of shape %v: the matrices are not square", s)
		}
		if err := run(c, out[0], x, s[r-1]); err != nil {
			return fmt.Errorf("det: %w", err)
		}
		return nil
	}}, nil
}

// gradDet refuses: see the file comment.
func gradDet(*GradContext) ([]*ir.Value, error) {
	return nil, errors.New("gradients of det are not implemented")
}

// Det appends the determinant of each square matrix of x's last two dims.
func Det(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("det", nil, x) }
