package tensor

import (
	"errors"
	"fmt"
)

// A stack is a runtime value that owns a last-in first-out list of
// tensors (or of other stacks). It is a *Tensor so that it can sit in the
// same places as any value — frames, yields, kernel operands — and it is
// reference-counted the same way: releasing its last reference releases its
// items. It takes no allocator bytes itself; its items do.

// ErrEmptyStack is returned by Pop on an empty stack.
var ErrEmptyStack = errors.New("tensor: pop from an empty stack")

// NewStack returns an empty stack with one reference.
func NewStack() *Tensor {
	s := &Storage{}
	s.refs.Store(1)
	return &Tensor{shape: []int{}, s: s, stack: true}
}

// IsStack reports whether t is a stack.
func (t *Tensor) IsStack() bool { return t.stack }

// StackLen is the number of items on the stack t.
func (t *Tensor) StackLen() int {
	t.wantStack("StackLen")
	return len(t.s.items)
}

// StackItem returns item i of the stack t (0 is the bottom, the first
// pushed), without a reference of its own: retain it to keep it.
func (t *Tensor) StackItem(i int) *Tensor {
	t.wantStack("StackItem")
	return t.s.items[i]
}

// Push puts x on top of the stack t, taking over the caller's reference to
// x. The caller must own t exclusively (Refs() == 1): a push is visible to
// every holder of t.
func (t *Tensor) Push(x *Tensor) {
	t.wantStack("Push")
	t.s.items = append(t.s.items, x)
}

// Pop removes the top item of t and hands its reference to the caller. Like
// Push, it needs t owned exclusively.
func (t *Tensor) Pop() (*Tensor, error) {
	t.wantStack("Pop")
	n := len(t.s.items)
	if n == 0 {
		return nil, ErrEmptyStack
	}
	x := t.s.items[n-1]
	t.s.items[n-1] = nil
	t.s.items = t.s.items[:n-1]
	return x, nil
}

// StackInsert puts x at position i (0 ≤ i ≤ StackLen) of the stack t,
// taking over the caller's reference. Like Push, it needs t owned
// exclusively.
func (t *Tensor) StackInsert(i int, x *Tensor) {
	t.wantStack("StackInsert")
	t.s.items = append(t.s.items, nil)
	copy(t.s.items[i+1:], t.s.items[i:])
	t.s.items[i] = x
}

// StackRemove takes item i out of the stack t and hands its reference to
// the caller. Like Pop, it needs t owned exclusively.
func (t *Tensor) StackRemove(i int) *Tensor {
	t.wantStack("StackRemove")
	x := t.s.items[i]
	copy(t.s.items[i:], t.s.items[i+1:])
	t.s.items[len(t.s.items)-1] = nil
	t.s.items = t.s.items[:len(t.s.items)-1]
	return x
}

// CloneStack returns a new stack with the same items, each retained once
// more, for copy-on-write when t is shared.
func (t *Tensor) CloneStack() *Tensor {
	t.wantStack("CloneStack")
	c := NewStack()
	c.s.items = make([]*Tensor, len(t.s.items), max(len(t.s.items), 4))
	for i, x := range t.s.items {
		c.s.items[i] = x.Retain()
	}
	return c
}

func (t *Tensor) wantStack(method string) {
	if !t.stack {
		panic(fmt.Sprintf("tensor: %s on %s, which is not a stack", method, t.Type()))
	}
	if debugOn.Load() {
		t.s.checkAlive(t)
	}
}
