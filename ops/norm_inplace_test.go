package ops_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// TestBatchNormGradInPlace: dx written over a donated dy or x is the same,
// bit for bit, as dx in a buffer of its own (training and inference, f32
// and f64, one thread and several over a shape big enough to split), the
// donated buffer is the result and the other operands stay as they were.
func TestBatchNormGradInPlace(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, dt := range []tensor.DType{tensor.F32, tensor.F64} {
		for _, training := range []bool{true, false} {
			for _, threads := range []int{1, 3} {
				shape := []int{8, 5, 9, 11}
				irdt := ir.DType(dt)
				x4, c := ir.TensorOf(irdt, shape...), ir.TensorOf(irdt, shape[1])
				op, err := buildOp(t, "batch_norm_grad", ir.A("training", training), x4, x4, c, c, c)
				if err != nil {
					t.Fatal(err)
				}
				k, err := ops.Bind(op)
				if err != nil {
					t.Fatal(err)
				}
				a := memory.New(memory.Options{})
				in := []*tensor.Tensor{randTensor(t, a, r, dt, shape...), randTensor(t, a, r, dt, shape...)}
				for range 3 {
					in = append(in, randTensor(t, a, r, dt, shape[1]))
				}
				for i := range in[4].Len() { // inverse deviations are positive
					in[4].SetFloat64At(i, 0.5+float64(i))
				}
				run := func(owned uint64, ins []*tensor.Tensor) []*tensor.Tensor {
					outs, err := k(&ops.Ctx{Alloc: a, Threads: threads, Owned: owned}, ins)
					if err != nil {
						t.Fatal(err)
					}
					return outs
				}
				want := run(0, in)
				for _, j := range []int{0, 1} {
					ins := append([]*tensor.Tensor(nil), in...)
					ins[j] = cloneTo(t, a, in[j])
					got := run(1<<uint(j), ins)
					if got[0] != ins[j] {
						t.Errorf("%v training %v: dx is not the donated operand %d's buffer", dt, training, j)
					}
					for i := range got {
						if !bytes.Equal(got[i].Raw(), want[i].Raw()) {
							t.Errorf("%v training %v threads %d: result %d differs when dx takes operand %d's buffer", dt, training, threads, i, j)
						}
					}
					if !bytes.Equal(ins[1-j].Raw(), in[1-j].Raw()) {
						t.Errorf("%v training %v: operand %d changed", dt, training, 1-j)
					}
					release(got...)
				}
				release(want...)
				release(in...)
				wantAllocated(t, a, 0)
			}
		}
	}
}
