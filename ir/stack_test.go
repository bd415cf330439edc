package ir_test

import (
	"strings"
	"testing"

	"github.com/gopir/gopir/ir"
)

func TestStackOperandOnlyForStackOps(t *testing.T) {
	src := `{
  (%s) = "stack_new" () {elem:tensor<f32>} : () -> stack<tensor<f32>>
  (%r) = "relu" (%s) : (stack<tensor<f32>>) -> stack<tensor<f32>>
}`
	p, err := ir.Parse("t.pir", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	err = ir.Verify(p)
	want := `t.pir:3:3: "relu": operand 0 is a stack<tensor<f32>>; the op takes tensors only`
	if err == nil || err.Error() != want {
		t.Fatalf("Verify = %v, want %s", err, want)
	}

	b := ir.NewBuilder(ir.NewProgram())
	s := b.Op1("stack_new", ir.A("elem", ir.Scalar(ir.F32)))
	b.Op1("relu", nil, s)
	if err := b.Err(); err == nil || !strings.Contains(err.Error(), "operand 0 is a stack<tensor<f32>>; the op takes tensors only") {
		t.Fatalf("builder error = %v", err)
	}
}

func TestStackTypes(t *testing.T) {
	f := ir.TensorOf(ir.F32, ir.Dynamic, 4)
	s := ir.StackOf(f)
	ss := ir.StackOf(s)
	if s.String() != "stack<tensor<?x4xf32>>" || ss.String() != "stack<stack<tensor<?x4xf32>>>" {
		t.Fatalf("strings: %s, %s", s, ss)
	}
	if !s.IsStack() || f.IsStack() || !s.IsValid() || s.Equal(f) || f.Equal(s) || !s.Equal(ir.StackOf(f)) || s.Equal(ss) {
		t.Fatal("stack predicates")
	}
	if !ir.StackOf(ir.TensorOf(ir.F32, 3, 4)).Refines(s) || s.Refines(ir.StackOf(ir.TensorOf(ir.F32, 3, 4))) {
		t.Fatal("stack refinement")
	}
	j, ok := ir.Join(ir.StackOf(ir.TensorOf(ir.F32, 3, 4)), ir.StackOf(ir.TensorOf(ir.F32, 5, 4)))
	if !ok || !j.Equal(s) {
		t.Fatalf("join = %s, %v", j, ok)
	}
	if _, ok := ir.Join(s, f); ok {
		t.Fatal("a stack joined a tensor")
	}
	if ir.StackOf(ir.Type{}).IsValid() {
		t.Fatal("stack of an invalid type is valid")
	}
}
