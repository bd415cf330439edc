package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Reductions over axes read at run time (the static reductions in
// reduce.go take them as an attribute).
//
//	reduce_sum_dyn, reduce_max_dyn, reduce_min_dyn {keepdim?, noop_with_empty_axes?} (x, axes)  f32 f64 i32 i64
//	reduce_mean_dyn {keepdim?, noop_with_empty_axes?} (x, axes)                                 f32 f64
//
// axes is a 1-D i32 or i64 operand of static length (the result's rank
// comes from it) listing distinct axes, negative ones counting from the
// end. Empty axes mean every axis, or with noop_with_empty_axes (default
// false) no reduction at all: the result is x. keepdim (default false)
// keeps reduced axes as size 1. The results are those of the static
// reductions over the same axes. Which dims are reduced is known only at
// run time, so a result dim is static only when every choice of axes
// gives it the same size.
//
// Gradients are those of the static reductions: dy broadcast back over
// the reduced axes (and divided by the number of elements reduced for the
// mean), or sent to the elements equal to the result for max and min,
// shared equally among ties. The axes get none.

var dynRedOps = []struct {
	name  string
	op    kernels.ReduceOp
	types ewDTypeSet
	grad  VJP
}{
	{"reduce_sum_dyn", kernels.ReduceSum, ewNumbers, dynGradReduceSum},
	{"reduce_mean_dyn", kernels.ReduceMean, ewFloats, dynGradReduceMean},
	{"reduce_max_dyn", kernels.ReduceMax, ewNumbers, dynGradReduceMaxMin},
	{"reduce_min_dyn", kernels.ReduceMin, ewNumbers, dynGradReduceMaxMin},
}

func init() {
	for _, r := range dynRedOps {
		register(&Def{Name: r.name, Infer: dynRedInfer(r.types), Bind: dynRedBind(r.op), Grad: r.grad})
	}
}

// dynRedAttrs decodes keepdim and noop_with_empty_axes.
func dynRedAttrs(attrs ir.Attrs) (keepdim, noop bool, err error) {
	if keepdim, err = ewOptBool(attrs, "keepdim", false); err != nil {
		return false, false, err
	}
	noop, err = ewOptBool(attrs, "noop_with_empty_axes", false)
	return keepdim, noop, err
}

// dynAllAxes lists the axes of a rank-r tensor.
func dynAllAxes(r int) []int {
	all := make([]int, r)
	for i := range all {
		all[i] = i
	}
	return all
}

func dynRedInfer(types ewDTypeSet) func([]ir.Type, ir.Attrs) ([]ir.Type, error) {
	return func(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
		if err := wantOperands(in, 2); err != nil {
			return nil, err
		}
		if err := types.check(in[0]); err != nil {
			return nil, err
		}
		k, err := dynVector("axes", in[1])
		if err != nil {
			return nil, err
		}
		keepdim, noop, err := dynRedAttrs(attrs)
		if err != nil {
			return nil, err
		}
		x := in[0]
		r := x.Rank()
		switch {
		case k == 0 && noop:
			return []ir.Type{x}, nil
		case k == 0:
			return []ir.Type{ir.TensorOf(x.DType, redShape(x.Dims, dynAllAxes(r), keepdim)...)}, nil
		case k > r:
			return nil, fmt.Errorf("axes %s lists more axes than %s has", in[1], x)
		}
		rank := r - k
		if keepdim {
			rank = r
		}
		out := dynMerge(rank, r, dynAllAxes(r), k, func(chosen []bool) []int {
			var axes []int
			for i, c := range chosen {
				if c {
					axes = append(axes, i)
				}
			}
			return redShape(x.Dims, axes, keepdim)
		})
		return []ir.Type{ir.TensorOf(x.DType, out...)}, nil
	}
}

func dynRedBind(rop kernels.ReduceOp) func(*ir.Op) (Kernel, error) {
	return func(op *ir.Op) (Kernel, error) {
		keepdim, noop, err := dynRedAttrs(op.Attrs)
		if err != nil {
			return nil, err
		}
		name, dt := op.Name(), op.Result(0).Type().DType
		return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
			x := in[0]
			axes := dynInts(in[1])
			if len(axes) == 0 {
				if noop {
					return c.Result(x.Retain()), nil
				}
				axes = dynAllAxes(x.Rank())
			}
			axes, err := shpAxes("axes", axes, x.Rank())
			if err != nil {
				return nil, fmt.Errorf("%s of %s: %w", name, x.Type(), err)
			}
			if rop == kernels.ReduceMax || rop == kernels.ReduceMin {
				if err := redCheckNonEmpty(name, x.Shape(), axes); err != nil {
					return nil, err
				}
			}
			out, err := c.New(dt, redShape(x.Shape(), axes, keepdim))
			if err != nil {
				return nil, err
			}
			switch dt {
			case ir.F32:
				err = kernels.Reduce(rop, c.Threads, out.F32(), x.F32(), x.Shape(), axes)
			case ir.F64:
				err = kernels.Reduce(rop, c.Threads, out.F64(), x.F64(), x.Shape(), axes)
			case ir.I32:
				err = kernels.Reduce(rop, c.Threads, out.I32(), x.I32(), x.Shape(), axes)
			case ir.I64:
				err = kernels.Reduce(rop, c.Threads, out.I64(), x.I64(), x.Shape(), axes)
			}
			if err != nil {
				out.Release()
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			return []*tensor.Tensor{out}, nil
		}, nil
	}
}

// ReduceDyn appends the reduction name ("reduce_sum_dyn", ...) of x over
// the axes held by the 1-D operand axes.
func ReduceDyn(b *ir.Builder, name string, x, axes *ir.Value, keepdim, noopWithEmptyAxes bool) *ir.Value {
	return b.Op1(name, ir.A("keepdim", keepdim, "noop_with_empty_axes", noopWithEmptyAxes), x, axes)
}

// dynRedKeep returns v, a value of the reduced shape of g's op, with the
// reduced axes back as size-1 dims, and false when the op reduces nothing
// (empty axes with noop_with_empty_axes).
func dynRedKeep(g *GradContext, v *ir.Value) (*ir.Value, bool, error) {
	keepdim, noop, err := dynRedAttrs(g.Op.Attrs)
	if err != nil {
		return nil, false, err
	}
	r := g.Op.Operand(0).Type().Rank()
	switch k := g.Op.Operand(1).Type().Dims[0]; {
	case k == 0 && noop:
		return v, false, nil
	case keepdim:
		return v, true, nil
	case k == 0:
		ones := make([]int, r)
		for i := range ones {
			ones[i] = 1
		}
		return Reshape(g.B, v, ones...), true, nil
	}
	return UnsqueezeDyn(g.B, v, g.X(1)), true, nil
}

// dynGradReduceSum broadcasts dy back over the reduced axes.
func dynGradReduceSum(g *GradContext) ([]*ir.Value, error) {
	return dynGradReduceBroadcast(g, false)
}

// dynGradReduceMean broadcasts dy back over the reduced axes, divided by
// the number of elements each result element reduces.
func dynGradReduceMean(g *GradContext) ([]*ir.Value, error) {
	return dynGradReduceBroadcast(g, true)
}

func dynGradReduceBroadcast(g *GradContext, mean bool) ([]*ir.Value, error) {
	dy := g.DY[0]
	dyk, reduces, err := dynRedKeep(g, dy)
	switch {
	case err != nil:
		return nil, err
	case !reduces:
		return []*ir.Value{dy, nil}, nil
	}
	// dy broadcast to x's shape: from its static type when it has one,
	// so that nothing is kept from the forward pass.
	dt, xt := dy.Type().DType, g.Op.Operand(0).Type()
	var zeros, size *ir.Value
	if xt.IsStatic() {
		zeros, size = Full(g.B, dt, 0, xt.Dims...), Full(g.B, dt, float64(xt.NumElements()))
	} else {
		x := g.X(0)
		zeros, size = FullLike(g.B, x, 0, ir.InvalidDType), Cast(g.B, Size(g.B, x), dt)
	}
	dx := Add(g.B, zeros, dyk)
	if mean {
		dx = Divide(g.B, dx, Divide(g.B, size, Cast(g.B, Size(g.B, dy), dt)))
	}
	return []*ir.Value{dx, nil}, nil
}

// dynGradReduceMaxMin sends dy to the elements equal to the result,
// divided by how many there are in their group.
func dynGradReduceMaxMin(g *GradContext) ([]*ir.Value, error) {
	dy := g.DY[0]
	dyk, reduces, err := dynRedKeep(g, dy)
	switch {
	case err != nil:
		return nil, err
	case !reduces:
		return []*ir.Value{dy, nil}, nil
	}
	yk, _, err := dynRedKeep(g, g.Y(0))
	if err != nil {
		return nil, err
	}
	hit := Cast(g.B, Equal(g.B, g.X(0), yk), dy.Type().DType)
	count := ReduceDyn(g.B, "reduce_sum_dyn", hit, g.X(1), true, false)
	return []*ir.Value{Multiply(g.B, hit, Divide(g.B, dyk, count)), nil}, nil
}
