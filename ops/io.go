package ops

import (
	"fmt"
	"math"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/tensor"
)

// Program inputs and outputs, and constants.
//
//	data      {name, shape, dtype} -> a feed; shape may hold -1 (dynamic)
//	data      {name, type}         -> a feed of any type, a stack<...> too
//	parameter {name, shape, dtype} -> a persistable value from the store
//	fetch     {name} (x)           -> names an output
//	full      {shape, value, dtype} -> a constant tensor
//
// The executor implements data, parameter and fetch itself; full fills a
// result it allocates (Compute).

func init() {
	register(&Def{Name: "data", Infer: inferData, Stacks: true})
	register(&Def{Name: "parameter", Infer: inferFromShapeAttr(false)})
	register(&Def{Name: "fetch", Stacks: true, Infer: func(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
		if err := wantOperands(in, 1); err != nil {
			return nil, err
		}
		return nil, nil
	}})
	register(&Def{Name: "full", Infer: inferFromShapeAttr(false), Compute: computeFull, NoGrad: true})
}

// shapeAttr decodes the "shape" attribute; dynamic allows -1 dims.
func shapeAttr(attrs ir.Attrs, dynamic bool) ([]int, error) {
	shape, err := attrs.Ints("shape")
	if err != nil {
		return nil, err
	}
	for _, d := range shape {
		if d < 0 && !(dynamic && d == ir.Dynamic) {
			if dynamic {
				return nil, fmt.Errorf("shape %v: dims must be sizes or -1 (dynamic)", shape)
			}
			return nil, fmt.Errorf("shape %v: dims must be sizes >= 0", shape)
		}
	}
	return shape, nil
}

func inferData(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if !attrs.Has("type") {
		return inferFromShapeAttr(true)(in, attrs)
	}
	if err := wantOperands(in, 0); err != nil {
		return nil, err
	}
	t, err := attrs.Type("type")
	if err != nil {
		return nil, err
	}
	if attrs.Has("shape") || attrs.Has("dtype") {
		return nil, fmt.Errorf("data takes either a type or a shape and a dtype, not both")
	}
	return []ir.Type{t}, t.Check()
}

func inferFromShapeAttr(dynamic bool) func([]ir.Type, ir.Attrs) ([]ir.Type, error) {
	return func(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
		if err := wantOperands(in, 0); err != nil {
			return nil, err
		}
		shape, err := shapeAttr(attrs, dynamic)
		if err != nil {
			return nil, err
		}
		dt, err := attrs.DType("dtype")
		if err != nil {
			return nil, err
		}
		if err := ir.CheckDims(dt, shape); err != nil {
			return nil, err
		}
		if attrs.Has("value") { // full; data and parameter have none
			if _, err := fillValueAttr(attrs, dt); err != nil {
				return nil, err
			}
		}
		return []ir.Type{ir.TensorOf(dt, shape...)}, nil
	}
}

func computeFull(op *ir.Op) (Compute, error) {
	value, err := fillValueAttr(op.Attrs, op.Result(0).Type().DType)
	if err != nil {
		return Compute{}, err
	}
	return Compute{Fn: func(_ *Ctx, _, out []*tensor.Tensor) error {
		value.fill(out[0])
		return nil
	}}, nil
}

// fillValue is a "value" attribute converted for one dtype: integers stay
// exact (an i64 of 2^63-1 must not round through a float64).
type fillValue struct {
	f float64
	i int64
}

// fillValueAttr reads the "value" attribute for a tensor of dtype dt and
// refuses what dt cannot hold: a fraction, NaN, ±Inf or an out-of-range
// number for an integer dtype, anything but 0 or 1 for i1, a finite number
// beyond f32's range for f32.
func fillValueAttr(attrs ir.Attrs, dt ir.DType) (fillValue, error) {
	a, _ := attrs.Get("value")
	var v fillValue
	switch x := a.(type) {
	case ir.Int:
		v = fillValue{f: float64(x), i: int64(x)}
	case ir.Float:
		v.f = float64(x)
		if dt.IsInt() || dt == ir.I1 {
			if v.f != math.Trunc(v.f) || v.f < -(1<<63) || v.f >= 1<<63 {
				return v, fmt.Errorf("value %v is not an integer %s can hold", a, dt)
			}
			v.i = int64(v.f)
		}
	default:
		return v, &ir.AttrError{Name: "value", Want: "a number", Got: a}
	}
	switch {
	case dt == ir.I32 && (v.i < math.MinInt32 || v.i > math.MaxInt32):
		return v, fmt.Errorf("value %v overflows i32", a)
	case dt == ir.I1 && v.i != 0 && v.i != 1:
		return v, fmt.Errorf("value %v is not a bool (want 0 or 1)", a)
	case dt == ir.F32 && !math.IsInf(v.f, 0) && math.IsInf(float64(float32(v.f)), 0):
		return v, fmt.Errorf("value %v overflows f32", a)
	}
	return v, nil
}

// fill sets every element of t to v.
func (v fillValue) fill(t *tensor.Tensor) {
	switch t.DType() {
	case tensor.F32:
		fillSlice(t.F32(), float32(v.f))
	case tensor.F64:
		fillSlice(t.F64(), v.f)
	case tensor.I32:
		fillSlice(t.I32(), int32(v.i))
	case tensor.I64:
		fillSlice(t.I64(), v.i)
	case tensor.Bool:
		fillSlice(t.Bool(), v.i != 0)
	}
}

// fill sets every element of t to the small integer v (a mask's 1).
func fill(t *tensor.Tensor, v int64) { fillValue{f: float64(v), i: v}.fill(t) }

func fillSlice[T any](s []T, v T) {
	for i := range s {
		s[i] = v
	}
}

// Data appends a feed named name.
func Data(b *ir.Builder, name string, dt ir.DType, shape ...int) *ir.Value {
	return b.Op1("data", ir.A("name", name, "shape", shape, "dtype", dt))
}

// DataTyped appends a feed named name of type t: a tensor type, or a
// stack type for a sequence of tensors.
func DataTyped(b *ir.Builder, name string, t ir.Type) *ir.Value {
	if !t.IsStack() {
		return Data(b, name, t.DType, t.Dims...)
	}
	return b.Op1("data", ir.A("name", name, "type", t))
}

// Parameter appends a read of the persistable value name.
func Parameter(b *ir.Builder, name string, dt ir.DType, shape ...int) *ir.Value {
	return b.Op1("parameter", ir.A("name", name, "shape", shape, "dtype", dt))
}

// Fetch names x as the output name.
func Fetch(b *ir.Builder, name string, x *ir.Value) {
	b.Op("fetch", ir.A("name", name), x)
}

// Full appends a constant tensor filled with value.
func Full(b *ir.Builder, dt ir.DType, value float64, shape ...int) *ir.Value {
	return b.Op1("full", ir.A("shape", shape, "value", value, "dtype", dt))
}
