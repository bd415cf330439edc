package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/tensor"
)

// Stacks keep what the backward of a while loop needs from each iteration
// (docs/autodiff.md): the forward body pushes, the backward body pops in
// reverse.
//
//	stack_new  {elem} ()  -> stack<elem>
//	stack_push (s, x)     -> s'        x's storage is shared, not copied
//	stack_pop  (s)        -> (s', x)   x is handed over, not copied
//
// A push or pop updates the stack in place when the executor donates it
// (it dies at this op) and nobody else holds it; otherwise it copies the
// list of items (never their data).

func init() {
	register(&Def{Name: "stack_new", Stacks: true, Infer: inferStackNew,
		Bind: func(*ir.Op) (Kernel, error) {
			return func(*Ctx, []*tensor.Tensor) ([]*tensor.Tensor, error) {
				return []*tensor.Tensor{tensor.NewStack()}, nil
			}, nil
		}})
	register(&Def{Name: "stack_push", Stacks: true, Donate: []int{0}, Infer: inferStackPush,
		Bind: func(*ir.Op) (Kernel, error) {
			return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
				s := exclusiveStack(c, in[0])
				s.Push(in[1].Retain())
				return []*tensor.Tensor{s}, nil
			}, nil
		}})
	register(&Def{Name: "stack_pop", Stacks: true, Donate: []int{0}, Infer: inferStackPop,
		Bind: func(*ir.Op) (Kernel, error) {
			return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
				s := exclusiveStack(c, in[0])
				x, err := s.Pop()
				if err != nil {
					s.Release()
					return nil, err
				}
				return []*tensor.Tensor{s, x}, nil
			}, nil
		}})
}

// exclusiveStack returns a stack the kernel owns alone: operand 0 itself
// when it was donated and is not shared, otherwise a copy of its list.
func exclusiveStack(c *Ctx, s *tensor.Tensor) *tensor.Tensor {
	if !c.Owns(0) {
		return s.CloneStack()
	}
	if s.Refs() == 1 {
		return s
	}
	cl := s.CloneStack()
	c.Disown(0)
	s.Release()
	return cl
}

func inferStackNew(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 0); err != nil {
		return nil, err
	}
	elem, err := attrs.Type("elem")
	if err != nil {
		return nil, err
	}
	return []ir.Type{ir.StackOf(elem)}, nil
}

func inferStackPush(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 2); err != nil {
		return nil, err
	}
	if !in[0].IsStack() || !in[1].Refines(*in[0].Elem) {
		return nil, fmt.Errorf("cannot push %s onto %s", in[1], in[0])
	}
	return []ir.Type{in[0]}, nil
}

func inferStackPop(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	if !in[0].IsStack() {
		return nil, fmt.Errorf("cannot pop from %s, which is not a stack", in[0])
	}
	return []ir.Type{in[0], *in[0].Elem}, nil
}

// StackNew appends an empty stack of elem values.
func StackNew(b *ir.Builder, elem ir.Type) *ir.Value {
	return b.Op1("stack_new", ir.A("elem", elem))
}

// StackPush appends a push of x onto s and returns the new stack.
func StackPush(b *ir.Builder, s, x *ir.Value) *ir.Value { return b.Op1("stack_push", nil, s, x) }

// StackPop appends a pop from s and returns the new stack and the item.
func StackPop(b *ir.Builder, s *ir.Value) (rest, top *ir.Value) {
	op := b.Op("stack_pop", nil, s)
	return op.Result(0), op.Result(1)
}
