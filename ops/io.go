package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/tensor"
)

// Program inputs and outputs, and constants.
//
//	data      {name, shape, dtype} -> a feed; shape may hold -1 (dynamic)
//	parameter {name, shape, dtype} -> a persistable value from the store
//	fetch     {name} (x)           -> names an output
//	full      {shape, value, dtype} -> a constant tensor

func init() {
	register(&Def{Name: "data", Infer: inferFromShapeAttr(true)})
	register(&Def{Name: "parameter", Infer: inferFromShapeAttr(false)})
	register(&Def{Name: "fetch", Infer: func(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
		if err := wantOperands(in, 1); err != nil {
			return nil, err
		}
		return nil, nil
	}})
	register(&Def{Name: "full", Infer: inferFromShapeAttr(false), Bind: bindFull, NoGrad: true})
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
		return []ir.Type{ir.TensorOf(dt, shape...)}, nil
	}
}

func bindFull(op *ir.Op) (Kernel, error) {
	t := op.Result(0).Type()
	value, err := op.Attrs.Float("value")
	if err != nil {
		return nil, err
	}
	return func(c *Ctx, _ []*tensor.Tensor) ([]*tensor.Tensor, error) {
		out, err := c.New(t.DType, t.Dims)
		if err != nil {
			return nil, err
		}
		fill(out, value)
		return []*tensor.Tensor{out}, nil
	}, nil
}

// fill sets every element of t to v, converted to t's dtype.
func fill(t *tensor.Tensor, v float64) {
	switch t.DType() {
	case tensor.F32:
		fillSlice(t.F32(), float32(v))
	case tensor.F64:
		fillSlice(t.F64(), v)
	case tensor.I32:
		fillSlice(t.I32(), int32(v))
	case tensor.I64:
		fillSlice(t.I64(), int64(v))
	case tensor.Bool:
		fillSlice(t.Bool(), v != 0)
	}
}

func fillSlice[T any](s []T, v T) {
	for i := range s {
		s[i] = v
	}
}

// Data appends a feed named name.
func Data(b *ir.Builder, name string, dt ir.DType, shape ...int) *ir.Value {
	return b.Op1("data", ir.A("name", name, "shape", shape, "dtype", dt))
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
