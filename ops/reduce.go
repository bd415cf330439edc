package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Reductions.
//
//	reduce_sum, reduce_max, reduce_min {axes, keepdim} (x)   f32 f64 i32 i64
//	reduce_prod {axes, keepdim} (x)                          f32 f64 i32 i64
//	reduce_mean {axes, keepdim} (x)                          f32 f64
//	argmax {axis, keepdim} (x) -> i64                        f32 f64 i32 i64
//
// axes lists distinct axes, negative ones counting from the end; absent or
// empty means all axes. keepdim (default false) keeps reduced axes as size
// 1. Over zero elements reduce_sum gives 0, reduce_prod 1 and reduce_mean
// NaN, while reduce_max, reduce_min and argmax fail (in Infer when the
// dims are static, else at run time), as in PyTorch. f32 sums and
// products accumulate in f64, integer products wrap; results do not
// depend on the thread count. argmax returns the first
// index of the maximum; NaN counts as the maximum.
//
// Gradients: reduce_sum broadcasts dy back over the reduced axes, and
// reduce_mean also divides it by the number of elements reduced (from the
// static dims, else at run time with the helper op reduce_grad).
// reduce_max and reduce_min send dy to the elements equal to the result,
// shared equally among ties (as PyTorch's amax/amin); where the result is
// NaN the gradient is NaN. reduce_prod sends each element dy times the
// product of the other elements of its group (see redGradProd). argmax
// passes none.

var redOps = []struct {
	name  string
	op    kernels.ReduceOp
	types ewDTypeSet
	grad  VJP
}{
	{"reduce_sum", kernels.ReduceSum, ewNumbers, redGradSum},
	{"reduce_mean", kernels.ReduceMean, ewFloats, redGradMean},
	{"reduce_max", kernels.ReduceMax, ewNumbers, redGradMaxMin},
	{"reduce_min", kernels.ReduceMin, ewNumbers, redGradMaxMin},
	{"reduce_prod", kernels.ReduceProd, ewNumbers, redGradProd},
}

func init() {
	for _, r := range redOps {
		noIdentity := r.op == kernels.ReduceMax || r.op == kernels.ReduceMin
		d := &Def{Name: r.name, Infer: redInfer(r.types, noIdentity), Compute: redBind(r.op), Grad: r.grad}
		if r.op == kernels.ReduceMean {
			d.NCHWc = nchwcSpatialMean
		}
		register(d)
	}
	register(&Def{Name: "argmax", Infer: redInferArgmax, Compute: redBindArgmax, NoGrad: true})
}

// redAxes decodes the axes attribute for an operand of type t: normalized,
// in the order given; nil axes mean every axis.
func redAxes(attrs ir.Attrs, t ir.Type) ([]int, error) {
	var axes []int
	if attrs.Has("axes") {
		var err error
		if axes, err = attrs.Ints("axes"); err != nil {
			return nil, err
		}
	}
	if len(axes) == 0 {
		all := make([]int, t.Rank())
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	seen := make([]bool, t.Rank())
	norm := make([]int, len(axes))
	for i, a := range axes {
		n, err := normAxis(a, t.Rank())
		if err != nil {
			return nil, fmt.Errorf("axes %v for %s: %v", axes, t, err)
		}
		if seen[n] {
			return nil, fmt.Errorf("axes %v for %s: axis %d is listed twice", axes, t, n)
		}
		seen[n] = true
		norm[i] = n
	}
	return norm, nil
}

// redShape is the result shape of reducing dims over axes.
func redShape(dims []int, axes []int, keepdim bool) []int {
	red := make([]bool, len(dims))
	for _, a := range axes {
		red[a] = true
	}
	out := []int{}
	for i, d := range dims {
		switch {
		case !red[i]:
			out = append(out, d)
		case keepdim:
			out = append(out, 1)
		}
	}
	return out
}

// redInfer is the Infer hook of the reductions; with noIdentity (max, min)
// a static size-0 reduced dim is an error unless the result is empty too
// (dynamic dims are checked when the executor calls it again on the
// operand's run-time shape, before the kernel runs).
func redInfer(types ewDTypeSet, noIdentity bool) func([]ir.Type, ir.Attrs) ([]ir.Type, error) {
	return func(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
		if err := wantOperands(in, 1); err != nil {
			return nil, err
		}
		if err := types.check(in[0]); err != nil {
			return nil, err
		}
		axes, err := redAxes(attrs, in[0])
		if err != nil {
			return nil, err
		}
		keepdim, err := ewOptBool(attrs, "keepdim", false)
		if err != nil {
			return nil, err
		}
		if noIdentity {
			if err := redCheckNonEmpty("", in[0].Dims, axes); err != nil {
				return nil, err
			}
		}
		return []ir.Type{ir.TensorOf(in[0].DType, redShape(in[0].Dims, axes, keepdim)...)}, nil
	}
}

// redBind returns the kernel of a reduction. Infer has checked the
// operand's shape (size-0 reduced dims of max and min included), and the
// executor allocates the result of the reduced shape.
func redBind(rop kernels.ReduceOp) func(*ir.Op) (Compute, error) {
	return func(op *ir.Op) (Compute, error) {
		xt := op.Operand(0).Type()
		axes, err := redAxes(op.Attrs, xt)
		if err != nil {
			return Compute{}, err
		}
		var reduce func(c *Ctx, out, x *tensor.Tensor) error
		switch xt.DType {
		case ir.F32:
			reduce = redRun[float32](rop, axes)
		case ir.F64:
			reduce = redRun[float64](rop, axes)
		case ir.I32:
			reduce = redRun[int32](rop, axes)
		case ir.I64:
			reduce = redRun[int64](rop, axes)
		default:
			return Compute{}, fmt.Errorf("%s: no kernel for %s", op.Name(), xt.DType)
		}
		name, dts := op.Name(), ewOperandDTypes(op)
		return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
			if err := ewCheckInputs(name, in, dts); err != nil {
				return err
			}
			if err := reduce(c, out[0], in[0]); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			return nil
		}}, nil
	}
}

// redCheckNonEmpty fails if reducing shape over axes has an output element
// but nothing to reduce into it, as PyTorch's amax, amin and argmax do.
// Dynamic dims count as nonzero: Infer checks them again at run time,
// on the operand's shape.
func redCheckNonEmpty(name string, shape, axes []int) error {
	red := make([]bool, len(shape))
	for _, a := range axes {
		red[a] = true
	}
	emptyRed, emptyKept := false, false
	for i, d := range shape {
		if d != 0 {
			continue
		}
		if red[i] {
			emptyRed = true
		} else {
			emptyKept = true
		}
	}
	if emptyRed && !emptyKept {
		if name != "" {
			name += ": "
		}
		return fmt.Errorf("%scannot reduce over a size-0 dim (axes %v of shape %s): there is no identity", name, axes, dimsString(shape))
	}
	return nil
}

func redRun[T kernels.Numeric](rop kernels.ReduceOp, axes []int) func(c *Ctx, out, x *tensor.Tensor) error {
	return func(c *Ctx, out, x *tensor.Tensor) error {
		return kernels.Reduce(rop, c.Threads, ewData[T](out), ewData[T](x), x.Shape(), axes)
	}
}

func redArgmaxAttrs(attrs ir.Attrs, t ir.Type) (axis int, keepdim bool, err error) {
	a, err := attrs.Int("axis")
	if err != nil {
		return 0, false, err
	}
	if axis, err = normAxis(int(a), t.Rank()); err != nil {
		return 0, false, fmt.Errorf("axis for %s: %v", t, err)
	}
	keepdim, err = ewOptBool(attrs, "keepdim", false)
	return axis, keepdim, err
}

func redInferArgmax(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	if err := ewNumbers.check(in[0]); err != nil {
		return nil, err
	}
	axis, keepdim, err := redArgmaxAttrs(attrs, in[0])
	if err != nil {
		return nil, err
	}
	if err := redCheckNonEmpty("", in[0].Dims, []int{axis}); err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(ir.I64, redShape(in[0].Dims, []int{axis}, keepdim)...)}, nil
}

func redBindArgmax(op *ir.Op) (Compute, error) {
	xt := op.Operand(0).Type()
	axis, _, err := redArgmaxAttrs(op.Attrs, xt)
	if err != nil {
		return Compute{}, err
	}
	var run func(c *Ctx, out, x *tensor.Tensor) error
	switch xt.DType {
	case ir.F32:
		run = redArgmaxRun[float32](axis)
	case ir.F64:
		run = redArgmaxRun[float64](axis)
	case ir.I32:
		run = redArgmaxRun[int32](axis)
	case ir.I64:
		run = redArgmaxRun[int64](axis)
	default:
		return Compute{}, fmt.Errorf("argmax: no kernel for %s", xt.DType)
	}
	dts := ewOperandDTypes(op)
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		if err := ewCheckInputs("argmax", in, dts); err != nil {
			return err
		}
		if err := run(c, out[0], in[0]); err != nil {
			return fmt.Errorf("argmax: %w", err)
		}
		return nil
	}}, nil
}

func redArgmaxRun[T kernels.Numeric](axis int) func(c *Ctx, out, x *tensor.Tensor) error {
	return func(c *Ctx, out, x *tensor.Tensor) error {
		return kernels.Argmax(c.Threads, out.I64(), ewData[T](x), x.Shape(), axis)
	}
}

// ReduceSum appends the sum of x over axes (all axes if none).
func ReduceSum(b *ir.Builder, x *ir.Value, axes []int, keepdim bool) *ir.Value {
	return b.Op1("reduce_sum", redAttrs(axes, keepdim), x)
}

// ReduceMean appends the mean of x over axes (all axes if none).
func ReduceMean(b *ir.Builder, x *ir.Value, axes []int, keepdim bool) *ir.Value {
	return b.Op1("reduce_mean", redAttrs(axes, keepdim), x)
}

// ReduceMax appends the max of x over axes (all axes if none).
func ReduceMax(b *ir.Builder, x *ir.Value, axes []int, keepdim bool) *ir.Value {
	return b.Op1("reduce_max", redAttrs(axes, keepdim), x)
}

// ReduceMin appends the min of x over axes (all axes if none).
func ReduceMin(b *ir.Builder, x *ir.Value, axes []int, keepdim bool) *ir.Value {
	return b.Op1("reduce_min", redAttrs(axes, keepdim), x)
}

// ReduceProd appends the product of x over axes (all axes if none).
func ReduceProd(b *ir.Builder, x *ir.Value, axes []int, keepdim bool) *ir.Value {
	return b.Op1("reduce_prod", redAttrs(axes, keepdim), x)
}

func redAttrs(axes []int, keepdim bool) ir.Attrs {
	if axes == nil {
		axes = []int{}
	}
	return ir.A("axes", axes, "keepdim", keepdim)
}

// Argmax appends the index (i64) of the first maximum of x along axis.
func Argmax(b *ir.Builder, x *ir.Value, axis int, keepdim bool) *ir.Value {
	return b.Op1("argmax", ir.A("axis", axis, "keepdim", keepdim), x)
}

// redGradSum broadcasts dy back over the reduced axes.
func redGradSum(g *GradContext) ([]*ir.Value, error) { return redGradBroadcast(g, false) }

// redGradMean broadcasts dy/count back over the reduced axes.
func redGradMean(g *GradContext) ([]*ir.Value, error) { return redGradBroadcast(g, true) }

// redGradAttrs decodes the forward op's axes and keepdim.
func redGradAttrs(g *GradContext) (axes []int, keepdim bool, err error) {
	if axes, err = redAxes(g.Op.Attrs, g.Op.Operand(0).Type()); err != nil {
		return nil, false, err
	}
	keepdim, err = ewOptBool(g.Op.Attrs, "keepdim", false)
	return axes, keepdim, err
}

// redGradBroadcast is dy (divided by the number of elements reduced, if
// mean) broadcast to the operand's shape. With static reduced dims it is
// an expand of dy, which keeps nothing of the forward pass alive;
// otherwise reduce_grad reads the operand's shape at run time.
func redGradBroadcast(g *GradContext, mean bool) ([]*ir.Value, error) {
	dy := g.DY[0]
	xt := g.Op.Operand(0).Type()
	axes, keepdim, err := redGradAttrs(g)
	if err != nil {
		return nil, err
	}
	if len(axes) == 0 { // a scalar: nothing is reduced
		return []*ir.Value{dy}, nil
	}
	count, static, ones := 1, true, true
	for _, a := range axes {
		d := xt.Dims[a]
		static = static && d != ir.Dynamic
		ones = ones && d == 1
		count *= d
	}
	if !static {
		return []*ir.Value{g.B.Op1("reduce_grad", ir.A("axes", axes, "keepdim", keepdim, "mean", mean), dy, g.X(0))}, nil
	}
	if mean && count > 1 {
		dy = Scale(g.B, dy, 1/float64(count), 0)
	}
	if !keepdim {
		dy = Unsqueeze(g.B, dy, axes...)
	}
	if ones {
		return []*ir.Value{dy}, nil
	}
	shape := make([]int, xt.Rank())
	for i := range shape {
		shape[i] = -1
	}
	for _, a := range axes {
		shape[a] = xt.Dims[a]
	}
	return []*ir.Value{Expand(g.B, dy, shape...)}, nil
}

// redGradMaxMin sends dy to the elements equal to the result, divided by
// how many there are in their group.
func redGradMaxMin(g *GradContext) ([]*ir.Value, error) {
	axes, keepdim, err := redGradAttrs(g)
	if err != nil {
		return nil, err
	}
	dy := g.DY[0]
	if len(axes) == 0 {
		return []*ir.Value{dy}, nil
	}
	y := g.Y(0)
	if !keepdim {
		y = Unsqueeze(g.B, y, axes...)
		dy = Unsqueeze(g.B, dy, axes...)
	}
	hit := Cast(g.B, Equal(g.B, g.X(0), y), dy.Type().DType)
	count := ReduceSum(g.B, hit, axes, true)
	return []*ir.Value{Multiply(g.B, hit, Divide(g.B, dy, count))}, nil
}

// redGradProd sends each element dy times the product of the other
// elements of its group. Without zeros in the group that is y/x; with one
// zero, the zero gets the product of the rest and every other element 0;
// with more, all get 0. It is built from the product p of the group with
// its zeros replaced by 1: p/x where the group has no zero, p at its only
// zero, 0 elsewhere. (Like PyTorch's rule it divides, so a product that
// underflows to 0 without a zero factor gives 0 gradients.)
func redGradProd(g *GradContext) ([]*ir.Value, error) {
	axes, keepdim, err := redGradAttrs(g)
	if err != nil {
		return nil, err
	}
	dy := g.DY[0]
	if len(axes) == 0 {
		return []*ir.Value{dy}, nil
	}
	b, x := g.B, g.X(0)
	dt := dy.Type().DType
	zero, one := Full(b, dt, 0), Full(b, dt, 1)
	if !keepdim {
		dy = Unsqueeze(b, dy, axes...)
	}
	isZero := Equal(b, x, zero)
	safe := Where(b, isZero, one, x) // x with its zeros as 1
	p := ReduceProd(b, safe, axes, true)
	zeros := ReduceSum(b, Cast(b, isZero, dt), axes, true)
	others := Where(b, isZero, p, Divide(b, p, safe))
	flows := LogicalOr(b, Equal(b, zeros, zero), LogicalAnd(b, Equal(b, zeros, one), isZero))
	return []*ir.Value{Where(b, flows, Multiply(b, dy, others), zero)}, nil
}
