package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Softmax along an axis.
//
//	softmax     {axis} (x) -> y   y = exp(x − max) / Σ exp(x − max)
//	log_softmax {axis} (x) -> y   y = x − max − log Σ exp(x − max)
//
// x is f32 or f64, of any rank (a scalar is one element along axis 0 or
// −1); axis defaults to −1 and may be negative. Numerically stable: the
// maximum along the axis is subtracted first, and sums are taken in
// float64. A line of all −Inf gives NaN, as in PyTorch.
//
// Their gradients are helper ops that read only the output y:
//
//	softmax_grad     {axis} (y, dy) -> dx   dx = y·(dy − Σ dy·y)
//	log_softmax_grad {axis} (y, dy) -> dx   dx = dy − exp(y)·Σ dy
//
// with the sums along axis, in float64; y and dy have the same shape and
// dtype.

func init() {
	register(&Def{Name: "softmax", Infer: inferSoftmax, Compute: bindSoftmax(false), Grad: nnGradSoftmax("softmax_grad")})
	register(&Def{Name: "log_softmax", Infer: inferSoftmax, Compute: bindSoftmax(true), Grad: nnGradSoftmax("log_softmax_grad")})
	register(&Def{Name: "softmax_grad", Grad: noSecondOrder, Infer: nnInferSoftmaxGrad, Compute: nnBindSoftmaxGrad(false)})
	register(&Def{Name: "log_softmax_grad", Grad: noSecondOrder, Infer: nnInferSoftmaxGrad, Compute: nnBindSoftmaxGrad(true)})
}

// nnAxis normalises the axis attribute (default −1) for x; a scalar
// accepts 0 and −1 and is treated as one element.
func nnAxis(attrs ir.Attrs, x ir.Type) (int, error) {
	axis, err := nnInt(attrs, "axis", -1)
	if err != nil {
		return 0, err
	}
	if x.Rank() == 0 && (axis == 0 || axis == -1) {
		return 0, nil
	}
	a, err := normAxis(axis, x.Rank())
	if err != nil {
		return 0, fmt.Errorf("axis %d is out of range for x %s", axis, x)
	}
	return a, nil
}

// nnSplitAxis views shape as outer×n×inner around axis (a scalar is 1×1×1).
func nnSplitAxis(shape []int, axis int) (outer, n, inner int) {
	if len(shape) == 0 {
		return 1, 1, 1
	}
	return nnProd(shape[:axis]), shape[axis], nnProd(shape[axis+1:])
}

func inferSoftmax(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	if err := nnWantFloat("x", in[0]); err != nil {
		return nil, err
	}
	if _, err := nnAxis(attrs, in[0]); err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(in[0].DType, in[0].Dims...)}, nil
}

func bindSoftmax(log bool) func(*ir.Op) (Compute, error) {
	return func(op *ir.Op) (Compute, error) {
		axis, err := nnAxis(op.Attrs, op.Operand(0).Type())
		if err != nil {
			return Compute{}, err
		}
		return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
			x, y := in[0], out[0]
			outer, n, inner := nnSplitAxis(x.Shape(), axis)
			th := nnThreads(c)
			switch {
			case x.DType() == tensor.F32 && log:
				kernels.LogSoftmax(x.F32(), y.F32(), outer, n, inner, th)
			case x.DType() == tensor.F32:
				kernels.Softmax(x.F32(), y.F32(), outer, n, inner, th)
			case log:
				kernels.LogSoftmax(x.F64(), y.F64(), outer, n, inner, th)
			default:
				kernels.Softmax(x.F64(), y.F64(), outer, n, inner, th)
			}
			return nil
		}}, nil
	}
}

// Softmax appends the softmax of x along axis.
func Softmax(b *ir.Builder, x *ir.Value, axis int) *ir.Value {
	return b.Op1("softmax", ir.A("axis", axis), x)
}

// LogSoftmax appends the log-softmax of x along axis.
func LogSoftmax(b *ir.Builder, x *ir.Value, axis int) *ir.Value {
	return b.Op1("log_softmax", ir.A("axis", axis), x)
}

// nnGradSoftmax returns the rule of softmax or log_softmax: the helper op
// on the forward output.
func nnGradSoftmax(helper string) VJP {
	return func(g *GradContext) ([]*ir.Value, error) {
		if !g.Need(0) {
			return []*ir.Value{nil}, nil
		}
		axis, err := nnInt(g.Op.Attrs, "axis", -1)
		if err != nil {
			return nil, err
		}
		return []*ir.Value{g.B.Op1(helper, ir.A("axis", axis), g.Y(0), g.DY[0])}, nil
	}
}

func nnInferSoftmaxGrad(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 2); err != nil {
		return nil, err
	}
	y, dy := in[0], in[1]
	if err := nnWantFloat("y", y); err != nil {
		return nil, err
	}
	if _, err := nnAxis(attrs, y); err != nil {
		return nil, err
	}
	j, ok := nnMatchShape(y, dy)
	if !ok {
		return nil, fmt.Errorf("dy %s must have the shape and dtype of y %s", dy, y)
	}
	return []ir.Type{j}, nil
}

// nnBindSoftmaxGrad returns the kernel of softmax_grad or
// log_softmax_grad: Infer has checked that y and dy have one shape.
func nnBindSoftmaxGrad(log bool) func(*ir.Op) (Compute, error) {
	return func(op *ir.Op) (Compute, error) {
		axis, err := nnAxis(op.Attrs, op.Operand(0).Type())
		if err != nil {
			return Compute{}, err
		}
		return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
			y, dy, dx := in[0], in[1], out[0]
			outer, n, inner := nnSplitAxis(y.Shape(), axis)
			th := nnThreads(c)
			switch {
			case y.DType() == tensor.F32 && log:
				kernels.LogSoftmaxGrad(y.F32(), dy.F32(), dx.F32(), outer, n, inner, th)
			case y.DType() == tensor.F32:
				kernels.SoftmaxGrad(y.F32(), dy.F32(), dx.F32(), outer, n, inner, th)
			case log:
				kernels.LogSoftmaxGrad(y.F64(), dy.F64(), dx.F64(), outer, n, inner, th)
			default:
				kernels.SoftmaxGrad(y.F64(), dy.F64(), dx.F64(), outer, n, inner, th)
			}
			return nil
		}}, nil
	}
}
