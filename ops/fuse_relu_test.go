package ops_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// fuseReluGradWant is where(y > 0, dy, 0), element by element.
func fuseReluGradWant(y, dy []float64) []float64 {
	out := make([]float64, len(y))
	for i := range y {
		if y[i] > 0 {
			out[i] = dy[i]
		}
	}
	return out
}

// TestReluGradForward checks relu_grad on f64 and f32, with special values
// in y (NaN and -0 give 0) and sizes below and above the vector width and
// the parallel grain.
func TestReluGradForward(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	special := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1e-300, -1e-300}
	for _, n := range []int{1, 7, 16, 33, 1000, 200_000} {
		y := f64Rand(t, r, -1, 1, n)
		dy := f64Rand(t, r, -3, 3, n)
		for i := range min(n, len(special)) {
			y.F64()[i] = special[i]
		}
		dy.F64()[n-1] = math.NaN() // passed through where y > 0
		y.F64()[n-1] = 1
		want := fuseReluGradWant(y.F64(), dy.F64())
		out := mustRun(t, host, "relu_grad", nil, y, dy)
		closeEnough(t, "relu_grad f64", out[0], want, []int{n}, 0)
		y32, dy32 := ewgToF32(t, y), ewgToF32(t, dy)
		out32 := mustRun(t, host, "relu_grad", nil, y32, dy32)
		for i, v := range out32[0].F32() {
			var w float32
			if y32.F32()[i] > 0 { // ±1e-300 rounds to ±0 in f32
				w = dy32.F32()[i]
			}
			if math.Float32bits(v) != math.Float32bits(w) && !(v != v && w != w) {
				t.Fatalf("relu_grad f32 n=%d [%d] = %v, want %v", n, i, v, w)
			}
		}
		release(out[0], out32[0], y, dy, y32, dy32)
	}
}

// TestReluGradInPlace checks that a donated operand becomes the result
// (nothing new is allocated) and that the other donated operand is
// released; and that without donation the operands are untouched.
func TestReluGradInPlace(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	op, err := buildOp(t, "relu_grad", nil, ir.TensorOf(ir.F32, 64, 33), ir.TensorOf(ir.F32, 64, 33))
	if err != nil {
		t.Fatal(err)
	}
	k, err := ops.Bind(op)
	if err != nil {
		t.Fatal(err)
	}
	for _, owned := range []uint64{0, 1, 2, 3} {
		a := memory.New(memory.Options{})
		y := randTensor(t, a, r, tensor.F32, 64, 33)
		dy := randTensor(t, a, r, tensor.F32, 64, 33)
		want := make([]float32, y.Len())
		for i := range want {
			if y.F32()[i] > 0 {
				want[i] = dy.F32()[i]
			}
		}
		before := a.Stats().Allocated.Current
		outs, err := k(&ops.Ctx{Alloc: a, Threads: 2, Owned: owned}, []*tensor.Tensor{y, dy})
		if err != nil {
			t.Fatal(err)
		}
		out := outs[0]
		for i, v := range out.F32() {
			if v != want[i] {
				t.Fatalf("owned %b: [%d] = %v, want %v", owned, i, v, want[i])
			}
		}
		switch owned {
		case 0:
			if got := a.Stats().Allocated.Current; got != before+out.Bytes() {
				t.Errorf("owned 0: allocated %d, want %d", got, before+out.Bytes())
			}
			release(y, dy)
		case 1, 3:
			if out != y {
				t.Errorf("owned %b: the result is not y's buffer", owned)
			}
			if owned == 1 {
				dy.Release()
			}
		case 2:
			if out != dy {
				t.Errorf("owned 2: the result is not dy's buffer")
			}
			y.Release()
		}
		out.Release()
		wantAllocated(t, a, 0)
	}
}

// TestReluGradGrad checks relu_grad's own rule and the relu rule that
// uses it against finite differences (y and x kept away from the kink).
func TestReluGradGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	away := func(x *tensor.Tensor) {
		for i, v := range x.F64() {
			if math.Abs(v) < 0.05 {
				x.F64()[i] = 0.5
			}
		}
	}
	y := f64Rand(t, r, -1, 1, 4, 5)
	dy := f64Rand(t, r, -2, 2, 4, 5)
	away(y)
	checkOpGrad(t, "relu_grad", nil, y, dy)
	x := f64Rand(t, r, -2, 2, 3, 7)
	away(x)
	checkOpGrad(t, "relu", nil, x)
	// Second order through relu: d/d dy of the gradient of relu.
	feeds := map[string]*tensor.Tensor{"x": x, "dy": f64Rand(t, r, -1, 1, 3, 7), "w": f64Rand(t, r, -1, 1, 3, 7)}
	ewgCheckModel(t, 1e-6, func(b *ir.Builder) (*ir.Value, []*ir.Value) {
		xv := ops.Data(b, "x", ir.F64, -1, 7)
		dv := ops.Data(b, "dy", ir.F64, 3, -1)
		wv := ops.Data(b, "w", ir.F64, 3, 7)
		g := ops.ReluGrad(b, ops.Relu(b, xv), dv)
		return ops.ReduceSum(b, ops.Multiply(b, g, wv), nil, false), []*ir.Value{dv, xv}
	}, feeds)
	release(y, dy, x, feeds["dy"], feeds["w"])
}

// TestReluGradErrors checks the type rule and the run-time shape check;
// TestReluGradOOM that a failed allocation leaves nothing behind.
func TestReluGradErrors(t *testing.T) {
	ewInferErr(t, "relu_grad", nil, []string{"differ in shape"}, ir.TensorOf(ir.F32, 3, 4), ir.TensorOf(ir.F32, 4, 3))
	ewInferErr(t, "relu_grad", nil, []string{"different dtypes"}, ir.TensorOf(ir.F32, 3), ir.TensorOf(ir.F64, 3))
	ewInferErr(t, "relu_grad", nil, []string{"not supported"}, ir.TensorOf(ir.I32, 3), ir.TensorOf(ir.I32, 3))
	ewInferType(t, "relu_grad", nil, ir.TensorOf(ir.F32, 3, 4), ir.TensorOf(ir.F32, -1, 4), ir.TensorOf(ir.F32, 3, -1))
	a, b := ewgF64(t, []float64{1, 2, 3}, 3), ewgF64(t, []float64{1, 2}, 2)
	defer release(a, b)
	if _, err := ewRunDynamic(t, host, "relu_grad", nil, []ir.Type{ir.TensorOf(ir.F64, -1), ir.TensorOf(ir.F64, -1)}, a, b); err == nil {
		t.Error("relu_grad on shapes [3] and [2]: no error")
	}
}

func TestReluGradOOM(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 28))
	y, dy := randTensor(t, host, r, tensor.F32, 5, 70), randTensor(t, host, r, tensor.F32, 5, 70)
	defer release(y, dy)
	checkOOMSweep(t, "relu_grad", nil, y, dy)
}
