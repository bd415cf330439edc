package ops_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Tests of cumsum (cumsum.go) against a naive reference.

// cumRef is the running sum of x along axis, in float64 (exact for the
// small integers of randTensor), wrapped to dt's width for integers.
func cumRef(x *tensor.Tensor, axis int, exclusive, reverse bool) []float64 {
	shape := x.Shape()
	vals := shpVals(x)
	want := make([]float64, len(vals))
	for p := range want {
		idx := shpUnravel(p, shape)
		k := idx[axis]
		var s float64
		for i := range shape[axis] {
			take := i <= k
			if reverse {
				take = i >= k
			}
			if exclusive && i == k {
				take = false
			}
			if take {
				idx[axis] = i
				s += vals[shpRavel(idx, shape)]
			}
		}
		if x.DType() == tensor.I32 {
			s = float64(int32(int64(s)))
		}
		want[p] = s
	}
	return want
}

func TestCumSum(t *testing.T) {
	shpDebug(t)
	r := rand.New(rand.NewPCG(61, 62))
	a := memory.New(memory.Options{})
	for _, dt := range []tensor.DType{tensor.F32, tensor.F64, tensor.I32, tensor.I64} {
		for range 40 {
			shape := shpShape(r, 1+r.IntN(4))
			axis := r.IntN(len(shape))
			if r.IntN(2) == 0 {
				axis -= len(shape)
			}
			ex, rev := r.IntN(2) == 0, r.IntN(2) == 0
			x := randTensor(t, a, r, dt, shape...)
			ax := axis
			if ax < 0 {
				ax += len(shape)
			}
			want := cumRef(x, ax, ex, rev)
			what := fmt.Sprintf("cumsum %v axis %d exclusive %v reverse %v", x.Type(), axis, ex, rev)
			y := mustRun(t, a, "cumsum", ir.A("axis", axis, "exclusive", ex, "reverse", rev), x)[0]
			closeEnough(t, what, y, want, shape, 1e-6)
			y.Release()
			// The same with the axis as an operand, i32 or i64.
			adt := []tensor.DType{tensor.I32, tensor.I64}[r.IntN(2)]
			at := cumScalar(t, adt, int64(axis))
			if r.IntN(2) == 0 {
				at.Release()
				at = shpIdx(t, adt, []int64{int64(axis)})
			}
			y = mustRun(t, a, "cumsum", ir.A("exclusive", ex, "reverse", rev), x, at)[0]
			closeEnough(t, what+" (axis operand)", y, want, shape, 1e-6)
			release(y, x, at)
		}
	}
	wantAllocated(t, a, 0)
}

// cumScalar makes a rank-0 integer tensor.
func cumScalar(t testing.TB, dt tensor.DType, v int64) *tensor.Tensor {
	t.Helper()
	x, err := tensor.Scalar(host, dt, float64(v))
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// TestCumSumLarge covers rows wider than a work unit's accumulators and
// checks that the result does not depend on the thread count; f32 sums
// accumulate in f64, integer sums wrap.
func TestCumSumLarge(t *testing.T) {
	r := rand.New(rand.NewPCG(63, 64))
	a := memory.New(memory.Options{})
	x := randTensor(t, a, r, tensor.F32, 3, 301, 700)
	want := cumRef(x, 1, false, true)
	var first []float32
	for threads := 1; threads <= 4; threads++ {
		y := shpRunThreads(t, a, threads, "cumsum", ir.A("axis", 1, "reverse", true), shpTypes(false, x), x)[0]
		closeEnough(t, "cumsum large", y, want, x.Shape(), 1e-6)
		if first == nil {
			first = slices.Clone(y.F32())
		} else if !slices.Equal(first, y.F32()) {
			t.Fatalf("threads %d: the result differs", threads)
		}
		y.Release()
	}
	x.Release()
	// f32: 2^24 + 1 + 1 is exact in f64 before rounding back.
	f, _ := tensor.FromF32(a, []float32{1 << 24, 1, 1}, 3)
	y := mustRun(t, a, "cumsum", ir.A("axis", 0), f)[0]
	if got := y.F32(); got[2] != 1<<24+2 {
		t.Fatalf("f32 cumsum = %v, want the last sum exact", got)
	}
	release(f, y)
	i, _ := tensor.FromI32(a, []int32{math.MaxInt32, 1, 1}, 3)
	y = mustRun(t, a, "cumsum", ir.A("axis", 0, "exclusive", true), i)[0]
	if got := y.I32(); !slices.Equal(got, []int32{0, math.MaxInt32, math.MinInt32}) {
		t.Fatalf("i32 cumsum = %v, want wrapping", got)
	}
	release(i, y)
	wantAllocated(t, a, 0)
}

func TestCumSumErrors(t *testing.T) {
	shpDebug(t)
	f := shpT(ir.F32, 2, 3)
	for _, c := range []struct {
		attrs ir.Attrs
		in    []ir.Type
		want  string
	}{
		{ir.A("axis", 2), []ir.Type{f}, "axis 2"},
		{ir.A("axis", -3), []ir.Type{f}, "axis -3"},
		{nil, []ir.Type{f}, "axis"},
		{ir.A("axis", 0), []ir.Type{shpT(ir.I1, 2)}, "i1"},
		{ir.A("axis", 0), []ir.Type{shpT(ir.F32)}, "scalar"},
		{ir.A("axis", 0), []ir.Type{f, shpT(ir.I64)}, "not both"},
		{nil, []ir.Type{f, shpT(ir.F32)}, "axis tensor<f32>"},
		{nil, []ir.Type{f, shpT(ir.I64, 2)}, "i64 scalar"},
		{ir.A("axis", 0, "reverse", 1), []ir.Type{f}, "reverse"},
		{ir.A("axis", 0), []ir.Type{f, f, f}, "1 or 2 operands"},
	} {
		shpWantErr(t, "cumsum", c.attrs, c.in, c.want)
	}
	// A run-time axis out of range, or of the wrong length, is a kernel
	// error that leaves nothing allocated; so is every step of an OOM
	// sweep. Repeat them to see that memory stays flat.
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(65, 66))
	x := randTensor(t, a, r, tensor.F64, 2, 3)
	for range 50 {
		for _, ax := range []int64{2, -3} {
			at := cumScalar(t, tensor.I64, ax)
			shpWantKernelErr(t, a, "cumsum", nil, []ir.Type{shpT(ir.F64, 2, 3), shpT(ir.I64)}, []*tensor.Tensor{x, at}, fmt.Sprintf("axis %d", ax))
			at.Release()
		}
		two := shpIdx(t, tensor.I32, []int64{0, 1})
		shpWantKernelErr(t, a, "cumsum", nil, []ir.Type{shpT(ir.F64, 2, 3), shpT(ir.I32, -1)}, []*tensor.Tensor{x, two}, "one integer")
		two.Release()
		y := mustRun(t, a, "cumsum", ir.A("axis", -1), x)[0]
		y.Release()
	}
	x.Release()
	wantAllocated(t, a, 0)
	x = randTensor(t, host, r, tensor.F32, 7, 11)
	if n := shpOOMSweep(t, "cumsum", ir.A("axis", 1), x); n < 4 {
		t.Fatalf("cumsum failed under %d limits", n)
	}
	x.Release()
	b := ir.NewBuilder(ir.NewProgram())
	d := ops.Data(b, "x", ir.I32, 3, -1)
	u := ops.CumSum(b, d, 1, true, false)
	v := ops.CumSumAt(b, d, ops.Data(b, "a", ir.I64), false, true)
	if !u.Type().Equal(shpT(ir.I32, 3, -1)) || !v.Type().Equal(shpT(ir.I32, 3, -1)) || b.Err() != nil {
		t.Fatalf("builders: %v %v %v", u.Type(), v.Type(), b.Err())
	}
}

func TestCumSumGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(67, 68))
	for _, ex := range []bool{false, true} {
		for _, rev := range []bool{false, true} {
			x := f64Rand(t, r, -1, 1, 3, 4, 2)
			checkOpGrad(t, "cumsum", ir.A("axis", 1, "exclusive", ex, "reverse", rev), x)
			ax := cumScalar(t, tensor.I32, -1)
			for mode := range shpModeNames {
				shpCheckGrad(t, mode, shpGradCase{name: "cumsum", attrs: ir.A("exclusive", ex, "reverse", rev), in: []*tensor.Tensor{x, ax}, dyn: [][]int{{0, 2}}})
			}
			release(x, ax)
		}
	}
}
