package ops_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Tests of the indexing ops (index.go).

// ---- slice ----

// shpSliceIndices lists the indices numpy's x[start:end:step] selects from
// a dim of size d, by filtering every index of the dim.
func shpSliceIndices(start, end, step, d int) []int {
	norm := func(i int) int {
		if i < 0 {
			return i + d
		}
		return i
	}
	s, e := norm(start), norm(end)
	var out []int
	if step > 0 {
		s = max(s, 0) // counting starts from the first index in range
		for i := range d {
			if i >= s && i < e && (i-s)%step == 0 {
				out = append(out, i)
			}
		}
		return out
	}
	s = min(s, d-1)
	for i := d - 1; i >= 0; i-- {
		if i <= s && i > e && (s-i)%(-step) == 0 {
			out = append(out, i)
		}
	}
	return out
}

func TestShpSliceIndices(t *testing.T) {
	// numpy: list(range(7))[a:b:c]
	for _, c := range []struct {
		start, end, step int
		want             []int
	}{
		{1, 5, 1, []int{1, 2, 3, 4}},
		{-3, 100, 1, []int{4, 5, 6}},
		{-100, 2, 1, []int{0, 1}},
		{0, 7, 3, []int{0, 3, 6}},
		{5, 1, 1, nil},
		{6, 0, -2, []int{6, 4, 2}},
		{100, -100, -3, []int{6, 3, 0}},
		{-1, -8, -1, []int{6, 5, 4, 3, 2, 1, 0}},
		{2, 5, -1, nil},
		{-9, 3, 2, []int{0, 2}},
	} {
		if got := shpSliceIndices(c.start, c.end, c.step, 7); !slices.Equal(got, c.want) {
			t.Fatalf("[%d:%d:%d] of 7: %v, want %v", c.start, c.end, c.step, got, c.want)
		}
	}
}

func TestShpSlice(t *testing.T) {
	shpDebug(t)
	r := rand.New(rand.NewPCG(21, 22))
	a := memory.New(memory.Options{})
	check := func(x *tensor.Tensor, axes, starts, ends, strides []int) {
		t.Helper()
		in := x.Shape()
		sel := make([][]int, len(in))
		for i, d := range in {
			sel[i] = make([]int, d)
			for j := range sel[i] {
				sel[i][j] = j
			}
		}
		for i, ax := range axes {
			if ax < 0 {
				ax += len(in)
			}
			st := 1
			if strides != nil {
				st = strides[i]
			}
			sel[ax] = shpSliceIndices(starts[i], ends[i], st, in[ax])
		}
		want := make([]int, len(in))
		for i := range want {
			want[i] = len(sel[i])
		}
		ref := shpRef(shpVals(x), want, func(idx []int) int {
			src := make([]int, len(idx))
			for i, j := range idx {
				src[i] = sel[i][j]
			}
			return shpRavel(src, in)
		})
		attrs := ir.A("axes", axes, "starts", starts, "ends", ends)
		if strides != nil {
			attrs = ir.A("axes", axes, "starts", starts, "ends", ends, "strides", strides)
		}
		out := mustRun(t, a, "slice", attrs, x)[0]
		closeEnough(t, fmt.Sprintf("slice %v %s", x.Type(), attrs), out, ref, want, 0)
		out.Release()
	}
	idx := func(d int) int { return r.IntN(2*d+7) - d - 3 } // in and out of range
	for _, dt := range shpDTypes {
		for range 60 {
			shape := shpShape(r, 1+r.IntN(4))
			x := randTensor(t, a, r, dt, shape...)
			var axes, starts, ends, strides []int
			for _, ax := range r.Perm(len(shape))[:1+r.IntN(len(shape))] {
				if r.IntN(2) == 0 {
					ax -= len(shape)
				}
				axes = append(axes, ax)
				d := shape[(ax+len(shape))%len(shape)]
				starts = append(starts, idx(d))
				ends = append(ends, idx(d))
				st := 1 + r.IntN(3)
				if r.IntN(2) == 0 {
					st = -st
				}
				strides = append(strides, st)
			}
			if r.IntN(3) == 0 {
				strides = nil
			}
			check(x, axes, starts, ends, strides)
			x.Release()
		}
	}
	// Large: contiguous rows, strided rows, reversal, huge bounds.
	x := randTensor(t, a, r, tensor.F32, 301, 257)
	check(x, []int{0, 1}, []int{3, 5}, []int{300, 250}, nil)
	check(x, []int{1}, []int{-1}, []int{math.MinInt64}, []int{-1})
	check(x, []int{0, 1}, []int{math.MaxInt64, 0}, []int{math.MinInt64, math.MaxInt64}, []int{-2, 3})
	check(x, []int{1}, []int{0}, []int{math.MaxInt64}, []int{math.MaxInt64})
	check(x, []int{1}, []int{-1}, []int{math.MinInt64}, []int{math.MinInt64})
	x.Release()
	wantAllocated(t, a, 0)
	shpWantErr(t, "slice", ir.A("axes", []int{2}, "starts", []int{0}, "ends", []int{1}), []ir.Type{shpT(ir.F32, 2, 3)}, "[2 3]")
	shpWantErr(t, "slice", ir.A("axes", []int{0, 0}, "starts", []int{0, 0}, "ends", []int{1, 1}), []ir.Type{shpT(ir.F32, 2, 3)}, "[2 3]", "twice")
	shpWantErr(t, "slice", ir.A("axes", []int{0}, "starts", []int{0, 1}, "ends", []int{1}), []ir.Type{shpT(ir.F32, 2, 3)}, "[0 1]")
	shpWantErr(t, "slice", ir.A("axes", []int{0}, "starts", []int{0}, "ends", []int{1}, "strides", []int{0}), []ir.Type{shpT(ir.F32, 2, 3)}, "[0]")
	b := ir.NewBuilder(ir.NewProgram())
	xv := ops.Data(b, "x", ir.F32, -1, 10)
	v := ops.Slice(b, xv, []int{1, 0}, []int{2, 0}, []int{-1, 1})
	w := ops.SliceStrided(b, xv, []int{1}, []int{-1}, []int{-100}, []int{-3})
	if !v.Type().Equal(shpT(ir.F32, -1, 7)) || !w.Type().Equal(shpT(ir.F32, -1, 4)) || b.Err() != nil {
		t.Fatalf("Slice: %v %v %v", v.Type(), w.Type(), b.Err())
	}
}

// ---- gather ----

func TestShpGather(t *testing.T) {
	shpDebug(t)
	r := rand.New(rand.NewPCG(23, 24))
	a := memory.New(memory.Options{})
	check := func(x, index *tensor.Tensor, axis int) {
		t.Helper()
		in := x.Shape()
		ax := axis
		if ax < 0 {
			ax += len(in)
		}
		want := slices.Concat(in[:ax], index.Shape(), in[ax+1:])
		k := index.Rank()
		ref := shpRef(shpVals(x), want, func(idx []int) int {
			i := int(index.Float64At(shpRavel(idx[ax:ax+k], index.Shape())))
			if i < 0 {
				i += in[ax]
			}
			src := slices.Concat(idx[:ax], []int{i}, idx[ax+k:])
			return shpRavel(src, in)
		})
		out := mustRun(t, a, "gather", ir.A("axis", axis), x, index)[0]
		closeEnough(t, fmt.Sprintf("gather %v %v axis %d", x.Type(), index.Type(), axis), out, ref, want, 0)
		out.Release()
	}
	randIndex := func(dt tensor.DType, d int, shape []int) *tensor.Tensor {
		n := shpSize(shape)
		if d == 0 {
			n = 0
			shape = slices.Clone(shape)
			if len(shape) == 0 {
				shape = []int{0}
			} else {
				shape[0] = 0
			}
		}
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(r.IntN(2*d) - d)
		}
		var x *tensor.Tensor
		var err error
		if dt == tensor.I32 {
			v32 := make([]int32, n)
			for i, e := range v {
				v32[i] = int32(e)
			}
			x, err = tensor.FromI32(a, v32, shape...)
		} else {
			x, err = tensor.FromI64(a, v, shape...)
		}
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	for _, dt := range shpDTypes {
		for _, idt := range []tensor.DType{tensor.I32, tensor.I64} {
			for range 25 {
				shape := shpShape(r, 1+r.IntN(4))
				axis := r.IntN(len(shape))
				x := randTensor(t, a, r, dt, shape...)
				index := randIndex(idt, shape[axis], shpShape(r, r.IntN(3)))
				if r.IntN(2) == 0 {
					axis -= len(shape)
				}
				check(x, index, axis)
				release(x, index)
			}
		}
	}
	// Large: rows of one element and long rows, in parallel.
	x := randTensor(t, a, r, tensor.F64, 301, 257)
	i0 := randIndex(tensor.I64, 301, []int{500})
	i1 := randIndex(tensor.I32, 257, []int{30, 20})
	check(x, i0, 0)
	check(x, i1, 1)
	release(x, i0, i1)
	wantAllocated(t, a, 0)
	// Out of range: the error names the value and its position.
	x = randTensor(t, a, r, tensor.F32, 4, 5)
	bad, _ := tensor.FromI64(a, []int64{1, 2, 3, 0, 5, 1}, 2, 3)
	shpWantKernelErr(t, a, "gather", ir.A("axis", 1), []ir.Type{shpT(ir.F32, 4, 5), shpT(ir.I64, 2, 3)}, []*tensor.Tensor{x, bad}, "index 5 at position [1 1]", "size 5")
	bad32, _ := tensor.FromI32(a, []int32{-5, -6}, 2)
	shpWantKernelErr(t, a, "gather", ir.A("axis", 0), []ir.Type{shpT(ir.F32, 4, 5), shpT(ir.I32, 2)}, []*tensor.Tensor{x, bad32}, "index -5 at position [0]", "size 4")
	release(x, bad, bad32)
	wantAllocated(t, a, 0)
	shpWantErr(t, "gather", ir.A("axis", 0), []ir.Type{shpT(ir.F32, 4, 5), shpT(ir.F32, 2)}, "tensor<2xf32>")
	shpWantErr(t, "gather", ir.A("axis", 2), []ir.Type{shpT(ir.F32, 4, 5), shpT(ir.I32, 2)}, "[4 5]")
	shpWantErr(t, "gather", ir.A("axis", 0), []ir.Type{shpT(ir.F32), shpT(ir.I32, 2)}, "[]")
	b := ir.NewBuilder(ir.NewProgram())
	v := ops.Gather(b, ops.Data(b, "x", ir.F32, 3, -1, 5), ops.Data(b, "i", ir.I64, 2, 7), 1)
	w := ops.Gather(b, ops.Data(b, "y", ir.F32, 3, 4), ops.Data(b, "j", ir.I32), -1)
	if !v.Type().Equal(shpT(ir.F32, 3, 2, 7, 5)) || !w.Type().Equal(shpT(ir.F32, 3)) || b.Err() != nil {
		t.Fatalf("Gather: %v %v %v", v.Type(), w.Type(), b.Err())
	}
}

// ---- one_hot ----

func TestShpOneHot(t *testing.T) {
	shpDebug(t)
	r := rand.New(rand.NewPCG(25, 26))
	a := memory.New(memory.Options{})
	for _, dt := range []ir.DType{ir.F32, ir.F64, ir.I32, ir.I64, ir.I1} {
		for _, idt := range []tensor.DType{tensor.I32, tensor.I64} {
			for range 15 {
				depth := 1 + r.IntN(7)
				shape := shpShape(r, r.IntN(3))
				index := randTensor(t, a, r, idt, shape...)
				for i := range index.Len() {
					if idt == tensor.I32 {
						index.I32()[i] = int32(r.IntN(depth))
					} else {
						index.I64()[i] = int64(r.IntN(depth))
					}
				}
				want := append(slices.Clone(shape), depth)
				ref := make([]float64, shpSize(want))
				for i := range index.Len() {
					ref[i*depth+int(index.Float64At(i))] = 1
				}
				attrs := ir.A("depth", depth, "dtype", dt)
				if dt == ir.F32 && r.IntN(2) == 0 {
					attrs = ir.A("depth", depth)
				}
				out := mustRun(t, a, "one_hot", attrs, index)[0]
				if ir.DType(out.DType()) != dt {
					t.Fatalf("one_hot: dtype %v, want %v", out.DType(), dt)
				}
				closeEnough(t, "one_hot", out, ref, want, 0)
				out.Release()
				dv := shpIdx(t, []tensor.DType{tensor.I32, tensor.I64}[r.IntN(2)], []int64{int64(depth)})
				out = mustRun(t, a, "one_hot", ir.A("dtype", dt), index, dv)[0]
				closeEnough(t, "one_hot (depth operand)", out, ref, want, 0)
				release(out, index, dv)
			}
		}
	}
	index := randTensor(t, a, r, tensor.I64, 300, 200)
	for i := range index.I64() {
		index.I64()[i] = int64(r.IntN(3))
	}
	out := mustRun(t, a, "one_hot", ir.A("depth", 3), index)[0]
	for i, v := range out.F32() {
		if want := float32(0); i%3 == int(index.I64()[i/3]) && v != 1 || i%3 != int(index.I64()[i/3]) && v != want {
			t.Fatalf("one_hot large: element %d = %v", i, v)
		}
	}
	release(out, index)
	bad, _ := tensor.FromI32(a, []int32{0, 2, -1, 1}, 2, 2)
	shpWantKernelErr(t, a, "one_hot", ir.A("depth", 3), []ir.Type{shpT(ir.I32, 2, 2)}, []*tensor.Tensor{bad}, "index -1 at position [1 0]", "depth 3")
	bad.I32()[2] = 3
	shpWantKernelErr(t, a, "one_hot", ir.A("depth", 3), []ir.Type{shpT(ir.I32, 2, 2)}, []*tensor.Tensor{bad}, "index 3 at position [1 0]")
	for range 20 {
		for d, want := range map[int64]string{0: "depth 0", 2: "index 2 at position [0 1]"} {
			dv := shpIdx(t, tensor.I64, []int64{d})
			shpWantKernelErr(t, a, "one_hot", nil, []ir.Type{shpT(ir.I32, 2, 2), shpT(ir.I64, 1)}, []*tensor.Tensor{bad, dv}, want)
			dv.Release()
		}
	}
	bad.Release()
	wantAllocated(t, a, 0)
	shpWantErr(t, "one_hot", ir.A("depth", 3), []ir.Type{shpT(ir.F32, 2)}, "tensor<2xf32>")
	shpWantErr(t, "one_hot", ir.A("depth", 0), []ir.Type{shpT(ir.I32, 2)}, "depth 0")
	shpWantErr(t, "one_hot", ir.A("depth", 3), []ir.Type{shpT(ir.I32, 2), shpT(ir.I32)}, "not both")
	shpWantErr(t, "one_hot", nil, []ir.Type{shpT(ir.I32, 2), shpT(ir.I32, 2)}, "depth tensor<2xi32>")
	b := ir.NewBuilder(ir.NewProgram())
	v := ops.OneHot(b, ops.Data(b, "i", ir.I64, -1, 2), 10, ir.F64)
	if !v.Type().Equal(shpT(ir.F64, -1, 2, 10)) || b.Err() != nil {
		t.Fatalf("OneHot: %v %v", v.Type(), b.Err())
	}
	v = ops.OneHotAt(b, ops.Data(b, "j", ir.I32, 3), ops.Data(b, "d", ir.I64), ir.I1)
	if !v.Type().Equal(shpT(ir.I1, 3, -1)) || b.Err() != nil {
		t.Fatalf("OneHotAt: %v %v", v.Type(), b.Err())
	}
}

// ---- topk ----

// shpTopKRef sorts each slice stably by value, largest first with NaN
// first, or smallest first with NaN last.
func shpTopKRef(x *tensor.Tensor, k, axis int, largest bool) (vals, idxs []float64, shape []int) {
	in := x.Shape()
	shape = slices.Clone(in)
	shape[axis] = k
	n := in[axis]
	xv := shpVals(x)
	vals = make([]float64, shpSize(shape))
	idxs = make([]float64, len(vals))
	// Each slice is the set of positions with the same index outside axis.
	rest := slices.Clone(in)
	rest[axis] = 1
	for s := range shpSize(rest) {
		idx := shpUnravel(s, rest)
		at := func(j int) float64 {
			idx[axis] = j
			return xv[shpRavel(idx, in)]
		}
		order := make([]int, n)
		for j := range order {
			order[j] = j
		}
		sort.SliceStable(order, func(p, q int) bool {
			u, v := at(order[p]), at(order[q])
			if !largest {
				u, v = v, u
			}
			return u > v || math.IsNaN(u) && !math.IsNaN(v)
		})
		for t := range k {
			idx[axis] = t
			o := shpRavel(idx, shape)
			vals[o], idxs[o] = at(order[t]), float64(order[t])
		}
	}
	return vals, idxs, shape
}

func TestShpTopK(t *testing.T) {
	shpDebug(t)
	r := rand.New(rand.NewPCG(27, 28))
	a := memory.New(memory.Options{})
	// check runs topk with k as an attribute, then as an operand.
	check := func(x *tensor.Tensor, k, axis int, largest bool) {
		t.Helper()
		ax := axis
		if ax < 0 {
			ax += x.Rank()
		}
		vals, idxs, shape := shpTopKRef(x, k, ax, largest)
		kt := shpIdx(t, []tensor.DType{tensor.I32, tensor.I64}[k%2], []int64{int64(k)})
		for _, run := range [][]*tensor.Tensor{
			mustRun(t, a, "topk", ir.A("k", k, "axis", axis, "largest", largest), x),
			mustRun(t, a, "topk", ir.A("axis", axis, "largest", largest), x, kt),
		} {
			what := fmt.Sprintf("topk %v k %d axis %d largest %v", x.Type(), k, axis, largest)
			closeEnough(t, what+" values", run[0], vals, shape, 0)
			closeEnough(t, what+" indices", run[1], idxs, shape, 0)
			if run[1].DType() != tensor.I64 {
				t.Fatalf("%s: indices are %v", what, run[1].DType())
			}
			release(run...)
		}
		kt.Release()
	}
	for _, dt := range []tensor.DType{tensor.F32, tensor.F64, tensor.I32, tensor.I64} {
		for range 40 {
			shape := shpShape(r, 1+r.IntN(3))
			axis := r.IntN(len(shape))
			if r.IntN(2) == 0 {
				shape[axis] = 20 + r.IntN(30) // long enough for the heap path
			}
			x := randTensor(t, a, r, dt, shape...)
			if dt == tensor.F32 || dt == tensor.F64 { // ties
				for i := range x.Len() {
					if r.IntN(2) == 0 {
						if dt == tensor.F32 {
							x.F32()[i] = float32(math.Round(float64(x.F32()[i])))
						} else {
							x.F64()[i] = math.Round(x.F64()[i])
						}
					}
				}
			}
			k := r.IntN(shape[axis] + 1)
			if r.IntN(2) == 0 {
				k = min(k, 2)
			}
			if r.IntN(2) == 0 {
				axis -= len(shape)
			}
			check(x, k, axis, r.IntN(2) == 0)
			x.Release()
		}
	}
	// NaN is largest; -0 and +0 tie.
	x, _ := tensor.FromF64(a, []float64{1, math.NaN(), 3, math.Copysign(0, -1), math.NaN(), 0, 3, math.Inf(-1), 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, math.Inf(1), 2})
	for k := range x.Len() + 1 {
		check(x, k, 0, true)
		check(x, k, 0, false)
	}
	outs := mustRun(t, a, "topk", ir.A("k", 4), x)
	if got := outs[1].I64(); !slices.Equal(got, []int64{1, 4, 20, 2}) {
		t.Fatalf("topk with NaN: indices %v", got)
	}
	release(outs...)
	outs = mustRun(t, a, "topk", ir.A("k", 22, "largest", false), x)
	if got := outs[1].I64(); !slices.Equal(got[:5], []int64{7, 3, 5, 0, 8}) || !slices.Equal(got[19:], []int64{20, 1, 4}) {
		t.Fatalf("smallest topk with NaN: indices %v", got)
	}
	release(outs...)
	x.Release()
	// Large: many slices in parallel, along inner and outer axes.
	x = randTensor(t, a, r, tensor.F32, 64, 500)
	check(x, 5, 1, true)
	check(x, 400, 1, false)
	check(x, 3, 0, false)
	x.Release()
	x = randTensor(t, a, r, tensor.I32, 3, 0, 4)
	check(x, 0, 1, true)
	x.Release()
	wantAllocated(t, a, 0)
	shpWantErr(t, "topk", ir.A("k", 6), []ir.Type{shpT(ir.F32, 3, 5)}, "k 6", "[3 5]")
	shpWantErr(t, "topk", ir.A("k", 2, "axis", 2), []ir.Type{shpT(ir.F32, 3, 5)}, "[3 5]")
	shpWantErr(t, "topk", ir.A("k", 1), []ir.Type{shpT(ir.I1, 3, 5)}, "tensor<3x5xi1>")
	shpWantErr(t, "topk", ir.A("k", 1), []ir.Type{shpT(ir.F32)}, "[]")
	b := ir.NewBuilder(ir.NewProgram())
	vv, iv := ops.TopK(b, ops.Data(b, "x", ir.F64, 4, -1), 3, -1, true)
	if !vv.Type().Equal(shpT(ir.F64, 4, 3)) || !iv.Type().Equal(shpT(ir.I64, 4, 3)) || b.Err() != nil {
		t.Fatalf("TopK: %v %v %v", vv.Type(), iv.Type(), b.Err())
	}
	vv, iv = ops.TopKAt(b, ops.Data(b, "y", ir.I32, 4, 5), ops.Data(b, "k", ir.I64, 1), 0, false)
	if !vv.Type().Equal(shpT(ir.I32, -1, 5)) || !iv.Type().Equal(shpT(ir.I64, -1, 5)) || b.Err() != nil {
		t.Fatalf("TopKAt: %v %v %v", vv.Type(), iv.Type(), b.Err())
	}
	shpWantErr(t, "topk", ir.A("k", 1), []ir.Type{shpT(ir.F32, 3, 5), shpT(ir.I64)}, "not both")
	shpWantErr(t, "topk", nil, []ir.Type{shpT(ir.F32, 3, 5), shpT(ir.F32)}, "k tensor<f32>")
	shpWantErr(t, "topk", ir.A("k", 1, "largest", 0), []ir.Type{shpT(ir.F32, 3, 5)}, "largest")
	xt := randTensor(t, a, r, tensor.F64, 4, 2)
	for range 20 {
		shpWantKernelErr(t, a, "topk", ir.A("k", 3), []ir.Type{shpT(ir.F64, 4, -1)}, []*tensor.Tensor{xt}, "k 3", "tensor<4x2xf64>")
		for _, k := range []int64{3, -1} {
			kt := shpIdx(t, tensor.I64, []int64{k})
			shpWantKernelErr(t, a, "topk", nil, []ir.Type{shpT(ir.F64, 4, 2), shpT(ir.I64, 1)}, []*tensor.Tensor{xt, kt}, fmt.Sprintf("k %d is out of range [0, 2]", k))
			kt.Release()
		}
	}
	xt.Release()
	wantAllocated(t, a, 0)
}

func TestShpTopKThreads(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 30))
	a := memory.New(memory.Options{})
	x := randTensor(t, a, r, tensor.F64, 37, 3000)
	for i := range x.F64() {
		x.F64()[i] = math.Round(x.F64()[i] * 4)
	}
	op, err := buildOp(t, "topk", ir.A("k", 10), shpT(ir.F64, 37, 3000))
	if err != nil {
		t.Fatal(err)
	}
	k, _ := ops.Bind(op)
	var first []int64
	for threads := 1; threads <= 5; threads++ {
		outs, err := k(&ops.Ctx{Alloc: a, Threads: threads}, []*tensor.Tensor{x})
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = slices.Clone(outs[1].I64())
		} else if !slices.Equal(first, outs[1].I64()) {
			t.Fatalf("threads %d differ", threads)
		}
		release(outs...)
	}
	x.Release()
	wantAllocated(t, a, 0)
}

func TestShpIndexOOMSweep(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	a := memory.New(memory.Options{})
	x := randTensor(t, a, r, tensor.F32, 7, 11)
	index, _ := tensor.FromI64(a, []int64{3, -1, 0, 6, 2, 2}, 3, 2)
	// slice: 3x5 f32 (60 bytes) fits in the first limit. gather: 6x11 f32
	// (264 bytes). topk: values 84 bytes, indices 168, scratch 88, so the
	// second and third allocations fail too. one_hot: 6x7 f32 (168 bytes).
	for _, c := range []struct {
		name  string
		attrs ir.Attrs
		in    []*tensor.Tensor
		fails int
	}{
		{"slice", ir.A("axes", []int{0, 1}, "starts", []int{1, -1}, "ends", []int{6, 0}, "strides", []int{2, -2}), []*tensor.Tensor{x}, 0},
		{"gather", ir.A("axis", 0), []*tensor.Tensor{x, index}, 4},
		{"topk", ir.A("k", 3, "axis", 1), []*tensor.Tensor{x}, 6},
	} {
		if n := shpOOMSweep(t, c.name, c.attrs, c.in...); n < c.fails {
			t.Fatalf("%s failed under %d limits, want at least %d", c.name, n, c.fails)
		}
	}
	index.I64()[1] = 4
	if n := shpOOMSweep(t, "one_hot", ir.A("depth", 7), index); n < 2 {
		t.Fatalf("one_hot failed under %d limits", n)
	}
	release(x, index)
	wantAllocated(t, a, 0)
}

// TestShpTopKGradForms checks the gradient of the smallest-first and
// run-time-k forms of topk.
func TestShpTopKGradForms(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	x := f64Rand(t, r, -1, 1, 3, 7)
	k := shpIdx(t, tensor.I32, []int64{4})
	checkOpGrad(t, "topk", ir.A("k", 2, "largest", false), x)
	for mode := range shpModeNames {
		shpCheckGrad(t, mode, shpGradCase{name: "topk", attrs: ir.A("axis", 1, "largest", false), in: []*tensor.Tensor{x, k}, dyn: [][]int{{1}}, only: []int{0}})
	}
	release(x, k)
}
