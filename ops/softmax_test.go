package ops_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// nnRefSoftmax is (log-)softmax along axis, with the max subtracted.
func nnRefSoftmax(x []float64, shape []int, axis int, log bool) []float64 {
	outer, n, inner := 1, 1, 1
	if len(shape) > 0 {
		outer, n, inner = nnSize(shape[:axis]), shape[axis], nnSize(shape[axis+1:])
	}
	y := make([]float64, len(x))
	for o := range outer {
		for i := range inner {
			at := func(j int) int { return (o*n+j)*inner + i }
			m := math.Inf(-1)
			for j := range n {
				m = math.Max(m, x[at(j)])
			}
			var s float64
			for j := range n {
				s += math.Exp(x[at(j)] - m)
			}
			for j := range n {
				if log {
					y[at(j)] = x[at(j)] - m - math.Log(s)
				} else {
					y[at(j)] = math.Exp(x[at(j)]-m) / s
				}
			}
		}
	}
	return y
}

func TestNNSoftmax(t *testing.T) {
	nnDebug(t)
	r := rand.New(rand.NewPCG(17, 18))
	cases := []struct {
		shape []int
		axis  int
	}{
		{[]int{3, 4, 5}, -1}, {[]int{3, 4, 5}, 0}, {[]int{3, 4, 5}, 1}, {[]int{3, 4, 5}, -2},
		{[]int{7}, 0}, {[]int{}, -1}, {[]int{1, 1}, 1}, {[]int{0, 5}, 1}, {[]int{5, 0}, 1}, {[]int{5, 0, 3}, 2},
		{[]int{13, 1, 11}, 1}, {[]int{256, 1000}, -1}, {[]int{64, 10, 7, 7}, 1},
	}
	for _, log := range []bool{false, true} {
		name := map[bool]string{false: "softmax", true: "log_softmax"}[log]
		for _, dt := range nnDTypes {
			for _, tc := range cases {
				t.Run(fmt.Sprintf("%s/%s/%v/%d", name, dt, tc.shape, tc.axis), func(t *testing.T) {
					a := memory.New(memory.Options{})
					x := randTensor(t, a, r, dt, tc.shape...)
					axis := tc.axis
					if axis < 0 {
						axis += max(len(tc.shape), 1)
					}
					want := nnRefSoftmax(nnVals(x), tc.shape, axis, log)
					attrs := ir.A("axis", tc.axis)
					out := mustRun(t, a, name, attrs, x)
					closeEnough(t, name, out[0], want, tc.shape, nnTol(dt))
					for _, th := range []int{1, 3} {
						o := nnRunThreads(t, a, th, name, attrs, x)
						nnSameBits(t, fmt.Sprintf("%s with %d threads", name, th), o[0], out[0])
						release(o...)
					}
					release(out...)
					release(x)
					wantAllocated(t, a, 0)
				})
			}
		}
	}
}

// Large logits do not overflow; all −Inf gives NaN like PyTorch.
func TestNNSoftmaxExtremes(t *testing.T) {
	a := memory.New(memory.Options{})
	inf := math.Inf(1)
	x := nnFrom(t, a, tensor.F32, []float64{1000, 999, -1000, -inf, -inf, -inf, 0, -inf, 5}, 3, 3)
	sm := mustRun(t, a, "softmax", nil, x)
	e := math.Exp(-1.0)
	closeEnough(t, "softmax", sm[0], []float64{1 / (1 + e), e / (1 + e), 0, math.NaN(), math.NaN(), math.NaN(), math.Exp(-5) / (1 + math.Exp(-5)), 0, 1 / (1 + math.Exp(-5))}, []int{3, 3}, 1e-6)
	ls := mustRun(t, a, "log_softmax", nil, x)
	closeEnough(t, "log_softmax", ls[0], []float64{-math.Log1p(e), -1 - math.Log1p(e), -2000 - math.Log1p(e), math.NaN(), math.NaN(), math.NaN(), -5 - math.Log1p(math.Exp(-5)), -inf, -math.Log1p(math.Exp(-5))}, []int{3, 3}, 1e-6)
	release(sm...)
	release(ls...)
	release(x)
	wantAllocated(t, a, 0)
}

func TestNNSoftmaxInfer(t *testing.T) {
	for _, name := range []string{"softmax", "log_softmax"} {
		got := nnInferOK(t, name, nil, nnT(ir.F32, -1, 10))
		if got[0].String() != "tensor<?x10xf32>" {
			t.Fatalf("%s type %s", name, got[0])
		}
		nnInferErr(t, name, ir.A("axis", 2), []string{"axis 2", "tensor<3x4xf32>"}, nnT(ir.F32, 3, 4))
		nnInferErr(t, name, ir.A("axis", -3), []string{"axis -3", "tensor<3x4xf32>"}, nnT(ir.F32, 3, 4))
		nnInferErr(t, name, ir.A("axis", 1), []string{"axis 1", "tensor<f32>"}, nnT(ir.F32))
		nnInferErr(t, name, nil, []string{"tensor<3x4xi32>", "f32 or f64"}, nnT(ir.I32, 3, 4))
		nnInferErr(t, name, ir.A("axis", 0.5), []string{"axis"}, nnT(ir.F32, 3, 4))
	}
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F32, 2, 5)
	if y, z := ops.Softmax(b, x, -1), ops.LogSoftmax(b, x, 0); b.Err() != nil || y.Type().String() != "tensor<2x5xf32>" || z == y {
		t.Fatal(b.Err())
	}
}

func TestNNSoftmaxOOMSweep(t *testing.T) {
	a := memory.New(memory.Options{})
	x := randTensor(t, a, rand.New(rand.NewPCG(3, 4)), tensor.F64, 5, 7)
	checkOOMSweep(t, "softmax", nil, x)
	checkOOMSweep(t, "log_softmax", ir.A("axis", 0), x)
	release(x)
}
