package ops_test

import (
	"context"
	"errors"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Tests of check (check.go) and of the refusals kernels return.

func TestCheck(t *testing.T) {
	shpWantErr(t, "check", ir.A("message", "m"), []ir.Type{shpT(ir.F32, 2)}, "not i1")
	shpWantErr(t, "check", nil, []ir.Type{shpT(ir.I1, 2)}, "message")

	a := memory.New(memory.Options{})
	b := ir.NewBuilder(ir.NewProgram())
	c := ops.Data(b, "c", ir.I1, ir.Dynamic)
	x := ops.Data(b, "x", ir.F32, 3)
	ops.Check(b, c, "no thanks")
	ops.Fetch(b, "y", ops.Relu(b, x))
	p, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	e, err := exec.Compile(p, exec.Options{Alloc: a, CheckLeaks: true})
	if err != nil {
		t.Fatal(err)
	}
	host := memory.New(memory.Options{})
	xs, _ := tensor.FromF32(host, []float32{-1, 0, 2}, 3)
	for i, cond := range [][]bool{{}, {false, false}, {false, true}, {true}} {
		cs, err := tensor.New(host, tensor.Bool, len(cond))
		if err != nil {
			t.Fatal(err)
		}
		copy(cs.Bool(), cond)
		for range 20 {
			res, err := e.Run(context.Background(), map[string]*tensor.Tensor{"c": cs, "x": xs})
			var r *ops.RefusedError
			switch {
			case i < 2 && err != nil:
				t.Fatalf("cond %v: %v", cond, err)
			case i < 2:
				res.Release()
			case !errors.As(err, &r) || r.What != "no thanks":
				t.Fatalf("cond %v: error %v, want the refusal", cond, err)
			}
			wantAllocated(t, a, 0)
		}
		cs.Release()
	}
	xs.Release()
}
