package ops

import (
	"fmt"
	"math"
	"slices"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Shape ops whose shape, axes or bounds are operands read at run time,
// for programs that compute shapes (ONNX models do). The static ops in
// shape.go and arange.go take the same information as attributes.
//
//	shape (x)                                   -> i64 [rank(x)]: the dims of x
//	size (x)                                    -> i64 scalar: the element count of x
//	reshape_dyn {allowzero?, dims?} (x, shape)  -> view of x in shape: one -1 is inferred and a 0
//	                                               copies x's dim at that position (a literal 0
//	                                               with allowzero true)
//	squeeze_dyn (x, axes)                       -> view of x without the listed size-1 dims
//	unsqueeze_dyn (x, axes)                     -> view of x with size-1 dims at the listed result positions
//	expand_dyn {dims?} (x, shape)               -> copy of x broadcast with shape both ways (numpy
//	                                               rules; a 1 in shape keeps x's dim)
//	constant_of_shape {value, dtype, dims?} (shape) -> a tensor of that shape filled with value
//	range (start, limit, delta)                 -> 1-D start, start+delta, ... while before limit
//
// Shapes and axes are 1-D i32 or i64 operands of static length, since the
// result's rank comes from it; axes may be negative and must be distinct.
// range's operands are scalars of one dtype (f32, f64, i32 or i64), which
// is the result's; its length is max(0, ceil((limit-start)/delta)), and
// element i is start + i*delta (computed in float64 for floats).
//
// Only ranks are known when the program is built, so result dims are
// mostly dynamic: a dim of squeeze_dyn's or unsqueeze_dyn's result is
// static when every choice of axes gives it the same size, one of
// expand_dyn's when x's dim there is static and not 1. The optional dims
// attribute lists the result dims the builder knows (-1 where it does
// not), such as an importer that sees a reshape to [batch, 784]: Infer
// puts them in the result type and the kernel checks them at run time.
//
// shape and size write into results the executor allocates (Compute):
// their shapes follow from x's rank. The others read their result's shape
// from operand values, so their kernels allocate it (Bind).
//
// Gradients: the views map dy back to x's shape (reshape_like when x's is
// dynamic), expand_dyn sums dy back to x (reduce_sum_to). shape, size
// and constant_of_shape pass none (NoGrad); range refuses to be
// differentiated with respect to float bounds.

func init() {
	register(&Def{Name: "shape", Infer: dynInferShape, Compute: dynComputeShape, NoGrad: true})
	register(&Def{Name: "size", Infer: dynInferSize, Compute: dynComputeSize, NoGrad: true})
	register(&Def{Name: "reshape_dyn", Infer: dynInferReshape, Bind: dynBindReshape, Grad: dynGradView})
	register(&Def{Name: "squeeze_dyn", Infer: dynInferSqueeze, Bind: dynBindSqueeze, Grad: dynGradView})
	register(&Def{Name: "unsqueeze_dyn", Infer: dynInferUnsqueeze, Bind: dynBindUnsqueeze, Grad: dynGradView})
	register(&Def{Name: "expand_dyn", Infer: dynInferExpand, Bind: dynBindExpand, Grad: dynGradExpand})
	register(&Def{Name: "constant_of_shape", Infer: dynInferConstantOfShape, Bind: dynBindConstantOfShape, NoGrad: true})
	register(&Def{Name: "range", Infer: dynInferRange, Bind: dynBindRange, Grad: dynGradRange})
}

// ---- helpers shared by the ops with run-time shapes (dyn_*.go, tile.go) ----

// dynVector checks that operand t, called what, is a 1-D i32 or i64
// tensor of static length, and returns the length.
func dynVector(what string, t ir.Type) (int, error) {
	if !t.DType.IsInt() || t.Rank() != 1 {
		return 0, fmt.Errorf("%s %s must be a 1-D i32 or i64 tensor", what, t)
	}
	if t.Dims[0] == ir.Dynamic {
		return 0, fmt.Errorf("%s %s must have a static length: the result's rank comes from it", what, t)
	}
	return t.Dims[0], nil
}

// dynInts reads the elements of an i32 or i64 tensor as ints.
func dynInts(t *tensor.Tensor) []int {
	out := make([]int, t.Len())
	if t.DType() == tensor.I32 {
		for i, v := range t.I32() {
			out[i] = int(v)
		}
		return out
	}
	for i, v := range t.I64() {
		out[i] = int(v)
	}
	return out
}

// dynRefine puts the dims attribute, when present, into the inferred dims.
func dynRefine(attrs ir.Attrs, dims []int) ([]int, error) {
	if !attrs.Has("dims") {
		return dims, nil
	}
	known, err := attrs.Ints("dims")
	if err != nil {
		return nil, err
	}
	if len(known) != len(dims) {
		return nil, fmt.Errorf("dims %v has %d entries for a result of rank %d", known, len(known), len(dims))
	}
	out := slices.Clone(dims)
	for i, k := range known {
		switch {
		case k == ir.Dynamic:
		case k < 0:
			return nil, fmt.Errorf("dims %v: entries must be sizes >= 0 or -1 (unknown)", known)
		case out[i] == ir.Dynamic:
			out[i] = k
		case out[i] != k:
			return nil, fmt.Errorf("dims %v contradicts the result dims %s", known, dimsString(dims))
		}
	}
	return out, nil
}

// dynCheck reports a run-time result shape that the result type, which
// holds the dims attribute, does not allow.
func dynCheck(shape []int, t ir.Type) error {
	ok := len(shape) == t.Rank()
	for i := 0; ok && i < len(shape); i++ {
		ok = t.Dims[i] == ir.Dynamic || t.Dims[i] == shape[i]
	}
	if !ok {
		return fmt.Errorf("the result shape %v differs from the declared %s", shape, dimsString(t.Dims))
	}
	return nil
}

// dynChoiceLimit bounds the choices dynMerge looks at.
const dynChoiceLimit = 1 << 12

// dynMerge returns the result dims common to every way of choosing k of
// the positions cand, where dimsOf gives the result dims of one choice (a
// mask over positions 0..n-1); dims that differ between choices are
// dynamic, and so is every dim past dynChoiceLimit choices. rank is the
// result rank, cand has at least k entries.
func dynMerge(rank, n int, cand []int, k int, dimsOf func(chosen []bool) []int) []int {
	out := make([]int, rank)
	for i := range out {
		out[i] = ir.Dynamic
	}
	if dynChoices(len(cand), k) > dynChoiceLimit {
		return out
	}
	pick := make([]int, k) // indices into cand, increasing
	for i := range pick {
		pick[i] = i
	}
	first := true
	for {
		chosen := make([]bool, n)
		for _, p := range pick {
			chosen[cand[p]] = true
		}
		dims := dimsOf(chosen)
		for i, d := range dims {
			if first {
				out[i] = d
			} else if out[i] != d {
				out[i] = ir.Dynamic
			}
		}
		first = false
		// The next choice in lexicographic order.
		i := k - 1
		for i >= 0 && pick[i] == len(cand)-k+i {
			i--
		}
		if i < 0 {
			return out
		}
		pick[i]++
		for j := i + 1; j < k; j++ {
			pick[j] = pick[j-1] + 1
		}
	}
}

// dynChoices is the binomial coefficient C(n, k), saturating past
// dynChoiceLimit.
func dynChoices(n, k int) int {
	c := 1
	for i := range k {
		c = c * (n - i) / (i + 1)
		if c > dynChoiceLimit {
			return dynChoiceLimit + 1
		}
	}
	return c
}

// dynAllDynamic is n dynamic dims.
func dynAllDynamic(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = ir.Dynamic
	}
	return out
}

// ---- shape, size ----

func dynInferShape(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(ir.I64, in[0].Rank())}, nil
}

func dynComputeShape(op *ir.Op) (Compute, error) {
	return Compute{Fn: func(_ *Ctx, in, out []*tensor.Tensor) error {
		y := out[0].I64()
		for i, d := range in[0].Shape() {
			y[i] = int64(d)
		}
		return nil
	}}, nil
}

// Shape appends the run-time dims of x as a 1-D i64 tensor.
func Shape(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("shape", nil, x) }

func dynInferSize(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	return []ir.Type{ir.Scalar(ir.I64)}, nil
}

func dynComputeSize(op *ir.Op) (Compute, error) {
	return Compute{Fn: func(_ *Ctx, in, out []*tensor.Tensor) error {
		out[0].I64()[0] = int64(in[0].Len())
		return nil
	}}, nil
}

// Size appends the run-time element count of x as an i64 scalar.
func Size(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("size", nil, x) }

// ---- reshape_dyn ----

func dynInferReshape(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 2); err != nil {
		return nil, err
	}
	n, err := dynVector("shape", in[1])
	if err != nil {
		return nil, err
	}
	if _, err := ewOptBool(attrs, "allowzero", false); err != nil {
		return nil, err
	}
	dims, err := dynRefine(attrs, dynAllDynamic(n))
	if err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(in[0].DType, dims...)}, nil
}

// dynReshapeDims applies the ONNX rules to spec for input dims: a 0 copies
// the input dim at its position unless allowZero; then shpReshapeDims
// infers the -1 and checks the element count.
func dynReshapeDims(in, spec []int, allowZero bool) ([]int, error) {
	if !allowZero {
		spec = slices.Clone(spec)
		for i, d := range spec {
			if d != 0 {
				continue
			}
			if i >= len(in) {
				return nil, fmt.Errorf("shape %v copies dim %d (a 0) of %s, which has rank %d", spec, i, dimsString(in), len(in))
			}
			spec[i] = in[i]
		}
	}
	return shpReshapeDims(in, spec)
}

func dynBindReshape(op *ir.Op) (Kernel, error) {
	allowZero, err := ewOptBool(op.Attrs, "allowzero", false)
	if err != nil {
		return nil, err
	}
	rt := op.Result(0).Type()
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		out, err := dynReshapeDims(in[0].Shape(), dynInts(in[1]), allowZero)
		if err == nil {
			err = dynCheck(out, rt)
		}
		if err != nil {
			return nil, fmt.Errorf("cannot reshape %s: %w", in[0].Type(), err)
		}
		return shpView(in[0], out)
	}, nil
}

// ReshapeDyn returns a view of x in the shape held by the 1-D operand
// shape, with ONNX's rules: one -1 is inferred, a 0 copies x's dim unless
// allowZero. dims, when not nil, are the result dims the caller knows (-1
// for unknown); they are checked at run time.
func ReshapeDyn(b *ir.Builder, x, shape *ir.Value, allowZero bool, dims []int) *ir.Value {
	kv := []any{"allowzero", allowZero}
	if dims != nil {
		kv = append(kv, "dims", dims)
	}
	return b.Op1("reshape_dyn", ir.A(kv...), x, shape)
}

// dynGradView views dy in the shape of operand 0 (reshape_dyn,
// squeeze_dyn, unsqueeze_dyn); the shape or axes operand gets none.
func dynGradView(g *GradContext) ([]*ir.Value, error) {
	return []*ir.Value{shpReshapeBack(g, g.DY[0], 0), nil}, nil
}

// ---- squeeze_dyn, unsqueeze_dyn ----

func dynInferSqueeze(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 2); err != nil {
		return nil, err
	}
	k, err := dynVector("axes", in[1])
	if err != nil {
		return nil, err
	}
	dims := in[0].Dims
	if k == 0 {
		return nil, fmt.Errorf("axes %s is empty: squeeze_dyn needs the axes (without them the result's rank would depend on the dims)", in[1])
	}
	var cand []int // the dims that can be 1
	for i, d := range dims {
		if d == 1 || d == ir.Dynamic {
			cand = append(cand, i)
		}
	}
	if len(cand) < k {
		return nil, fmt.Errorf("cannot squeeze %d axes of %s: at most %d of its dims can be 1", k, dimsString(dims), len(cand))
	}
	out := dynMerge(len(dims)-k, len(dims), cand, k, func(chosen []bool) []int {
		var out []int
		for i, d := range dims {
			if !chosen[i] {
				out = append(out, d)
			}
		}
		return out
	})
	return []ir.Type{ir.TensorOf(in[0].DType, out...)}, nil
}

func dynBindSqueeze(op *ir.Op) (Kernel, error) {
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		dims := x.Shape()
		axes, err := shpAxes("axes", dynInts(in[1]), len(dims))
		if err != nil {
			return nil, fmt.Errorf("cannot squeeze %s: %w", x.Type(), err)
		}
		for _, a := range axes {
			if dims[a] != 1 {
				return nil, fmt.Errorf("cannot squeeze axis %d of %s: its size is not 1", a, x.Type())
			}
		}
		return shpView(x, shpDrop(dims, axes))
	}, nil
}

// SqueezeDyn returns a view of x without the size-1 dims listed by the
// 1-D operand axes (at least one).
func SqueezeDyn(b *ir.Builder, x, axes *ir.Value) *ir.Value {
	return b.Op1("squeeze_dyn", nil, x, axes)
}

func dynInferUnsqueeze(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 2); err != nil {
		return nil, err
	}
	k, err := dynVector("axes", in[1])
	if err != nil {
		return nil, err
	}
	dims := in[0].Dims
	r := len(dims) + k
	all := make([]int, r)
	for i := range all {
		all[i] = i
	}
	out := dynMerge(r, r, all, k, func(chosen []bool) []int {
		out := make([]int, 0, r)
		j := 0
		for i := range r {
			if chosen[i] {
				out = append(out, 1)
			} else {
				out = append(out, dims[j])
				j++
			}
		}
		return out
	})
	return []ir.Type{ir.TensorOf(in[0].DType, out...)}, nil
}

func dynBindUnsqueeze(op *ir.Op) (Kernel, error) {
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		dims := x.Shape()
		spec := dynInts(in[1])
		axes, err := shpAxes("axes", spec, len(dims)+len(spec))
		if err != nil {
			return nil, fmt.Errorf("cannot unsqueeze %s: %w", x.Type(), err)
		}
		return shpView(x, shpInsertOnes(dims, axes))
	}, nil
}

// UnsqueezeDyn returns a view of x with size-1 dims at the result
// positions listed by the 1-D operand axes.
func UnsqueezeDyn(b *ir.Builder, x, axes *ir.Value) *ir.Value {
	return b.Op1("unsqueeze_dyn", nil, x, axes)
}

// ---- expand_dyn ----

func dynInferExpand(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 2); err != nil {
		return nil, err
	}
	n, err := dynVector("shape", in[1])
	if err != nil {
		return nil, err
	}
	dims := in[0].Dims
	r := max(n, len(dims))
	out := dynAllDynamic(r)
	// A dim of x other than 1 is the result's (or the run fails).
	for i, d := range dims {
		if d != 1 && d != ir.Dynamic {
			out[r-len(dims)+i] = d
		}
	}
	out, err = dynRefine(attrs, out)
	if err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(in[0].DType, out...)}, nil
}

// dynBroadcast broadcasts dims and shape both ways (numpy rules).
func dynBroadcast(dims, shape []int) ([]int, error) {
	r := max(len(dims), len(shape))
	out := make([]int, r)
	for i := range r {
		d, s := fromRight(dims, r-1-i), fromRight(shape, r-1-i)
		switch {
		case s < 0:
			return nil, fmt.Errorf("shape %v: dims must be sizes >= 0", shape)
		case s == d || s == 1:
			out[i] = d
		case d == 1:
			out[i] = s
		default:
			return nil, fmt.Errorf("cannot broadcast %s with shape %v: dim %d is %d against %d", dimsString(dims), shape, i, d, s)
		}
	}
	return out, nil
}

func dynBindExpand(op *ir.Op) (Kernel, error) {
	rt := op.Result(0).Type()
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		dims := x.Shape()
		out, err := dynBroadcast(dims, dynInts(in[1]))
		if err == nil {
			err = dynCheck(out, rt)
		}
		if err != nil {
			return nil, fmt.Errorf("cannot expand %s: %w", x.Type(), err)
		}
		lead := len(out) - len(dims)
		src := shpStrides(dims)
		strides := make([]int, len(out))
		for i := lead; i < len(out); i++ {
			if dims[i-lead] != 1 {
				strides[i] = src[i-lead]
			}
		}
		y, err := c.New(rt.DType, out)
		if err != nil {
			return nil, err
		}
		shpStrided(c, y, x, out, 0, strides)
		return []*tensor.Tensor{y}, nil
	}, nil
}

// ExpandDyn returns a copy of x broadcast both ways with the shape held
// by the 1-D operand shape (a 1 there keeps x's dim). dims, when not nil,
// are the result dims the caller knows (-1 for unknown), checked at run
// time.
func ExpandDyn(b *ir.Builder, x, shape *ir.Value, dims []int) *ir.Value {
	var attrs ir.Attrs
	if dims != nil {
		attrs = ir.A("dims", dims)
	}
	return b.Op1("expand_dyn", attrs, x, shape)
}

// dynGradExpand sums dy back to x's shape: its static shape when it has
// one (nothing is kept from the forward pass), else x's at run time.
func dynGradExpand(g *GradContext) ([]*ir.Value, error) {
	dy, x := g.DY[0], g.Op.Operand(0).Type()
	switch {
	case x.IsStatic() && dy.Type().Equal(x):
		return []*ir.Value{dy, nil}, nil
	case x.IsStatic():
		return []*ir.Value{g.B.Op1("reduce_sum_to", ir.A("shape", x.Dims), dy), nil}, nil
	}
	return []*ir.Value{g.B.Op1("reduce_sum_to", nil, dy, g.X(0)), nil}, nil
}

// ---- constant_of_shape ----

func dynInferConstantOfShape(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	n, err := dynVector("shape", in[0])
	if err != nil {
		return nil, err
	}
	dt, err := attrs.DType("dtype")
	if err != nil {
		return nil, err
	}
	dims, err := dynRefine(attrs, dynAllDynamic(n))
	if err != nil {
		return nil, err
	}
	t := ir.TensorOf(dt, dims...)
	if err := t.Check(); err != nil {
		return nil, err
	}
	if _, err := fillValueAttr(attrs, dt); err != nil {
		return nil, err
	}
	return []ir.Type{t}, nil
}

func dynBindConstantOfShape(op *ir.Op) (Kernel, error) {
	rt := op.Result(0).Type()
	value, err := fillValueAttr(op.Attrs, rt.DType)
	if err != nil {
		return nil, err
	}
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		shape := dynInts(in[0])
		for _, d := range shape {
			if d < 0 {
				return nil, fmt.Errorf("shape %v: dims must be sizes >= 0", shape)
			}
		}
		if err := dynCheck(shape, rt); err != nil {
			return nil, err
		}
		y, err := c.New(rt.DType, shape)
		if err != nil {
			return nil, err
		}
		value.fill(y)
		return []*tensor.Tensor{y}, nil
	}, nil
}

// ConstantOfShape returns a tensor of dtype dt filled with value, in the
// shape held by the 1-D operand shape. value is an ir.Int or ir.Float
// (integers stay exact). dims, when not nil, are the result dims the
// caller knows (-1 for unknown), checked at run time.
func ConstantOfShape(b *ir.Builder, shape *ir.Value, dt ir.DType, value ir.Attr, dims []int) *ir.Value {
	kv := []any{"value", value, "dtype", dt}
	if dims != nil {
		kv = append(kv, "dims", dims)
	}
	return b.Op1("constant_of_shape", ir.A(kv...), shape)
}

// ---- range ----

func dynInferRange(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 3); err != nil {
		return nil, err
	}
	dt := in[0].DType
	for i, t := range in {
		if t.Rank() != 0 {
			return nil, fmt.Errorf("operand %d is %s; start, limit and delta must be scalars", i, t)
		}
		if t.DType != dt {
			return nil, fmt.Errorf("operands %s and %s differ in dtype", in[0], t)
		}
	}
	if !dt.IsFloat() && !dt.IsInt() {
		return nil, fmt.Errorf("operands are %s; want f32, f64, i32 or i64", dt)
	}
	return []ir.Type{ir.TensorOf(dt, ir.Dynamic)}, nil
}

// dynRangeLen is the length of range(start, limit, delta) for integers.
func dynRangeLen(start, limit, delta int64) int64 {
	// The differences are exact in uint64 arithmetic.
	switch {
	case delta > 0 && limit > start:
		return int64((uint64(limit)-uint64(start)-1)/uint64(delta) + 1)
	case delta < 0 && limit < start:
		return int64((uint64(start)-uint64(limit)-1)/(uint64(-(delta+1))+1) + 1)
	}
	return 0
}

func dynBindRange(op *ir.Op) (Kernel, error) {
	dt := op.Result(0).Type().DType
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		var n int64
		var fstart, fdelta float64
		var istart, idelta int64
		if dt.IsInt() {
			istart, idelta = dynInts1(in[0]), dynInts1(in[2])
			if idelta == 0 {
				return nil, fmt.Errorf("range(%d, %d, %d): delta is 0", istart, dynInts1(in[1]), idelta)
			}
			n = dynRangeLen(istart, dynInts1(in[1]), idelta)
		} else {
			fstart, fdelta = in[0].Float64At(0), in[2].Float64At(0)
			limit := in[1].Float64At(0)
			l := math.Ceil((limit - fstart) / fdelta)
			if fdelta == 0 || math.IsNaN(l) || math.IsInf(l, 0) {
				return nil, fmt.Errorf("range(%v, %v, %v): the length is not finite", fstart, limit, fdelta)
			}
			if l > 0 {
				n = int64(min(l, shpArangeLimit+1))
			}
		}
		if n > shpArangeLimit {
			return nil, fmt.Errorf("range: more than 2^40 elements")
		}
		y, err := c.New(dt, []int{int(n)})
		if err != nil {
			return nil, err
		}
		switch dt {
		case ir.F32:
			kernels.ArangeFloat(y.F32(), fstart, fdelta, c.Threads)
		case ir.F64:
			kernels.ArangeFloat(y.F64(), fstart, fdelta, c.Threads)
		case ir.I32:
			kernels.ArangeInt(y.I32(), istart, idelta, c.Threads)
		case ir.I64:
			kernels.ArangeInt(y.I64(), istart, idelta, c.Threads)
		}
		return []*tensor.Tensor{y}, nil
	}, nil
}

// dynInts1 reads the one element of an i32 or i64 tensor.
func dynInts1(t *tensor.Tensor) int64 {
	if t.DType() == tensor.I32 {
		return int64(t.I32()[0])
	}
	return t.I64()[0]
}

// Range returns the 1-D tensor start, start+delta, ... before limit, from
// three scalars of one dtype.
func Range(b *ir.Builder, start, limit, delta *ir.Value) *ir.Value {
	return b.Op1("range", nil, start, limit, delta)
}

// dynGradRange refuses: the result depends on float bounds, but its
// length is not differentiable and no rule is written for the values.
func dynGradRange(g *GradContext) ([]*ir.Value, error) {
	return nil, fmt.Errorf("gradients of range with respect to its bounds are not implemented")
}
