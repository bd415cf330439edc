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

// Tests of the reductions over run-time axes (dyn_reduce.go) against a
// naive reference.

// dynRefReduce reduces x's elements vals of the given shape over axes
// (normalized) with op "sum", "mean", "max" or "min"; it returns the
// result with the reduced dims kept as 1.
func dynRefReduce(op string, vals []float64, shape, axes []int) ([]float64, []int) {
	out := slices.Clone(shape)
	for _, a := range axes {
		out[a] = 1
	}
	acc := make([]float64, shpSize(out))
	cnt := make([]int, len(acc))
	for i := range acc {
		switch op {
		case "max":
			acc[i] = math.Inf(-1)
		case "min":
			acc[i] = math.Inf(1)
		}
	}
	for p, v := range vals {
		idx := shpUnravel(p, shape)
		for _, a := range axes {
			idx[a] = 0
		}
		q := shpRavel(idx, out)
		cnt[q]++
		switch op {
		case "sum", "mean":
			acc[q] += v
		case "max":
			acc[q] = max(acc[q], v)
		case "min":
			acc[q] = min(acc[q], v)
		}
	}
	if op == "mean" {
		for i := range acc {
			acc[i] /= float64(cnt[i])
		}
	}
	return acc, out
}

func TestDynReduce(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 10))
	a := memory.New(memory.Options{})
	for _, op := range []string{"sum", "mean", "max", "min"} {
		name := "reduce_" + op + "_dyn"
		dts := []tensor.DType{tensor.F32, tensor.F64, tensor.I32, tensor.I64}
		if op == "mean" {
			dts = dts[:2]
		}
		for _, dt := range dts {
			for range 25 {
				shape := shpShape(r, r.IntN(4))
				for i := range shape {
					if op == "max" || op == "min" {
						shape[i] = max(shape[i], 1)
					}
				}
				k := r.IntN(len(shape) + 1)
				norm := r.Perm(len(shape))[:k]
				axes := make([]int64, k)
				for i, p := range norm {
					axes[i] = int64(p - len(shape)*r.IntN(2))
				}
				if k == 0 { // every axis
					norm = dynAllAxesRef(len(shape))
				}
				x := randTensor(t, a, r, dt, shape...)
				want, kept := dynRefReduce(op, shpVals(x), shape, norm)
				av := dynVec(t, tensor.I64, axes...)
				for _, keep := range []bool{false, true} {
					out := kept
					if !keep {
						out = nil
						for i, d := range shape {
							if !slices.Contains(norm, i) {
								out = append(out, d)
							}
						}
					}
					y := dynRun(t, a, name, ir.A("keepdim", keep), x, av)[0]
					closeEnough(t, fmt.Sprintf("%s %v axes %v keepdim %v", name, shape, axes, keep), y, want, out, 1e-6)
					y.Release()
				}
				// noop_with_empty_axes: the result is x itself.
				if k == 0 {
					y := dynRun(t, a, name, ir.A("noop_with_empty_axes", true), x, av)[0]
					if y.Storage() != x.Storage() {
						t.Fatalf("%s with no axes and noop_with_empty_axes: not x", name)
					}
					y.Release()
				}
				release(x, av)
			}
		}
	}
	wantAllocated(t, a, 0)

	x := randTensor(t, a, r, tensor.F32, 2, 0, 3)
	for _, c := range []struct {
		name string
		axes []int64
		err  string
	}{
		{"reduce_sum_dyn", []int64{0, -3}, "appears twice"},
		{"reduce_sum_dyn", []int64{3}, "out of range"},
		{"reduce_max_dyn", []int64{1}, "size-0"},
	} {
		av := dynVec(t, tensor.I32, c.axes...)
		dynWantKernelErr(t, a, c.name, nil, []*tensor.Tensor{x, av}, c.err)
		av.Release()
	}
	x.Release()
	wantAllocated(t, a, 0)

	// Types: a result dim is static when every choice of axes gives it.
	i64 := func(n int) ir.Type { return shpT(ir.I64, n) }
	dynInferType(t, "reduce_sum_dyn", nil, shpT(ir.F32, -1), shpT(ir.F32, 2, 3), i64(1))
	dynInferType(t, "reduce_sum_dyn", nil, shpT(ir.F32, 2), shpT(ir.F32, 2, 2), i64(1))
	dynInferType(t, "reduce_sum_dyn", ir.A("keepdim", true), shpT(ir.F32, 1, -1), shpT(ir.F32, 1, 3), i64(1))
	dynInferType(t, "reduce_sum_dyn", ir.A("keepdim", true), shpT(ir.F32, 1, 1), shpT(ir.F32, 5, 3), i64(2))
	dynInferType(t, "reduce_max_dyn", nil, shpT(ir.I32), shpT(ir.I32, 5, 3), i64(2))
	dynInferType(t, "reduce_mean_dyn", nil, shpT(ir.F64), shpT(ir.F64, 5, 3), i64(0))
	dynInferType(t, "reduce_min_dyn", ir.A("noop_with_empty_axes", true), shpT(ir.F64, 5, -1), shpT(ir.F64, 5, -1), i64(0))
	shpWantErr(t, "reduce_sum_dyn", nil, []ir.Type{shpT(ir.F32, 2), i64(2)}, "more axes")
	shpWantErr(t, "reduce_mean_dyn", nil, []ir.Type{shpT(ir.I64, 2), i64(1)}, "want f32 or f64")
	shpWantErr(t, "reduce_sum_dyn", nil, []ir.Type{shpT(ir.F32, 2), i64(-1)}, "static length")
	shpWantErr(t, "reduce_sum_dyn", ir.A("keepdim", 1.5), []ir.Type{shpT(ir.F32, 2), i64(1)}, "keepdim")
	b := ir.NewBuilder(ir.NewProgram())
	v := ops.ReduceDyn(b, "reduce_sum_dyn", ops.Data(b, "x", ir.F32, 4, 4), ops.Data(b, "a", ir.I64, 1), false, false)
	if !v.Type().Equal(shpT(ir.F32, 4)) || b.Err() != nil {
		t.Fatalf("ReduceDyn: %v %v", v.Type(), b.Err())
	}
}

// dynAllAxesRef lists 0..r-1.
func dynAllAxesRef(r int) []int {
	out := make([]int, r)
	for i := range out {
		out[i] = i
	}
	return out
}
