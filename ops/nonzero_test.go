package ops_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Tests of nonzero (nonzero.go) against a naive reference.

// nzRef lists the multi-indices of x's nonzero elements as the op's
// [rank, n] result.
func nzRef(x *tensor.Tensor) ([]float64, []int) {
	var cols [][]int
	for p := range x.Len() {
		if v := x.Float64At(p); v != 0 || math.IsNaN(v) {
			cols = append(cols, shpUnravel(p, x.Shape()))
		}
	}
	r := x.Rank()
	want := make([]float64, r*len(cols))
	for t, at := range cols {
		for d, i := range at {
			want[d*len(cols)+t] = float64(i)
		}
	}
	return want, []int{r, len(cols)}
}

func TestNonzero(t *testing.T) {
	shpDebug(t)
	r := rand.New(rand.NewPCG(91, 92))
	a := memory.New(memory.Options{})
	for _, dt := range shpDTypes {
		for range 30 {
			x := randTensor(t, a, r, dt, shpShape(r, 1+r.IntN(4))...)
			// Make zeros common.
			for p := range x.Len() {
				if r.IntN(2) == 0 {
					x.SetFloat64At(p, 0)
				}
			}
			want, shape := nzRef(x)
			y := mustRun(t, a, "nonzero", nil, x)[0]
			closeEnough(t, "nonzero "+x.Type(), y, want, shape, 0)
			release(y, x)
		}
	}
	// NaN counts, −0 does not.
	x, _ := tensor.FromF32(a, []float32{float32(math.Copysign(0, -1)), float32(math.NaN()), 0, 1}, 2, 2)
	y := mustRun(t, a, "nonzero", nil, x)[0]
	closeEnough(t, "nonzero NaN", y, []float64{0, 1, 1, 1}, []int{2, 2}, 0)
	release(x, y)
	wantAllocated(t, a, 0)
}

// TestNonzeroThreads splits a large operand over several parts; the result
// must not depend on the thread count.
func TestNonzeroThreads(t *testing.T) {
	r := rand.New(rand.NewPCG(93, 94))
	a := memory.New(memory.Options{})
	x := randTensor(t, a, r, tensor.I32, 3, 257, 301)
	want, shape := nzRef(x)
	var first []int64
	for threads := 1; threads <= 4; threads++ {
		y := shpRunThreads(t, a, threads, "nonzero", nil, shpTypes(false, x), x)[0]
		closeEnough(t, "nonzero threads", y, want, shape, 0)
		if first == nil {
			first = slices.Clone(y.I64())
		} else if !slices.Equal(first, y.I64()) {
			t.Fatalf("threads %d: the result differs", threads)
		}
		y.Release()
	}
	x.Release()
	wantAllocated(t, a, 0)
}

func TestNonzeroErrorsAndMemory(t *testing.T) {
	shpDebug(t)
	shpWantErr(t, "nonzero", nil, []ir.Type{shpT(ir.F32)}, "scalar")
	shpWantErr(t, "nonzero", nil, []ir.Type{shpT(ir.F32, 2), shpT(ir.F32, 2)}, "1 operands")
	r := rand.New(rand.NewPCG(95, 96))
	x := randTensor(t, host, r, tensor.F64, 7, 11)
	if n := shpOOMSweep(t, "nonzero", nil, x); n < 2 {
		t.Fatalf("nonzero failed under %d limits", n)
	}
	a := memory.New(memory.Options{})
	for range 100 {
		release(mustRun(t, a, "nonzero", nil, x)...)
	}
	x.Release()
	wantAllocated(t, a, 0)
	b := ir.NewBuilder(ir.NewProgram())
	v := ops.Nonzero(b, ops.Data(b, "c", ir.I1, -1, 3, 2))
	if !v.Type().Equal(shpT(ir.I64, 3, -1)) || b.Err() != nil {
		t.Fatalf("Nonzero: %v %v", v.Type(), b.Err())
	}
}
