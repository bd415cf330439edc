package ops_test

import (
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Helpers of the neural-network op tests (matmul, conv, pool, norm,
// dropout, softmax, losses).

var nnDTypes = []tensor.DType{tensor.F32, tensor.F64}

// nnTol is the comparison tolerance for dt.
func nnTol(dt tensor.DType) float64 {
	if dt == tensor.F32 {
		return 1e-4
	}
	return 1e-10
}

// nnDebug turns tensor debug mode on for one test.
func nnDebug(t *testing.T) {
	prev := tensor.Debug()
	tensor.SetDebug(true)
	t.Cleanup(func() { tensor.SetDebug(prev) })
}

// nnVals returns every element of x as float64.
func nnVals(x *tensor.Tensor) []float64 {
	v := make([]float64, x.Len())
	for i := range v {
		v[i] = x.Float64At(i)
	}
	return v
}

func nnSize(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// nnFrom makes a tensor of dtype dt holding data.
func nnFrom(t testing.TB, a *memory.Allocator, dt tensor.DType, data []float64, shape ...int) *tensor.Tensor {
	t.Helper()
	x, err := tensor.New(a, dt, shape...)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range data {
		switch dt {
		case tensor.F32:
			x.F32()[i] = float32(v)
		case tensor.F64:
			x.F64()[i] = v
		case tensor.I32:
			x.I32()[i] = int32(v)
		case tensor.I64:
			x.I64()[i] = int64(v)
		}
	}
	return x
}

// nnRunThreads runs the op with a given thread count (runOp uses 2).
func nnRunThreads(t testing.TB, a *memory.Allocator, threads int, name string, attrs ir.Attrs, in ...*tensor.Tensor) []*tensor.Tensor {
	t.Helper()
	types := make([]ir.Type, len(in))
	for i, x := range in {
		types[i] = ir.TensorOf(ir.DType(x.DType()), x.Shape()...)
	}
	op, err := buildOp(t, name, attrs, types...)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ops.Bind(op)
	if err != nil {
		t.Fatal(err)
	}
	outs, err := k(&ops.Ctx{Alloc: a, Threads: threads, Seed: 1}, in)
	if err != nil {
		t.Fatalf("%s with %d threads: %v", name, threads, err)
	}
	return outs
}

// nnSameBits fails unless got and want hold bitwise identical elements.
func nnSameBits(t testing.TB, what string, got, want *tensor.Tensor) {
	t.Helper()
	g, w := got.Raw(), want.Raw()
	if len(g) != len(w) {
		t.Fatalf("%s: %d bytes, want %d", what, len(g), len(w))
	}
	for i := range g {
		if g[i] != w[i] {
			t.Fatalf("%s: byte %d differs (%v vs %v)", what, i, got, want)
		}
	}
}

// nnInferErr builds the op on the given types and checks that it fails
// with a message that contains every string of want.
func nnInferErr(t *testing.T, name string, attrs ir.Attrs, want []string, in ...ir.Type) {
	t.Helper()
	_, err := buildOp(t, name, attrs, in...)
	if err == nil {
		t.Fatalf("%s %v on %v: no error, want one mentioning %q", name, attrs, in, want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("%s %v on %v: error %q does not mention %q", name, attrs, in, err, w)
		}
	}
}

// nnInferOK builds the op and returns its result types.
func nnInferOK(t *testing.T, name string, attrs ir.Attrs, in ...ir.Type) []ir.Type {
	t.Helper()
	op, err := buildOp(t, name, attrs, in...)
	if err != nil {
		t.Fatalf("%s %v on %v: %v", name, attrs, in, err)
	}
	types := make([]ir.Type, op.NumResults())
	for i := range types {
		types[i] = op.Result(i).Type()
	}
	return types
}

// nnT is ir.TensorOf.
func nnT(dt ir.DType, dims ...int) ir.Type { return ir.TensorOf(dt, dims...) }

// nnRandDims draws n dims from choices.
func nnRandDims(r *rand.Rand, n int, choices ...int) []int {
	d := make([]int, n)
	for i := range d {
		d[i] = choices[r.IntN(len(choices))]
	}
	return d
}

// nnClose compares float slices with a relative tolerance.
func nnClose(t testing.TB, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if math.IsNaN(g) && math.IsNaN(w) || g == w {
			continue
		}
		if !(math.Abs(g-w) <= tol*(1+math.Abs(w))) {
			t.Fatalf("%s: element %d = %v, want %v", what, i, g, w)
		}
	}
}

// nnBenchThreads is the thread count of the benchmarks: GOMAXPROCS.
func nnBenchThreads() int { return runtime.GOMAXPROCS(0) }
