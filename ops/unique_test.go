package ops_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Tests of unique (unique.go) against a naive reference: slices compared
// as lists of numbers, distinct ones found by a linear scan, then sorted.

// uniqueRef returns unique's four results for x's values vals of shape
// dims, along axis (or flattened when axis < 0).
func uniqueRef(vals []float64, dims []int, axis int, sorted bool) (y []float64, ydims []int, first, inverse, counts []int64) {
	outer, n, inner := 1, len(vals), 1
	if axis >= 0 {
		outer, n, inner = shpSize(dims[:axis]), dims[axis], shpSize(dims[axis+1:])
	}
	slice := func(i int) []float64 {
		var s []float64
		for o := range outer {
			s = append(s, vals[(o*n+i)*inner:(o*n+i+1)*inner]...)
		}
		return s
	}
	var distinct [][]float64
	inverse = make([]int64, n)
	for i := range n {
		s := slice(i)
		k := slices.IndexFunc(distinct, func(d []float64) bool { return slices.Equal(d, s) })
		if k < 0 {
			k = len(distinct)
			distinct = append(distinct, s)
			first = append(first, int64(i))
			counts = append(counts, 0)
		}
		counts[k]++
		inverse[i] = int64(k)
	}
	perm := make([]int, len(distinct)) // perm[r]: the distinct one at rank r
	for k := range perm {
		perm[k] = k
	}
	if sorted {
		sort.SliceStable(perm, func(a, b int) bool { return slices.Compare(distinct[perm[a]], distinct[perm[b]]) < 0 })
	}
	rank := make([]int64, len(perm))
	f2, c2 := make([]int64, len(perm)), make([]int64, len(perm))
	for r, k := range perm {
		rank[k], f2[r], c2[r] = int64(r), first[k], counts[k]
	}
	for i := range inverse {
		inverse[i] = rank[inverse[i]]
	}
	u := len(perm)
	y = make([]float64, outer*u*inner)
	for o := range outer {
		for r, k := range perm {
			copy(y[(o*u+r)*inner:(o*u+r+1)*inner], vals[(o*n+int(first[k]))*inner:(o*n+int(first[k])+1)*inner])
		}
	}
	ydims = []int{u}
	if axis >= 0 {
		ydims = slices.Clone(dims)
		ydims[axis] = u
	}
	return y, ydims, f2, inverse, c2
}

func int64sAsFloats(xs []int64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}

func TestUnique(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	a := memory.New(memory.Options{})
	for _, dt := range []tensor.DType{tensor.F32, tensor.F64, tensor.I32, tensor.I64, tensor.Bool} {
		for range 40 {
			shape := shpShape(r, 1+r.IntN(3))
			x := randTensor(t, a, r, dt, shape...)
			// Few distinct values, so that slices repeat.
			for p := range x.Len() {
				if dt != tensor.Bool {
					x.SetFloat64At(p, float64(r.IntN(3)-1))
				}
			}
			axis := r.IntN(len(shape)+1) - 1 // -1: flattened
			sorted := r.IntN(2) == 0
			attrs := ir.A("sorted", sorted)
			if axis >= 0 {
				attrs = attrs.With("axis", ir.Int(axis-len(shape)*r.IntN(2))) // negative too
			}
			y, ydims, first, inverse, counts := uniqueRef(nnVals(x), shape, axis, sorted)
			out := mustRun(t, a, "unique", attrs, x)
			what := "unique " + x.Type() + " " + attrs.String()
			closeEnough(t, what+" y", out[0], y, ydims, 0)
			closeEnough(t, what+" indices", out[1], int64sAsFloats(first), []int{len(first)}, 0)
			closeEnough(t, what+" inverse", out[2], int64sAsFloats(inverse), []int{len(inverse)}, 0)
			closeEnough(t, what+" counts", out[3], int64sAsFloats(counts), []int{len(counts)}, 0)
			release(out...)
			release(x)
		}
	}
	// numpy: np.unique([2, 1, 1, 3, 4, 3], True, True, True) and the
	// slices of ONNX's 3-D case along axis 1.
	x, _ := tensor.FromF32(a, []float32{2, 1, 1, 3, 4, 3}, 6)
	out := mustRun(t, a, "unique", nil, x)
	closeEnough(t, "numpy y", out[0], []float64{1, 2, 3, 4}, []int{4}, 0)
	closeEnough(t, "numpy indices", out[1], []float64{1, 0, 3, 4}, []int{4}, 0)
	closeEnough(t, "numpy inverse", out[2], []float64{1, 0, 0, 2, 3, 2}, []int{6}, 0)
	closeEnough(t, "numpy counts", out[3], []float64{2, 1, 2, 1}, []int{4}, 0)
	release(out...)
	release(x)
	x, _ = tensor.FromF32(a, []float32{1, 1, 0, 1, 2, 1, 0, 1, 1, 1, 0, 1, 2, 1, 0, 1}, 2, 4, 2)
	out = mustRun(t, a, "unique", ir.A("axis", 1), x)
	closeEnough(t, "numpy axis y", out[0], []float64{0, 1, 1, 1, 2, 1, 0, 1, 1, 1, 2, 1}, []int{2, 3, 2}, 0)
	closeEnough(t, "numpy axis indices", out[1], []float64{1, 0, 2}, []int{3}, 0)
	closeEnough(t, "numpy axis inverse", out[2], []float64{1, 0, 2, 0}, []int{4}, 0)
	release(out...)
	release(x)
	// −0 and +0 are one value, represented by the first.
	x, _ = tensor.FromF64(a, []float64{0, math.Copysign(0, -1), 1}, 3)
	out = mustRun(t, a, "unique", ir.A("sorted", false), x)
	if out[0].Len() != 2 || math.Signbit(out[0].F64()[0]) {
		t.Fatalf("unique of 0, −0, 1: %v", out[0].F64())
	}
	release(out...)
	release(x)
	wantAllocated(t, a, 0)
}

func TestUniqueErrorsAndMemory(t *testing.T) {
	for _, c := range []struct {
		attrs ir.Attrs
		in    ir.Type
		want  string
	}{
		{ir.A("axis", 2), shpT(ir.F32, 2, 3), "out of range"},
		{ir.A("axis", 0), shpT(ir.F32), "rank"},
		{ir.A("sorted", "yes"), shpT(ir.F32, 2), "sorted"},
	} {
		shpWantErr(t, "unique", c.attrs, []ir.Type{c.in}, c.want)
	}
	a := memory.New(memory.Options{})
	nan, _ := tensor.FromF32(a, []float32{1, float32(math.NaN())}, 2)
	r := rand.New(rand.NewPCG(1, 1))
	x := randTensor(t, a, r, tensor.I64, 4, 30)
	for p := range x.Len() {
		x.I64()[p] %= 3
	}
	base := a.Stats().Allocated.Current
	for range 50 {
		if _, err := runOp(t, a, "unique", nil, nan); err == nil || !strings.Contains(err.Error(), "NaN") {
			t.Fatalf("unique of NaN: %v", err)
		}
		out := mustRun(t, a, "unique", ir.A("axis", 1), x)
		release(out...)
		wantAllocated(t, a, base)
	}
	checkOOMSweep(t, "unique", ir.A("axis", 1), x)
	release(nan, x)
	wantAllocated(t, a, 0)

	b := ir.NewBuilder(ir.NewProgram())
	xv := ops.Data(b, "x", ir.F64, 4)
	y, _, _, _ := ops.Unique(b, xv, 0, false, true)
	if _, err := autodiff.Backward(b, ops.ReduceSum(b, y, nil, false), []*ir.Value{xv}); err == nil || !strings.Contains(err.Error(), "gradients of unique are not implemented") {
		t.Fatalf("differentiating unique: %v", err)
	}
}
