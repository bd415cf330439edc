package ops_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Tests of slice_dyn, slice_dyn_grad and split_dyn (dyn_index.go), against
// the numpy reference of index_test.go and naive copies.

// dynSliceOperands makes the index operands of slice_dyn: starts, ends,
// then axes when withAxes, then steps when withSteps.
func dynSliceOperands(t testing.TB, dt tensor.DType, axes, starts, ends, steps []int, withAxes, withSteps bool) []*tensor.Tensor {
	t.Helper()
	vec := func(xs []int) *tensor.Tensor {
		vs := make([]int64, len(xs))
		for i, x := range xs {
			vs[i] = int64(x)
		}
		return dynVec(t, dt, vs...)
	}
	out := []*tensor.Tensor{vec(starts), vec(ends)}
	if withAxes {
		out = append(out, vec(axes))
	}
	if withSteps {
		out = append(out, vec(steps))
	}
	return out
}

func TestDynSlice(t *testing.T) {
	shpDebug(t)
	r := rand.New(rand.NewPCG(5, 5))
	a := memory.New(memory.Options{})
	check := func(dt tensor.DType, shape []int, threads int) {
		t.Helper()
		axes, starts, ends, steps := shpRandSlice(r, shape)
		withAxes, withSteps := true, r.IntN(2) == 0
		if !withSteps {
			for i := range steps {
				steps[i] = 1
			}
		}
		if r.IntN(4) == 0 { // the first axes, in order, left out
			withAxes = false
			for i := range axes {
				axes[i] = i
			}
			withSteps = false
			for i := range steps {
				steps[i] = 1
			}
		}
		sel := shpSliceSel(shape, axes, starts, ends, steps)
		out := make([]int, len(shape))
		for i, s := range sel {
			out[i] = len(s)
		}
		x := randTensor(t, a, r, dt, shape...)
		xs := shpVals(x)
		want := shpRef(xs, out, func(idx []int) int {
			src := make([]int, len(idx))
			for i, j := range idx {
				src[i] = sel[i][j]
			}
			return shpRavel(src, shape)
		})
		idt := []tensor.DType{tensor.I32, tensor.I64}[r.IntN(2)]
		in := append([]*tensor.Tensor{x}, dynSliceOperands(t, idt, axes, starts, ends, steps, withAxes, withSteps)...)
		what := fmt.Sprintf("slice_dyn %v axes %v starts %v ends %v steps %v", shape, axes, starts, ends, steps)
		y := shpRunThreads(t, a, threads, "slice_dyn", ir.A("dims", out), shpTypes(false, in...), in...)[0]
		closeEnough(t, what, y, want, out, 0)
		y.Release()
		// With dynamic types for every operand.
		y = shpRunThreads(t, a, threads, "slice_dyn", nil, shpTypes(true, in...), in...)[0]
		closeEnough(t, what, y, want, out, 0)
		y.Release()
		release(in...)
	}
	for _, dt := range shpDTypes {
		for range 40 {
			check(dt, shpShape(r, 1+r.IntN(3)), 2)
		}
	}
	check(tensor.F32, []int{301, 257}, 4) // in parallel
	wantAllocated(t, a, 0)

	// Kernel errors.
	x := randTensor(t, a, r, tensor.F32, 4, 5)
	for _, c := range []struct {
		idx   [][]int64
		attrs ir.Attrs
		err   string
	}{
		{[][]int64{{0}, {2}, {1}, {0}}, nil, "a step is 0"},
		{[][]int64{{0, 1}, {2, 3}, {1, -1}}, nil, "appears twice"},
		{[][]int64{{0}, {2}, {2}}, nil, "out of range"},
		{[][]int64{{0}, {2}}, ir.A("dims", []int{3, 5}), "differs from the declared"},
	} {
		in := []*tensor.Tensor{x}
		for _, v := range c.idx {
			in = append(in, dynVec(t, tensor.I64, v...))
		}
		dynWantKernelErr(t, a, "slice_dyn", c.attrs, in, c.err)
		release(in[1:]...)
	}
	// Lengths that differ at run time; more starts than axes without axes.
	st, en := dynVec(t, tensor.I64, 0, 1), dynVec(t, tensor.I64, 2)
	shpWantKernelErr(t, a, "slice_dyn", nil, shpTypes(true, x, st, en), []*tensor.Tensor{x, st, en}, "differ in length")
	st3 := dynVec(t, tensor.I64, 0, 1, 0)
	shpWantKernelErr(t, a, "slice_dyn", nil, shpTypes(true, x, st3, st3), []*tensor.Tensor{x, st3, st3}, "out of range")
	release(x, st, en, st3)
	wantAllocated(t, a, 0)

	// Types: without axes the first len(starts) dims are sliced.
	i64 := func(n int) ir.Type { return shpT(ir.I64, n) }
	dynInferType(t, "slice_dyn", nil, shpT(ir.F32, -1, -1, 7), shpT(ir.F32, 5, 6, 7), i64(2), i64(2))
	dynInferType(t, "slice_dyn", nil, shpT(ir.F32, -1, -1, 7), shpT(ir.F32, 5, 6, 7), i64(-1), i64(2))
	dynInferType(t, "slice_dyn", nil, shpT(ir.F32, -1, -1, -1), shpT(ir.F32, 5, 6, 7), i64(-1), i64(-1))
	dynInferType(t, "slice_dyn", nil, shpT(ir.F32, -1, -1, -1), shpT(ir.F32, 5, 6, 7), i64(1), i64(1), i64(1))
	dynInferType(t, "slice_dyn", ir.A("dims", []int{5, -1, 7}), shpT(ir.F32, 5, -1, 7), shpT(ir.F32, 5, 6, 7), i64(1), i64(1), i64(1), i64(1))
	dynInferType(t, "slice_dyn", nil, shpT(ir.F32, 5, 6), shpT(ir.F32, 5, 6), i64(0), i64(0))
	shpWantErr(t, "slice_dyn", nil, []ir.Type{shpT(ir.F32, 5), i64(2), i64(2)}, "2 starts without axes")
	shpWantErr(t, "slice_dyn", nil, []ir.Type{shpT(ir.F32, 5), i64(1), i64(2)}, "differs in length")
	shpWantErr(t, "slice_dyn", nil, []ir.Type{shpT(ir.F32, 5), i64(1), shpT(ir.F32, 1)}, "ends")
	shpWantErr(t, "slice_dyn", nil, []ir.Type{shpT(ir.F32, 5), i64(1)}, "3 to 5 operands")
	shpWantErr(t, "slice_dyn", ir.A("dims", []int{2, 3}), []ir.Type{shpT(ir.F32, 5), i64(1), i64(1)}, "rank 1")
	b := ir.NewBuilder(ir.NewProgram())
	xv, s, e := ops.Data(b, "x", ir.F32, 5, 6), ops.Data(b, "s", ir.I64, 1), ops.Data(b, "e", ir.I64, 1)
	v := ops.SliceDyn(b, xv, s, e, nil, nil, nil)
	w := ops.SliceDyn(b, xv, s, e, ops.Data(b, "a", ir.I64, 1), ops.Data(b, "st", ir.I64, 1), []int{5, -1})
	if !v.Type().Equal(shpT(ir.F32, -1, 6)) || !w.Type().Equal(shpT(ir.F32, 5, -1)) || b.Err() != nil {
		t.Fatalf("SliceDyn: %v %v %v", v.Type(), w.Type(), b.Err())
	}
	ops.SliceDyn(b, xv, s, e, nil, ops.Data(b, "st2", ir.I64, 1), nil)
	if b.Err() == nil {
		t.Fatalf("SliceDyn with steps and no axes: no error")
	}
}

func TestDynSliceGrad(t *testing.T) {
	shpDebug(t)
	r := rand.New(rand.NewPCG(6, 6))
	a := memory.New(memory.Options{})
	check := func(dt tensor.DType, shape []int, threads int) {
		t.Helper()
		axes, starts, ends, steps := shpRandSlice(r, shape)
		sel := shpSliceSel(shape, axes, starts, ends, steps)
		dyShape := make([]int, len(shape))
		for i, s := range sel {
			dyShape[i] = len(s)
		}
		dy := randTensor(t, a, r, dt, dyShape...)
		want := make([]float64, shpSize(shape))
		vals := shpVals(dy)
		for p := range vals {
			idx := shpUnravel(p, dyShape)
			for i, j := range idx {
				idx[i] = sel[i][j]
			}
			want[shpRavel(idx, shape)] = vals[p]
		}
		idx := dynSliceOperands(t, tensor.I64, axes, starts, ends, steps, true, true)
		like := randTensor(t, a, r, tensor.I32, shape...)
		what := fmt.Sprintf("slice_dyn_grad %v axes %v starts %v ends %v steps %v", shape, axes, starts, ends, steps)
		for _, static := range []bool{false, true} {
			before := a.Stats().Allocated.Current
			var out *tensor.Tensor
			if static {
				in := append([]*tensor.Tensor{dy}, idx...)
				out = shpRunThreads(t, a, threads, "slice_dyn_grad", ir.A("shape", shape), shpTypes(false, in...), in...)[0]
			} else {
				in := append([]*tensor.Tensor{dy, like}, idx...)
				out = shpRunThreads(t, a, threads, "slice_dyn_grad", nil, shpTypes(true, in...), in...)[0]
			}
			closeEnough(t, what, out, want, shape, 0)
			out.Release()
			wantAllocated(t, a, before)
		}
		release(dy, like)
		release(idx...)
	}
	for _, dt := range shpDTypes {
		for range 30 {
			check(dt, shpShape(r, 1+r.IntN(3)), 2)
		}
	}
	check(tensor.F64, []int{7, 64, 129}, 3) // in parallel
	wantAllocated(t, a, 0)

	dy := randTensor(t, a, r, tensor.F32, 2, 3)
	like := randTensor(t, a, r, tensor.F32, 5, 6)
	st, en, ax, ax2 := dynVec(t, tensor.I64, 1), dynVec(t, tensor.I64, 4), dynVec(t, tensor.I64, 0), dynVec(t, tensor.I64, 2)
	shpWantKernelErr(t, a, "slice_dyn_grad", nil, shpTypes(true, dy, like, st, en, ax), []*tensor.Tensor{dy, like, st, en, ax}, "tensor<2x3xf32>", "[3 6]")
	shpWantKernelErr(t, a, "slice_dyn_grad", ir.A("shape", []int{5, 6}), shpTypes(true, dy, st, en, ax2), []*tensor.Tensor{dy, st, en, ax2}, "out of range")
	release(dy, like, st, en, ax, ax2)
	wantAllocated(t, a, 0)
	i64 := shpT(ir.I64, 1)
	dynInferType(t, "slice_dyn_grad", ir.A("shape", []int{5, 6}), shpT(ir.F32, 5, 6), shpT(ir.F32, 2, 6), i64, i64)
	dynInferType(t, "slice_dyn_grad", nil, shpT(ir.F32, -1, 6), shpT(ir.F32, 2, 6), shpT(ir.I1, -1, 6), i64, i64, i64)
	shpWantErr(t, "slice_dyn_grad", ir.A("shape", []int{5, 6}), []ir.Type{shpT(ir.F32, 2, 3), i64, i64}, "tensor<2x3xf32>", "[? 6]")
	shpWantErr(t, "slice_dyn_grad", ir.A("shape", []int{5, 6}), []ir.Type{shpT(ir.F32, 2), i64, i64}, "differs in rank")
	shpWantErr(t, "slice_dyn_grad", nil, []ir.Type{shpT(ir.F32, 2)}, "like operand")
	shpWantErr(t, "slice_dyn_grad", nil, nil, "takes dy")
}

func TestDynSplit(t *testing.T) {
	shpDebug(t)
	r := rand.New(rand.NewPCG(7, 7))
	a := memory.New(memory.Options{})
	for _, dt := range shpDTypes {
		for range 30 {
			shape := shpShape(r, 1+r.IntN(3))
			axis := r.IntN(len(shape))
			// Random sizes adding up to the dim.
			var sizes []int64
			left := shape[axis]
			for left > 0 || len(sizes) == 0 || r.IntN(4) == 0 {
				s := r.IntN(left + 1)
				sizes = append(sizes, int64(s))
				left -= s
				if len(sizes) > 5 {
					sizes[len(sizes)-1] += int64(left)
					break
				}
			}
			x := randTensor(t, a, r, dt, shape...)
			sv := dynVec(t, []tensor.DType{tensor.I32, tensor.I64}[r.IntN(2)], sizes...)
			attrs := ir.A("axis", axis-len(shape)*r.IntN(2))
			outs := dynRun(t, a, "split_dyn", attrs, x, sv)
			off := 0
			for i, o := range outs {
				want := slices.Clone(shape)
				want[axis] = int(sizes[i])
				vals := shpRef(shpVals(x), want, func(idx []int) int {
					src := slices.Clone(idx)
					src[axis] += off
					return shpRavel(src, shape)
				})
				closeEnough(t, fmt.Sprintf("split_dyn %v axis %d sizes %v piece %d", shape, axis, sizes, i), o, vals, want, 0)
				off += int(sizes[i])
			}
			release(outs...)
			release(x, sv)
		}
	}
	wantAllocated(t, a, 0)

	x := randTensor(t, a, r, tensor.F32, 2, 5)
	for _, c := range []struct {
		sizes []int64
		err   string
	}{
		{[]int64{2, 2}, "add up to 4, not 5"},
		{[]int64{6, -1}, "must be >= 0"},
	} {
		sv := dynVec(t, tensor.I64, c.sizes...)
		dynWantKernelErr(t, a, "split_dyn", ir.A("axis", 1), []*tensor.Tensor{x, sv}, c.err)
		sv.Release()
	}
	x.Release()
	wantAllocated(t, a, 0)
	shpWantErr(t, "split_dyn", ir.A("axis", 1), []ir.Type{shpT(ir.F32, 2, 5), shpT(ir.I64, 0)}, "empty")
	shpWantErr(t, "split_dyn", ir.A("axis", 2), []ir.Type{shpT(ir.F32, 2, 5), shpT(ir.I64, 2)}, "out of range")
	shpWantErr(t, "split_dyn", nil, []ir.Type{shpT(ir.F32, 2, 5), shpT(ir.I64, -1)}, "static length")
	b := ir.NewBuilder(ir.NewProgram())
	vs := ops.SplitDyn(b, ops.Data(b, "x", ir.F32, 2, 5), ops.Data(b, "s", ir.I64, 3), -1)
	if len(vs) != 3 || !vs[2].Type().Equal(shpT(ir.F32, 2, -1)) || b.Err() != nil {
		t.Fatalf("SplitDyn: %d results, %v", len(vs), b.Err())
	}
}
