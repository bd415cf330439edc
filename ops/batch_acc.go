package ops

import (
	"errors"
	"fmt"
	"slices"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Sums over a batch added into a running sum: what remat's split over the
// batch (docs/memory.md) runs for every piece after the first, so that
// pieces of several BatchGroup groups give the whole batch's bits:
//
//	conv2d_grad_filter_acc {strides, paddings, dilations, groups} (acc, dy, x) -> acc + conv2d_grad_filter(dy, x)
//	reduce_sum_to_acc (acc, x) -> acc + reduce_sum_to(x) to acc's shape
//
// The kernels add each group's partial sum into acc one after the other,
// in the order the plain op adds them (kernels.Conv2DGradFilterInto,
// kernels.ReduceSumBatchInto). The result takes over acc's buffer when
// acc dies there (the running sum always does), else starts from a copy.
// They come after autodiff: their Grad says so.

func init() {
	register(&Def{Name: "conv2d_grad_filter_acc", Infer: inferConvGradFilterAcc, Compute: bindConvGradFilterAcc, Grad: accNoGrad, Flops: accConvFlops})
	register(&Def{Name: "reduce_sum_to_acc", Infer: inferReduceSumToAcc, Compute: bindReduceSumToAcc, Grad: accNoGrad})
}

// errAccGrad: the accumulating sums are made by rematerialization, after
// the gradient program was built.
var errAccGrad = errors.New("not implemented: the gradient of a running sum over a batch (remat makes these after autodiff)")

func accNoGrad(*GradContext) ([]*ir.Value, error) { return nil, errAccGrad }

func inferConvGradFilterAcc(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if len(in) != 3 {
		return nil, fmt.Errorf("takes 3 operands (acc, dy, x), got %d", len(in))
	}
	if attrs.Has("filter_size") {
		return nil, fmt.Errorf("takes no filter_size: the filter is acc's shape")
	}
	out, err := nnInferConvGrad(false)([]ir.Type{in[1], in[2], in[0]}, attrs)
	if err != nil {
		return nil, err
	}
	if err := accSameType(in[0], out[0]); err != nil {
		return nil, err
	}
	return []ir.Type{in[0]}, nil
}

// accSameType checks that acc has the sum's type, dynamic dims aside.
func accSameType(acc, sum ir.Type) error {
	if acc.DType != sum.DType || acc.Rank() != sum.Rank() {
		return fmt.Errorf("acc %s does not hold a sum of type %s", acc, sum)
	}
	for i, d := range acc.Dims {
		if d != ir.Dynamic && sum.Dims[i] != ir.Dynamic && d != sum.Dims[i] {
			return fmt.Errorf("acc %s does not hold a sum of type %s", acc, sum)
		}
	}
	return nil
}

// accStart makes y hold acc's values (a no-op when y took acc's buffer).
func accStart(c *Ctx, y, acc *tensor.Tensor) {
	if y != acc {
		kernels.CopyInto(y.Raw(), acc.Raw(), c.Threads)
	}
}

func bindConvGradFilterAcc(op *ir.Op) (Compute, error) {
	a, err := nnConvDecode(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	dt := op.Operand(0).Type().DType
	f32 := dt == ir.F32
	return Compute{
		Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
			acc, dy, x, y := in[0], in[1], in[2], out[0]
			if !slices.Equal(acc.Shape(), y.Shape()) {
				return fmt.Errorf("conv2d_grad_filter_acc: acc has shape %v, the sum %v", acc.Shape(), y.Shape())
			}
			p, th := nnConvGradParams(false, a, x.Shape(), y.Shape()), nnThreads(c)
			n := kernels.Conv2DGradFilterIntoWorkspaceFor(p, th, f32)
			accStart(c, y, acc)
			switch dt {
			case ir.F32:
				kernels.Conv2DGradFilterInto(p, dy.F32(), x.F32(), y.F32(), Scratch[float32](c, n), th)
			case ir.F64:
				kernels.Conv2DGradFilterInto(p, dy.F64(), x.F64(), y.F64(), Scratch[float64](c, n), th)
			default:
				return fmt.Errorf("conv2d_grad_filter_acc: no kernel for %s", dt)
			}
			return nil
		},
		Work: func(shapes [][]int, threads int) int64 {
			if len(shapes) != 3 || len(shapes[0]) != 4 || len(shapes[2]) != 4 {
				return 0
			}
			p := nnConvGradParams(false, a, shapes[2], shapes[0])
			return nnConvWorkBytes(kernels.Conv2DGradFilterIntoWorkspaceFor(p, max(threads, 1), f32), dt)
		},
		InPlace: [][]int{{0}},
	}, nil
}

// accConvFlops is conv2d_grad_filter's work: 2·C/groups·KH·KW per element
// of dy (operand 1) and the add into acc.
func accConvFlops(_ *ir.Op, in, out []ir.Type) int64 {
	if len(in) != 3 || !in[1].IsStatic() || !in[0].IsStatic() || in[0].Rank() != 4 || in[0].Dims[0] == 0 {
		return elements(in) + elements(out)
	}
	return 2*int64(in[0].NumElements()/in[0].Dims[0])*int64(in[1].NumElements()) + int64(in[0].NumElements())
}

func inferReduceSumToAcc(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if len(in) != 2 {
		return nil, fmt.Errorf("takes 2 operands (acc, x), got %d", len(in))
	}
	out, err := inferReduceSumTo([]ir.Type{in[1], in[0]}, attrs)
	if err != nil {
		return nil, err
	}
	if acc, x := in[0], in[1]; x.Rank() == 0 || acc.Rank() == x.Rank() && acc.Dims[0] != 1 {
		return nil, fmt.Errorf("acc %s does not sum away axis 0 of %s", acc, x)
	}
	if err := accSameType(in[0], out[0]); err != nil {
		return nil, err
	}
	return []ir.Type{in[0]}, nil
}

func bindReduceSumToAcc(op *ir.Op) (Compute, error) {
	size := int(op.Operand(0).Type().DType.Size())
	return Compute{
		Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
			acc, x, y := in[0], in[1], out[0]
			axes, err := sumToAxes(x.Shape(), acc.Shape())
			if err != nil {
				return fmt.Errorf("reduce_sum_to_acc: %w", err)
			}
			accStart(c, y, acc)
			if len(axes) == 0 || axes[0] != 0 {
				// Axis 0 is kept only when it has size 1 in both.
				if x.Rank() == 0 || x.Shape()[0] != 1 {
					return fmt.Errorf("reduce_sum_to_acc: %v does not sum away axis 0 of %v", acc.Shape(), x.Shape())
				}
				axes = append([]int{0}, axes...)
			}
			switch x.DType() {
			case tensor.F32:
				return kernels.ReduceSumBatchInto(c.Threads, y.F32(), Scratch[float32](c, y.Len()), x.F32(), x.Shape(), axes)
			case tensor.F64:
				return kernels.ReduceSumBatchInto(c.Threads, y.F64(), Scratch[float64](c, y.Len()), x.F64(), x.Shape(), axes)
			}
			return fmt.Errorf("reduce_sum_to_acc: no kernel for %s", x.Type())
		},
		Work: func(shapes [][]int, _ int) int64 {
			n := 1
			for _, d := range shapes[0] {
				n *= d
			}
			return int64(n * size)
		},
		InPlace: [][]int{{0}},
	}, nil
}
