package ir_test

import (
	"errors"
	"fmt"

	"github.com/gopir/gopir/ir"
)

// The real op catalog lives in package ops, which imports ir; these tests
// register a small dialect of their own with simple shape rules.
func init() {
	for name, spec := range testDialect {
		ir.Register(name, spec)
	}
}

var testDialect = map[string]ir.OpSpec{
	"data":      {Infer: fromShapeAttrs},
	"parameter": {Infer: fromShapeAttrs},
	"full":      {Infer: inferFull},
	"fetch":     {Infer: inferFetch},
	"constant": {Infer: func(ts []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
		d, err := attrs.Dense("value")
		if err != nil {
			return nil, err
		}
		return []ir.Type{d.Type}, wantOperands(ts, 0)
	}},

	"relu": {Infer: unary},
	"exp":  {Infer: unary},
	"neg":  {Infer: unary},

	"add":      {Infer: binary},
	"subtract": {Infer: binary},
	"multiply": {Infer: binary},

	"greater_than": {Infer: compare},
	"less_than":    {Infer: compare},
	"equal":        {Infer: compare},

	"cast":       {Infer: inferCast},
	"reduce_sum": {Infer: inferReduce},

	"stack_new":  {Infer: inferStackNew, Stacks: true},
	"stack_push": {Infer: inferStackPush, Stacks: true},
	"stack_pop":  {Infer: inferStackPop, Stacks: true},

	// "assert_scalar" shows that a Verify hook runs after Infer.
	"assert_scalar": {
		Infer: inferFetch,
		Verify: func(op *ir.Op) error {
			if op.NumOperands() == 1 && op.Operand(0).Type().Rank() != 0 {
				return errors.New("operand must be a scalar")
			}
			return nil
		},
	},
}

func wantOperands(ts []ir.Type, n int) error {
	if len(ts) != n {
		return fmt.Errorf("takes %d operands, has %d", n, len(ts))
	}
	return nil
}

// shapeAttr reads a "shape" attribute, where -1 is a dynamic dim.
func shapeAttr(attrs ir.Attrs) ([]int, error) {
	shape, err := attrs.Ints("shape")
	if err != nil {
		return nil, err
	}
	for _, d := range shape {
		if d < 0 && d != ir.Dynamic {
			return nil, fmt.Errorf("invalid dim %d in shape", d)
		}
	}
	return shape, nil
}

func fromShapeAttrs(ts []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(ts, 0); err != nil {
		return nil, err
	}
	shape, err := shapeAttr(attrs)
	if err != nil {
		return nil, err
	}
	dt, err := attrs.DType("dtype")
	if err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(dt, shape...)}, nil
}

func inferFull(ts []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if _, err := attrs.Float("value"); err != nil {
		return nil, err
	}
	return fromShapeAttrs(ts, attrs)
}

func inferFetch(ts []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	return nil, wantOperands(ts, 1)
}

func unary(ts []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(ts, 1); err != nil {
		return nil, err
	}
	return []ir.Type{ts[0]}, nil
}

func binary(ts []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(ts, 2); err != nil {
		return nil, err
	}
	if !ts[0].Equal(ts[1]) {
		return nil, fmt.Errorf("operand types %s and %s differ", ts[0], ts[1])
	}
	return []ir.Type{ts[0]}, nil
}

func compare(ts []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	out, err := binary(ts, attrs)
	if err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(ir.I1, out[0].Dims...)}, nil
}

func inferCast(ts []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(ts, 1); err != nil {
		return nil, err
	}
	dt, err := attrs.DType("dtype")
	if err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(dt, ts[0].Dims...)}, nil
}

func inferReduce(ts []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(ts, 1); err != nil {
		return nil, err
	}
	axes, err := attrs.Ints("axes")
	if err != nil {
		return nil, err
	}
	keep, err := attrs.Bool("keepdim")
	if err != nil {
		return nil, err
	}
	in := ts[0]
	reduced := make([]bool, in.Rank())
	for _, a := range axes {
		if a < 0 {
			a += in.Rank()
		}
		if a < 0 || a >= in.Rank() {
			return nil, fmt.Errorf("axis %d out of range for rank %d", a, in.Rank())
		}
		reduced[a] = true
	}
	var dims []int
	for i, d := range in.Dims {
		switch {
		case !reduced[i]:
			dims = append(dims, d)
		case keep:
			dims = append(dims, 1)
		}
	}
	return []ir.Type{ir.TensorOf(in.DType, dims...)}, nil
}

// stack_new {elem} () -> stack<elem>
func inferStackNew(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	elem, err := attrs.Type("elem")
	if err != nil {
		return nil, err
	}
	return []ir.Type{ir.StackOf(elem)}, wantOperands(in, 0)
}

// stack_push (stack<T>, T) -> stack<T>
func inferStackPush(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 2); err != nil {
		return nil, err
	}
	if !in[0].IsStack() || !in[1].Refines(*in[0].Elem) {
		return nil, fmt.Errorf("cannot push %s onto %s", in[1], in[0])
	}
	return []ir.Type{in[0]}, nil
}

// stack_pop (stack<T>) -> (stack<T>, T)
func inferStackPop(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	if !in[0].IsStack() {
		return nil, fmt.Errorf("cannot pop from %s", in[0])
	}
	return []ir.Type{in[0], *in[0].Elem}, nil
}
