package ops_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Helpers of the elementwise, unary, comparison, cast and reduction tests.

var ewAllDTypes = []tensor.DType{tensor.F32, tensor.F64, tensor.I32, tensor.I64, tensor.Bool}
var ewNumDTypes = []tensor.DType{tensor.F32, tensor.F64, tensor.I32, tensor.I64}
var ewFloatDTypes = []tensor.DType{tensor.F32, tensor.F64}

// ewPairs are broadcasting shape pairs: equal shapes, scalars, rows,
// columns, size-0 and size-1 dims, primes, and sizes large enough to be
// split over goroutines.
var ewPairs = [][2][]int{
	{{}, {}},
	{{7}, {}},
	{{}, {5}},
	{{1}, {1}},
	{{3, 5}, {3, 5}},
	{{3, 5}, {5}},
	{{5}, {3, 5}},
	{{3, 5}, {3, 1}},
	{{3, 1}, {1, 5}},
	{{2, 3, 1, 7}, {3, 5, 1}},
	{{0, 3}, {3}},
	{{4, 0}, {1}},
	{{0}, {}},
	{{13, 1, 11}, {1, 7, 11}},
	{{1, 17, 1}, {19, 1, 1}},
	{{211, 331}, {331}},
	{{331, 211}, {331, 1}},
	{{70001}, {70001}},
	{{2, 35003}, {}},
}

// ewTriples are three-way broadcasting cases for where.
var ewTriples = [][3][]int{
	{{}, {}, {}},
	{{4}, {4}, {4}},
	{{3, 1}, {1, 4}, {}},
	{{1}, {2, 3}, {3}},
	{{2, 1, 5}, {3, 1}, {1, 1, 1}},
	{{0, 2}, {2}, {1, 2}},
	{{211, 1}, {331}, {211, 331}},
	{{70001}, {}, {70001}},
}

// ewOut is the broadcast of shapes (the tests' own implementation).
func ewOut(shapes ...[]int) []int {
	n := 0
	for _, s := range shapes {
		n = max(n, len(s))
	}
	out := make([]int, n)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		for i, d := range s {
			if j := n - len(s) + i; d != 1 {
				out[j] = d
			}
		}
	}
	return out
}

// ewIndex maps flat index i of outShape to the flat index of an operand of
// shape s broadcast to it.
func ewIndex(outShape, s []int, i int) int {
	idx, stride := 0, 1
	for d := len(outShape) - 1; d >= 0; d-- {
		c := i % outShape[d]
		i /= outShape[d]
		j := d - (len(outShape) - len(s))
		if j < 0 {
			continue
		}
		if s[j] != 1 {
			idx += c * stride
		}
		stride *= s[j]
	}
	return idx
}

func ewNumel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// ewVals returns the elements of x as float64s.
func ewVals(x *tensor.Tensor) []float64 {
	v := make([]float64, x.Len())
	for i := range v {
		v[i] = x.Float64At(i)
	}
	return v
}

// ewRound rounds v as storing it in dt would (floats), or truncates it
// like a Go conversion (integers).
func ewRound(dt tensor.DType, v float64) float64 {
	switch dt {
	case tensor.F32:
		return float64(float32(v))
	case tensor.I32:
		return float64(int32(v))
	case tensor.I64:
		return float64(int64(v))
	case tensor.Bool:
		if v != 0 {
			return 1
		}
		return 0
	}
	return v
}

// ewTol is the relative tolerance of results of dtype dt.
func ewTol(dt tensor.DType) float64 {
	switch dt {
	case tensor.F32:
		return 2e-6
	case tensor.F64:
		return 1e-13
	}
	return 0
}

// ewInferErr asserts that building op name on operand types in fails with
// an error containing every string of want.
func ewInferErr(t *testing.T, name string, attrs ir.Attrs, want []string, in ...ir.Type) {
	t.Helper()
	_, err := buildOp(t, name, attrs, in...)
	if err == nil {
		t.Fatalf("%s%s on %v: no error, want %q", name, attrs, in, want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("%s%s on %v: error %q does not mention %q", name, attrs, in, err, w)
		}
	}
}

// ewInferType asserts that op name on in infers want.
func ewInferType(t *testing.T, name string, attrs ir.Attrs, want ir.Type, in ...ir.Type) {
	t.Helper()
	op, err := buildOp(t, name, attrs, in...)
	if err != nil {
		t.Fatalf("%s on %v: %v", name, in, err)
	}
	if got := op.Result(0).Type(); !got.Equal(want) {
		t.Fatalf("%s on %v: type %s, want %s", name, in, got, want)
	}
}

// ewRunDynamic binds op name for the operand types in (which may have
// dynamic dims) and runs it on the tensors xs.
func ewRunDynamic(t *testing.T, a *memory.Allocator, name string, attrs ir.Attrs, in []ir.Type, xs ...*tensor.Tensor) ([]*tensor.Tensor, error) {
	t.Helper()
	op, err := buildOp(t, name, attrs, in...)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ops.Bind(op)
	if err != nil {
		t.Fatal(err)
	}
	return k(&ops.Ctx{Alloc: a, Threads: 2}, xs)
}

// ewNew returns a random tensor; ints avoid zero if nonzero is set.
func ewNew(t testing.TB, a *memory.Allocator, r *rand.Rand, dt tensor.DType, nonzero bool, shape []int) *tensor.Tensor {
	t.Helper()
	x := randTensor(t, a, r, dt, shape...)
	if nonzero {
		switch dt {
		case tensor.I32:
			for i, v := range x.I32() {
				if v == 0 {
					x.I32()[i] = 3
				}
			}
		case tensor.I64:
			for i, v := range x.I64() {
				if v == 0 {
					x.I64()[i] = -2
				}
			}
		}
	}
	return x
}

// ewDebug turns tensor debug mode on for the test.
func ewDebug(t *testing.T) {
	prev := tensor.Debug()
	tensor.SetDebug(true)
	t.Cleanup(func() { tensor.SetDebug(prev) })
}

func ewNaN(v float64) bool { return math.IsNaN(v) }
