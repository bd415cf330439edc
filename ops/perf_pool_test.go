package ops_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// TestMaxPoolGradX checks max_pool2d_grad_x against max_pool2d_grad with
// the indices (bitwise, f32 and f64, ties and NaN), its type rule, and
// that an OOM leaves nothing behind.
func TestMaxPoolGradX(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, attrs := range []ir.Attrs{
		ir.A("kernel_size", 2),
		ir.A("kernel_size", 3, "strides", 1, "paddings", 1),
		ir.A("kernel_size", []int{2, 3}, "strides", []int{1, 2}),
	} {
		for _, dt := range nnDTypes {
			t.Run(fmt.Sprint(attrs, dt), func(t *testing.T) {
				a := memory.New(memory.Options{})
				x := randTensor(t, a, r, dt, 3, 2, 7, 9)
				set := func(i int, v float64) {
					if dt == tensor.F32 {
						x.F32()[i] = float32(v)
					} else {
						x.F64()[i] = v
					}
				}
				for i := 0; i < x.Len(); i += 5 {
					set(i, 1) // ties
				}
				set(3, math.NaN())
				fwd := mustRun(t, a, "max_pool2d", attrs, x)
				dy := randTensor(t, a, r, dt, fwd[0].Shape()...)
				want := mustRun(t, a, "max_pool2d_grad", ir.A("input_size", []int{7, 9}), dy, fwd[1])
				got := mustRun(t, a, "max_pool2d_grad_x", attrs, dy, x)
				nnSameBits(t, "dx", got[0], want[0])
				release(fwd...)
				release(want...)
				release(got...)
				release(x, dy)
				wantAllocated(t, a, 0)
			})
		}
	}
	nnInferErr(t, "max_pool2d_grad_x", ir.A("kernel_size", 2), []string{"shape"}, nnT(ir.F32, 2, 3, 4, 4), nnT(ir.F32, 2, 3, 8, 10))
	nnInferErr(t, "max_pool2d_grad_x", ir.A("kernel_size", 2), []string{"dtype"}, nnT(ir.F64, 2, 3, 4, 4), nnT(ir.F32, 2, 3, 8, 8))
	nnInferErr(t, "max_pool2d_grad_x", nil, []string{"kernel_size"}, nnT(ir.F32, 2, 3, 4, 4), nnT(ir.F32, 2, 3, 8, 8))
	if got := nnInferOK(t, "max_pool2d_grad_x", ir.A("kernel_size", 2), nnT(ir.F32, -1, 3, 4, 4), nnT(ir.F32, -1, 3, 8, 8)); got[0].String() != "tensor<?x3x8x8xf32>" {
		t.Errorf("type %v", got)
	}
	x := randTensor(t, host, r, tensor.F32, 2, 3, 8, 8)
	dy := randTensor(t, host, r, tensor.F32, 2, 3, 4, 4)
	defer release(x, dy)
	checkOOMSweep(t, "max_pool2d_grad_x", ir.A("kernel_size", 2), dy, x)
}

// TestMaxPoolAfterReluGrad checks the gradient of relu → max_pool2d, whose
// rule then scatters by x, against finite differences: at the top level,
// with dynamic dims, and inside a while loop; and that the backward keeps
// no indices.
func TestMaxPoolAfterReluGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	x := f64Rand(t, r, -1, 1, 2, 3, 6, 8)
	t.Cleanup(x.Release)
	for _, win := range [][3][]int{{{2, 2}, nil, nil}, {{3, 3}, {2, 2}, {1, 1}}} {
		build := func(b *ir.Builder, in []*ir.Value) []*ir.Value {
			y, _ := ops.MaxPool2D(b, ops.Relu(b, in[0]), win[0], win[1], win[2])
			return []*ir.Value{y}
		}
		nnCheckGrad(t, 1e-5, false, []*tensor.Tensor{x}, []int{0}, build)
		nnCheckGrad(t, 1e-5, true, []*tensor.Tensor{x}, []int{0}, build)
	}
	n := nnFrom(t, host, tensor.I64, []float64{2})
	t.Cleanup(n.Release)
	nnCheckGrad(t, 1e-5, false, []*tensor.Tensor{x, n}, []int{0}, func(b *ir.Builder, in []*ir.Value) []*ir.Value {
		i0 := ops.Full(b, ir.I64, 0)
		one := ops.Full(b, ir.I64, 1)
		res := b.While(ops.LessThan(b, i0, in[1]), []*ir.Value{i0, in[0]}, func(b *ir.Builder, args []*ir.Value) (*ir.Value, []*ir.Value) {
			y, _ := ops.MaxPool2D(b, ops.Relu(b, args[1]), []int{3, 3}, []int{1, 1}, []int{1, 1})
			i1 := ops.Add(b, args[0], one)
			return ops.LessThan(b, i1, in[1]), []*ir.Value{i1, ops.Tanh(b, y)}
		})
		return []*ir.Value{res[1]}
	})
	// The rule reads x, not the indices.
	b := ir.NewBuilder(ir.NewProgram())
	xv := ops.Data(b, "x", ir.F32, 2, 3, 6, 8)
	y, _ := ops.MaxPool2D(b, ops.Relu(b, xv), []int{2, 2}, nil, nil)
	if _, err := autodiff.Backward(b, ops.ReduceSum(b, y, nil, false), []*ir.Value{xv}); err != nil {
		t.Fatal(err)
	}
	text := b.Program().String()
	if !contains(text, "max_pool2d_grad_x") || contains(text, `"max_pool2d_grad" `) {
		t.Errorf("backward of relu → max_pool2d:\n%s", text)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
