package ops_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// detRef is the determinant by cofactor expansion (independent of the LU
// kernel).
func detRef(a []float64, n int) float64 {
	if n == 0 {
		return 1
	}
	det, sign := 0.0, 1.0
	for c := range n {
		var minor []float64
		for r := 1; r < n; r++ {
			for j := range n {
				if j != c {
					minor = append(minor, a[r*n+j])
				}
			}
		}
		det += sign * a[c] * detRef(minor, n-1)
		sign = -sign
	}
	return det
}

func TestDet(t *testing.T) {
	ewDebug(t)
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(71, 72))
	for _, dt := range ewFloatDTypes {
		for _, shape := range [][]int{{0, 0}, {1, 1}, {3, 3}, {4, 2, 2}, {2, 3, 4, 4}, {0, 5, 5}, {2, 0, 0}} {
			what := fmt.Sprintf("det %s %v", dt, shape)
			x := randTensor(t, a, r, dt, shape...)
			out := mustRun(t, a, "det", nil, x)[0]
			rank := len(shape)
			n := shape[rank-1]
			xv := ewVals(x)
			want := make([]float64, ewNumel(shape[:rank-2]))
			for k := range want {
				want[k] = ewRound(dt, detRef(xv[k*n*n:(k+1)*n*n], n))
			}
			closeEnough(t, what, out, want, shape[:rank-2], max(ewTol(dt), 1e-12))
			release(out, x)
			wantAllocated(t, a, 0)
		}
	}
}

func TestDetErrors(t *testing.T) {
	a := memory.New(memory.Options{})
	ewInferErr(t, "det", nil, []string{"tensor<3xf32>", "rank"}, ir.TensorOf(ir.F32, 3))
	ewInferErr(t, "det", nil, []string{"tensor<2x3xf32>", "2×3", "not square"}, ir.TensorOf(ir.F32, 2, 3))
	ewInferErr(t, "det", nil, []string{"tensor<2x2xi64>", "f32 or f64"}, ir.TensorOf(ir.I64, 2, 2))
	ewInferType(t, "det", nil, ir.TensorOf(ir.F64, -1), ir.TensorOf(ir.F64, -1, 3, -1))
	// A dynamic n that is not square at run time.
	x, _ := tensor.Zeros(a, tensor.F64, 2, 3)
	dyn := ir.TensorOf(ir.F64, -1, -1)
	if _, err := ewRunDynamic(t, a, "det", nil, []ir.Type{dyn}, x); err == nil || !strings.Contains(err.Error(), "not square") {
		t.Errorf("det of [2 3]: %v", err)
	}
	y, _ := tensor.Zeros(a, tensor.F32, 2, 2)
	if _, err := ewRunDynamic(t, a, "det", nil, []ir.Type{dyn}, y); err == nil {
		t.Error("det compiled for f64 accepted f32")
	}
	release(x, y)
	wantAllocated(t, a, 0)
	// Many runs, failing ones included, and the allocation sweep.
	r := rand.New(rand.NewPCG(73, 74))
	z := randTensor(t, a, r, tensor.F64, 3, 4, 4)
	bad, _ := tensor.Zeros(a, tensor.F64, 4, 3)
	base := a.Stats().Allocated.Current
	for range 50 {
		release(mustRun(t, a, "det", nil, z)...)
		if _, err := ewRunDynamic(t, a, "det", nil, []ir.Type{dyn}, bad); err == nil {
			t.Fatal("det of [4 3] succeeded")
		}
		if got := a.Stats().Allocated.Current; got != base {
			t.Fatalf("allocated %d bytes, baseline %d", got, base)
		}
	}
	checkOOMSweep(t, "det", nil, z)
	release(z, bad)
	wantAllocated(t, a, 0)
}

// TestDetGrad checks that differentiating through det is an error that
// names it, not zeros.
func TestDetGrad(t *testing.T) {
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F64, 3, 3)
	d := ops.Det(b, x)
	if !d.Type().Equal(ir.Scalar(ir.F64)) {
		t.Fatalf("Det made %s", d.Type())
	}
	_, err := autodiff.Backward(b, d, []*ir.Value{x})
	if err == nil || !strings.Contains(err.Error(), "gradients of det are not implemented") {
		t.Fatalf("backward through det: %v", err)
	}
	if dd, _ := ops.Lookup("det"); dd.NoGrad || dd.Grad == nil {
		t.Fatal("det must have a refusing Grad, not NoGrad")
	}
}
