package ops_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// TestSoftmaxF32Op: softmax_f32 is within 1e-6 of the float64 reference
// on every axis of a few shapes (its bound: a few float32 ulps, see
// kernels.SoftmaxF32), keeps softmax's extremes, and leaves nothing
// allocated.
func TestSoftmaxF32Op(t *testing.T) {
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(41, 42))
	for _, shape := range [][]int{{5}, {3, 17}, {2, 3, 4}, {2, 100, 4, 17}} {
		x := randTensor(t, a, r, tensor.F32, shape...)
		for i := range x.F32() {
			x.F32()[i] *= 8
		}
		xs := make([]float64, x.Len())
		for i, v := range x.F32() {
			xs[i] = float64(v)
		}
		for axis := range shape {
			y := mustRun(t, a, "softmax_f32", ir.A("axis", axis), x)
			closeEnough(t, "softmax_f32", y[0], nnRefSoftmax(xs, shape, axis, false), shape, 1e-6)
			release(y...)
		}
		release(x)
	}
	inf := math.Inf(1)
	x := nnFrom(t, a, tensor.F32, []float64{1000, 999, -1000, -inf, -inf, -inf, 0, -inf, 5}, 3, 3)
	y := mustRun(t, a, "softmax_f32", nil, x)
	e := math.Exp(-1.0)
	closeEnough(t, "softmax_f32", y[0], []float64{1 / (1 + e), e / (1 + e), 0, math.NaN(), math.NaN(), math.NaN(), math.Exp(-5) / (1 + math.Exp(-5)), 0, 1 / (1 + math.Exp(-5))}, []int{3, 3}, 1e-6)
	release(y...)
	release(x)
	wantAllocated(t, a, 0)
}

func TestSoftmaxF32Infer(t *testing.T) {
	got := nnInferOK(t, "softmax_f32", nil, nnT(ir.F32, -1, 10))
	if got[0].String() != "tensor<?x10xf32>" {
		t.Fatalf("type %s", got[0])
	}
	nnInferErr(t, "softmax_f32", nil, []string{"tensor<3x4xf64>", "f32"}, nnT(ir.F64, 3, 4))
	nnInferErr(t, "softmax_f32", ir.A("axis", 2), []string{"axis 2", "tensor<3x4xf32>"}, nnT(ir.F32, 3, 4))
}

func TestSoftmaxF32OOMSweep(t *testing.T) {
	a := memory.New(memory.Options{})
	x := randTensor(t, a, rand.New(rand.NewPCG(43, 44)), tensor.F32, 5, 17)
	checkOOMSweep(t, "softmax_f32", nil, x)
	checkOOMSweep(t, "softmax_f32", ir.A("axis", 0), x)
	release(x)
}

// TestSoftmaxF32Grad: the gradient of Σ w·softmax_f32(x) is softmax's
// rule on softmax_f32's output, so it is within 1e-6 of the gradient
// through softmax.
func TestSoftmaxF32Grad(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	a := memory.New(memory.Options{})
	x := randTensor(t, a, r, tensor.F32, 4, 17)
	w := randTensor(t, a, r, tensor.F32, 4, 17)
	grad := func(name string) []float32 {
		b := ir.NewBuilder(ir.NewProgram())
		xv, wv := ops.Data(b, "x", ir.F32, 4, 17), ops.Data(b, "w", ir.F32, 4, 17)
		loss := ops.ReduceSum(b, ops.Multiply(b, b.Op1(name, ir.A("axis", -1), xv), wv), nil, false)
		g, err := autodiff.Backward(b, loss, []*ir.Value{xv})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ops.Fetch(b, "g", g[0])
		p, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		e, err := exec.Compile(p, exec.Options{Alloc: a, CheckLeaks: true})
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Run(context.Background(), map[string]*tensor.Tensor{"x": x, "w": w})
		if err != nil {
			t.Fatal(err)
		}
		defer res.Release()
		return append([]float32(nil), res["g"].F32()...)
	}
	got, want := grad("softmax_f32"), grad("softmax")
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); d > 1e-6 {
			t.Fatalf("dx[%d] = %v through softmax_f32, %v through softmax", i, got[i], want[i])
		}
	}
	release(x, w)
	wantAllocated(t, a, 0)
}
