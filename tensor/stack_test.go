package tensor_test

import (
	"errors"
	"testing"

	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

func TestStackOwnsItsItems(t *testing.T) {
	a := memory.New(memory.Options{})
	s := tensor.NewStack()
	if !s.IsStack() || s.StackLen() != 0 || s.Bytes() != 0 {
		t.Fatalf("new stack: %v", s)
	}
	for i := range 5 {
		x, err := tensor.FromF32(a, []float32{float32(i), 1, 2}, 3)
		if err != nil {
			t.Fatal(err)
		}
		s.Push(x)
	}
	inner := tensor.NewStack()
	y, _ := tensor.FromI64(a, []int64{7})
	inner.Push(y)
	outer := tensor.NewStack()
	outer.Push(inner)

	c := s.CloneStack()
	top, err := s.Pop()
	if err != nil || top.F32()[0] != 4 || s.StackLen() != 4 || c.StackLen() != 5 {
		t.Fatalf("pop: %v %v, len %d, clone len %d", top, err, s.StackLen(), c.StackLen())
	}
	top.Release()
	s.Release()
	if got := a.Stats().Allocated.Current; got != 5*64+64 {
		t.Fatalf("after releasing the original, %d bytes are allocated; the clone and the nested stack hold %d", got, 5*64+64)
	}
	c.Release()
	outer.Release()
	if got := a.Stats().Allocated.Current; got != 0 {
		t.Fatalf("after releasing every stack, %d bytes are allocated", got)
	}
	e := tensor.NewStack()
	if _, err := e.Pop(); !errors.Is(err, tensor.ErrEmptyStack) {
		t.Fatalf("pop of an empty stack: %v", err)
	}
	e.Release()
}

func TestStackMethodsOnATensorPanic(t *testing.T) {
	a := memory.New(memory.Options{})
	x, _ := tensor.FromF32(a, []float32{1})
	defer x.Release()
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("Push on a tensor did not panic")
		}
	}()
	x.Push(x)
}
