package onnx

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// Sequences and optionals become stack values (an optional is a sequence
// of zero or one item), and their ops the seq_* ops; SequenceMap becomes a
// while over the items.

func init() {
	register(convSequenceEmpty, "SequenceEmpty")
	register(convSequenceConstruct, "SequenceConstruct")
	register(convSequenceInsert, "SequenceInsert")
	register(convSequenceAt, "SequenceAt")
	register(convSequenceErase, "SequenceErase")
	register(convSequenceLength, "SequenceLength")
	register(convConcatFromSequence, "ConcatFromSequence")
	register(convSplitToSequence, "SplitToSequence")
	register(convOptional, "Optional")
	register(convOptionalHasElement, "OptionalHasElement")
	register(convOptionalGetElement, "OptionalGetElement")
	registerNoFold(convSequenceMap, "SequenceMap")
}

func convSequenceEmpty(n *node) ([]*value, error) {
	dt, err := dtypeOf(n.Int("dtype", 1))
	if err != nil {
		return nil, err
	}
	return outv(ops.StackNew(n.b, ir.UnrankedOf(dt))), nil
}

func convSequenceConstruct(n *node) ([]*value, error) {
	return outv(ops.SeqConstruct(n.b, n.Ins()...)), nil
}

func convSequenceInsert(n *node) ([]*value, error) {
	var pos *ir.Value
	if n.Has(2) {
		pos = scalarOf(n.b, n.In(2))
	}
	return outv(ops.SeqInsert(n.b, n.In(0), n.In(1), pos)), nil
}

func convSequenceAt(n *node) ([]*value, error) {
	return outv(ops.SeqAt(n.b, n.In(0), scalarOf(n.b, n.In(1)))), nil
}

func convSequenceErase(n *node) ([]*value, error) {
	var pos *ir.Value
	if n.Has(1) {
		pos = scalarOf(n.b, n.In(1))
	}
	return outv(ops.SeqErase(n.b, n.In(0), pos)), nil
}

func convSequenceLength(n *node) ([]*value, error) {
	return outv(ops.SeqLength(n.b, n.In(0))), nil
}

func convConcatFromSequence(n *node) ([]*value, error) {
	axis := n.Int("axis", 0)
	newAxis := n.Int("new_axis", 0) != 0
	if !n.HasAttr("axis") {
		n.fail("axis is required")
	}
	return outv(ops.ConcatFromSeq(n.b, n.In(0), int(axis), newAxis)), nil
}

func convSplitToSequence(n *node) ([]*value, error) {
	x := n.In(0)
	axis := n.axis(n.Int("axis", 0), n.rank(0))
	keep := n.Int("keepdims", 1) != 0
	return outv(ops.SplitToSeq(n.b, x, n.In(1), axis, keep)), nil
}

// scalarOf views a one-element tensor as a scalar.
func scalarOf(b *ir.Builder, v *ir.Value) *ir.Value {
	if v.Type().Rank() == 0 {
		return v
	}
	return ops.Reshape(b, v)
}

// convOptional: an optional holding the input, or an empty one of the type
// attribute.
func convOptional(n *node) ([]*value, error) {
	if n.Has(0) {
		n.TypeAttr("type")
		return outv(ops.SeqConstruct(n.b, n.In(0))), nil
	}
	t, ok := n.TypeAttr("type")
	if !ok {
		n.fail("an empty Optional needs its type attribute")
		return nil, nil
	}
	return outv(ops.StackNew(n.b, t)), nil
}

// convOptionalHasElement: whether the optional holds its item; a tensor
// input (opset 18) always does, and an absent input does not.
func convOptionalHasElement(n *node) ([]*value, error) {
	if !n.Has(0) {
		return outv(ops.Full(n.b, ir.I1, 0)), nil
	}
	if !n.Type(0).IsStack() {
		return outv(ops.Full(n.b, ir.I1, 1)), nil
	}
	return outv(ops.GreaterThan(n.b, ops.SeqLength(n.b, n.In(0)), ops.Full(n.b, ir.I64, 0))), nil
}

// convOptionalGetElement: the optional's item (an error at run time when
// it is empty); a tensor input (opset 18) is its own element.
func convOptionalGetElement(n *node) ([]*value, error) {
	if !n.Type(0).IsStack() {
		return []*value{n.in[0]}, nil
	}
	return outv(ops.SeqAt(n.b, n.In(0), ops.Full(n.b, ir.I64, 0))), nil
}

// convSequenceMap: a while over the items of the first input; sequence
// inputs give their i-th item to the body, tensor inputs themselves, and
// each body output is appended to an output sequence.
func convSequenceMap(n *node) ([]*value, error) {
	body := n.Graph("body")
	if body == nil {
		return nil, fmt.Errorf("SequenceMap has no body")
	}
	b := n.b
	ins := n.Ins()
	if len(ins) == 0 || !ins[0].Type().IsStack() {
		n.fail("the first input must be a sequence")
		return nil, nil
	}
	length := ops.SeqLength(b, ins[0])
	i0 := ops.Full(b, ir.I64, 0)
	var outTypes []ir.Type
	var init []*ir.Value
	for _, o := range body.GetOutput() {
		t, err := typeFromProto(o.GetType())
		if err != nil {
			return nil, fmt.Errorf("body output %q: %w", o.GetName(), err)
		}
		elem := ir.UnrankedOf(t.DType)
		outTypes = append(outTypes, ir.StackOf(elem))
		init = append(init, ops.StackNew(b, elem))
	}
	types := append([]ir.Type{ir.Scalar(ir.I64)}, outTypes...)
	var err error
	res := b.WhileTyped(ops.LessThan(b, i0, length), append([]*ir.Value{i0}, init...), types,
		func(inner *ir.Builder, args []*ir.Value) (*ir.Value, []*ir.Value) {
			i := args[0]
			var bodyArgs []*value
			for _, x := range ins {
				if x.Type().IsStack() {
					x = ops.SeqAt(inner, x, i)
				}
				bodyArgs = append(bodyArgs, &value{v: x})
			}
			var outs []*ir.Value
			outs, err = n.subgraph(inner, body, "body", bodyArgs)
			if err != nil {
				return ops.Full(inner, ir.I1, 0), args
			}
			next := []*ir.Value{ops.Add(inner, i, ops.Full(inner, ir.I64, 1))}
			for k, o := range outs {
				next = append(next, ops.SeqInsert(inner, args[1+k], o, nil))
			}
			return ops.LessThan(inner, next[0], length), next
		})
	if err != nil {
		return nil, err
	}
	return out(res[1:]...), nil
}
