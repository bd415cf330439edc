package exec_test

import (
	"context"
	"fmt"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// This is the example of the README: a program with an if, built from Go,
// run, and back to zero allocated bytes once the result is released.
func Example() {
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F32, -1, 4) // a batch of rows; -1 is dynamic
	pos := ops.GreaterThan(b, ops.ReduceSum(b, x, nil, false), ops.Full(b, ir.F32, 0))
	out := b.If(pos,
		func(b *ir.Builder) []*ir.Value { return []*ir.Value{ops.Relu(b, x)} },
		func(b *ir.Builder) []*ir.Value { return []*ir.Value{ops.Neg(b, x)} })
	ops.Fetch(b, "out", out[0])
	prog, err := b.Finish() // verifies
	if err != nil {
		panic(err)
	}
	exe, _ := exec.Compile(prog, exec.Options{CheckLeaks: true})
	xs, _ := tensor.FromF32(exe.Allocator(), []float32{1, -2, 3, -4, 5, -6, 7, 8}, 2, 4)
	res, err := exe.Run(context.Background(), map[string]*tensor.Tensor{"x": xs})
	if err != nil {
		panic(err)
	}
	fmt.Println(res["out"].F32())
	res.Release()
	xs.Release()
	fmt.Println("allocated:", exe.Allocator().Stats().Allocated.Current)
	// Output:
	// [1 0 3 0 5 0 7 8]
	// allocated: 0
}
