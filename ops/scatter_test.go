package ops_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Tests of scatter_elements, gather_nd, scatter_nd and their gradient
// helpers (scatter.go) against naive references.

// sctCombine is the reference of each reduction, in float64.
func sctCombine(red string, x, u float64) float64 {
	switch red {
	case "add":
		return x + u
	case "mul":
		return x * u
	case "max":
		if math.IsNaN(x) || math.IsNaN(u) {
			return math.NaN()
		}
		return math.Max(x, u)
	case "min":
		if math.IsNaN(x) || math.IsNaN(u) {
			return math.NaN()
		}
		return math.Min(x, u)
	}
	return u
}

// sctWrap maps a possibly negative index into [0, d).
func sctWrap(i, d int) int {
	if i < 0 {
		return i + d
	}
	return i
}

// sctRefElements applies the updates in row-major order of indices.
func sctRefElements(data, idx, upd *tensor.Tensor, axis int, red string) []float64 {
	want := shpVals(data)
	for p := range idx.Len() {
		at := shpUnravel(p, idx.Shape())
		at[axis] = sctWrap(int(idx.Float64At(p)), data.Shape()[axis])
		q := shpRavel(at, data.Shape())
		want[q] = sctCombine(red, want[q], upd.Float64At(p))
	}
	return sctRound(want, data.DType())
}

// sctRound rounds reference values the way the dtype stores them.
func sctRound(v []float64, dt tensor.DType) []float64 {
	for i, x := range v {
		switch dt {
		case tensor.F32:
			v[i] = float64(float32(x))
		case tensor.I32:
			v[i] = float64(int32(int64(x)))
		}
	}
	return v
}

// sctNDRow returns the data position of slice element s selected by index
// row r (a flat row number over indices.shape[:-1]).
func sctNDPos(data, idx *tensor.Tensor, b, r, s int) int {
	ds, is := data.Shape(), idx.Shape()
	q, m := len(is), is[len(is)-1]
	rowAt := shpUnravel(r, is[:q-1])
	at := slices.Clone(rowAt[:b])
	for t := range m {
		at = append(at, sctWrap(int(idx.Float64At(r*m+t)), ds[b+t]))
	}
	at = append(at, shpUnravel(s, ds[b+m:])...)
	return shpRavel(at, ds)
}

func sctRefGatherND(data, idx *tensor.Tensor, b int) ([]float64, []int) {
	is := idx.Shape()
	m := is[len(is)-1]
	sliceDims := data.Shape()[b+m:]
	out := slices.Concat(is[:len(is)-1], sliceDims)
	rows, slice := shpSize(is[:len(is)-1]), shpSize(sliceDims)
	vals := shpVals(data)
	want := make([]float64, 0, rows*slice)
	for r := range rows {
		for s := range slice {
			want = append(want, vals[sctNDPos(data, idx, b, r, s)])
		}
	}
	return want, out
}

func sctRefScatterND(data, idx, upd *tensor.Tensor, b int, red string) []float64 {
	is := idx.Shape()
	m := is[len(is)-1]
	rows, slice := shpSize(is[:len(is)-1]), shpSize(data.Shape()[b+m:])
	want := shpVals(data)
	for r := range rows {
		for s := range slice {
			q := sctNDPos(data, idx, b, r, s)
			want[q] = sctCombine(red, want[q], upd.Float64At(r*slice+s))
		}
	}
	return sctRound(want, data.DType())
}

var sctReds = []string{"none", "add", "mul", "max", "min"}

func TestScatterElements(t *testing.T) {
	shpDebug(t)
	r := rand.New(rand.NewPCG(71, 72))
	a := memory.New(memory.Options{})
	for _, dt := range shpDTypes {
		for _, red := range sctReds {
			if dt == tensor.Bool && red != "none" {
				continue
			}
			for range 12 {
				shape := shpShape(r, 1+r.IntN(4))
				axis := r.IntN(len(shape))
				if shape[axis] == 0 {
					shape[axis] = 3
				}
				ishape := slices.Clone(shape)
				ishape[axis] = r.IntN(5) // repeats when larger than the dim
				data := randTensor(t, a, r, dt, shape...)
				idx := shpRandIdx(t, r, []tensor.DType{tensor.I32, tensor.I64}[r.IntN(2)], shape[axis], true, ishape...)
				upd := randTensor(t, a, r, dt, ishape...)
				want := sctRefElements(data, idx, upd, axis, red)
				if r.IntN(2) == 0 {
					axis -= len(shape)
				}
				y := mustRun(t, a, "scatter_elements", ir.A("axis", axis, "reduction", red), data, idx, upd)[0]
				closeEnough(t, fmt.Sprintf("scatter_elements %s %v axis %d %v", red, data.Type(), axis, idx.Type()), y, want, shape, 1e-6)
				release(y, data, idx, upd)
			}
		}
	}
	wantAllocated(t, a, 0)
}

func TestGatherND(t *testing.T) {
	shpDebug(t)
	r := rand.New(rand.NewPCG(73, 74))
	a := memory.New(memory.Options{})
	for _, dt := range shpDTypes {
		for range 40 {
			rank := 1 + r.IntN(4)
			shape := shpShape(r, rank)
			b := r.IntN(rank)
			m := 1 + r.IntN(rank-b)
			for t := b; t < b+m; t++ {
				if shape[t] == 0 {
					shape[t] = 2
				}
			}
			ishape := slices.Concat(shape[:b], shpShape(r, r.IntN(3)), []int{m})
			data := randTensor(t, a, r, dt, shape...)
			idx := sctRandRows(t, r, shape[b:b+m], ishape)
			want, out := sctRefGatherND(data, idx, b)
			y := mustRun(t, a, "gather_nd", ir.A("batch_dims", b), data, idx)[0]
			closeEnough(t, fmt.Sprintf("gather_nd %v %v batch_dims %d", data.Type(), idx.Type(), b), y, want, out, 0)
			release(y, data, idx)
		}
	}
	wantAllocated(t, a, 0)
}

// sctRandRows returns indices of shape ishape whose rows (the last dim)
// index dims, with negative indices half of the time.
func sctRandRows(t testing.TB, r *rand.Rand, dims, ishape []int) *tensor.Tensor {
	t.Helper()
	m := len(dims)
	vals := make([]int64, shpSize(ishape))
	for p := range vals {
		d := dims[p%m]
		vals[p] = int64(r.IntN(d))
		if r.IntN(2) == 0 {
			vals[p] -= int64(d)
		}
	}
	return shpIdx(t, []tensor.DType{tensor.I32, tensor.I64}[r.IntN(2)], vals, ishape...)
}

func TestScatterND(t *testing.T) {
	shpDebug(t)
	r := rand.New(rand.NewPCG(75, 76))
	a := memory.New(memory.Options{})
	for _, dt := range shpDTypes {
		for _, red := range sctReds {
			if dt == tensor.Bool && red != "none" {
				continue
			}
			for range 12 {
				rank := 1 + r.IntN(4)
				shape := shpShape(r, rank)
				b := r.IntN(rank)
				m := 1 + r.IntN(rank-b)
				for t := b; t < b+m; t++ {
					if shape[t] == 0 {
						shape[t] = 2
					}
				}
				ishape := slices.Concat(shape[:b], shpShape(r, r.IntN(3)), []int{m})
				data := randTensor(t, a, r, dt, shape...)
				idx := sctRandRows(t, r, shape[b:b+m], ishape)
				upd := randTensor(t, a, r, dt, slices.Concat(ishape[:len(ishape)-1], shape[b+m:])...)
				want := sctRefScatterND(data, idx, upd, b, red)
				y := mustRun(t, a, "scatter_nd", ir.A("batch_dims", b, "reduction", red), data, idx, upd)[0]
				closeEnough(t, fmt.Sprintf("scatter_nd %s %v %v batch_dims %d", red, data.Type(), idx.Type(), b), y, want, shape, 1e-6)
				release(y, data, idx, upd)
			}
		}
	}
	wantAllocated(t, a, 0)
}

// TestScatterOrder checks repeated indices (the last update wins, combining
// ones apply in order), NaN in max and min, and that results do not depend
// on the thread count with many updates per column.
func TestScatterOrder(t *testing.T) {
	a := memory.New(memory.Options{})
	f := func(v []float64, shape ...int) *tensor.Tensor {
		x, err := tensor.FromF64(a, v, shape...)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	data := f([]float64{1, 2, 3}, 3)
	idx := shpIdx(t, tensor.I64, []int64{0, 2, -3, 0})
	upd := f([]float64{10, math.NaN(), 30, 40}, 4)
	for red, want := range map[string][]float64{
		"none": {40, 2, math.NaN()},
		"add":  {81, 2, math.NaN()},
		"mul":  {12000, 2, math.NaN()},
		"max":  {40, 2, math.NaN()},
		"min":  {1, 2, math.NaN()},
	} {
		y := mustRun(t, a, "scatter_elements", ir.A("reduction", red), data, idx, upd)[0]
		closeEnough(t, "scatter_elements "+red, y, want, []int{3}, 0)
		y.Release()
		rows := shpIdx(t, tensor.I32, []int64{0, 2, -3, 0}, 4, 1)
		y = mustRun(t, a, "scatter_nd", ir.A("reduction", red), data, rows, upd)[0]
		closeEnough(t, "scatter_nd "+red, y, want, []int{3}, 0)
		release(y, rows)
	}
	release(data, idx, upd)

	r := rand.New(rand.NewPCG(77, 78))
	big := randTensor(t, a, r, tensor.F32, 5, 9, 700)
	bidx := shpRandIdx(t, r, tensor.I64, 9, true, 5, 40, 700)
	bupd := randTensor(t, a, r, tensor.F32, 5, 40, 700)
	rows := sctRandRows(t, r, []int{9}, []int{5, 300, 1})
	rupd := randTensor(t, a, r, tensor.F32, 5, 300, 700)
	wantE := sctRefElements(big, bidx, bupd, 1, "add")
	wantN := sctRefScatterND(big, rows, rupd, 1, "none")
	for threads := 1; threads <= 4; threads++ {
		y := shpRunThreads(t, a, threads, "scatter_elements", ir.A("axis", 1, "reduction", "add"), shpTypes(false, big, bidx, bupd), big, bidx, bupd)[0]
		closeEnough(t, "scatter_elements threads", y, wantE, big.Shape(), 1e-5)
		y.Release()
		y = shpRunThreads(t, a, threads, "scatter_nd", ir.A("batch_dims", 1), shpTypes(false, big, rows, rupd), big, rows, rupd)[0]
		closeEnough(t, "scatter_nd threads", y, wantN, big.Shape(), 0)
		y.Release()
	}
	release(big, bidx, bupd, rows, rupd)
	wantAllocated(t, a, 0)
}

// TestScatterInPlace runs the scatters the way the executor does when it
// donates data: owned and unshared, data is updated and returned; owned
// and shared, it is copied and released; on error it is released.
func TestScatterInPlace(t *testing.T) {
	a := memory.New(memory.Options{})
	mk := func() *tensor.Tensor {
		x, err := tensor.FromF32(a, []float32{1, 2, 3, 4}, 4)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	idx := shpIdx(t, tensor.I64, []int64{1, 3})
	rows := shpIdx(t, tensor.I64, []int64{1, 3}, 2, 1)
	upd, _ := tensor.FromF32(a, []float32{7, 8}, 2)
	bad := shpIdx(t, tensor.I64, []int64{4, 0})
	badRows := shpIdx(t, tensor.I64, []int64{4, 0}, 2, 1)
	want := []float64{1, 7, 3, 8}
	before := a.Stats().Allocated.Current
	for _, c := range []struct {
		name     string
		idx, bad *tensor.Tensor
	}{{"scatter_elements", idx, bad}, {"scatter_nd", rows, badRows}} {
		like := mk()
		k := bindFor(t, c.name, nil, like, c.idx, upd)
		like.Release()
		ctx := &ops.Ctx{Alloc: a, Threads: 1, Owned: ownedMask(0)}
		data := mk()
		out, err := k(ctx, []*tensor.Tensor{data, c.idx, upd})
		if err != nil {
			t.Fatal(err)
		}
		if out[0] != data {
			t.Fatalf("%s: an owned, unshared data was not updated in place", c.name)
		}
		closeEnough(t, c.name, out[0], want, []int{4}, 0)
		out[0].Release()

		data = mk()
		other := data.Retain()
		out, err = k(ctx, []*tensor.Tensor{data, c.idx, upd})
		if err != nil {
			t.Fatal(err)
		}
		if out[0] == data || other.Refs() != 1 {
			t.Fatalf("%s: a shared data was overwritten or not released", c.name)
		}
		closeEnough(t, c.name, out[0], want, []int{4}, 0)
		closeEnough(t, c.name+" data", other, []float64{1, 2, 3, 4}, []int{4}, 0)
		release(out[0], other)

		data = mk()
		if _, err := k(ctx, []*tensor.Tensor{data, c.bad, upd}); err == nil {
			t.Fatalf("%s: no error for index 4", c.name)
		}
		wantAllocated(t, a, before)
	}
	release(idx, rows, upd, bad, badRows)
	wantAllocated(t, a, 0)
}

func TestScatterErrors(t *testing.T) {
	shpDebug(t)
	f23, i23, i2 := shpT(ir.F32, 2, 3), shpT(ir.I64, 2, 3), shpT(ir.I64, 2)
	for _, c := range []struct {
		name  string
		attrs ir.Attrs
		in    []ir.Type
		want  string
	}{
		{"scatter_elements", nil, []ir.Type{f23, i23}, "3 operands"},
		{"scatter_elements", nil, []ir.Type{f23, shpT(ir.F32, 2, 3), f23}, "indices tensor<2x3xf32>"},
		{"scatter_elements", ir.A("axis", 2), []ir.Type{f23, i23, f23}, "axis 2"},
		{"scatter_elements", nil, []ir.Type{shpT(ir.F32), shpT(ir.I64), shpT(ir.F32)}, "scalar"},
		{"scatter_elements", nil, []ir.Type{f23, i2, f23}, "rank"},
		{"scatter_elements", nil, []ir.Type{f23, shpT(ir.I64, 2, 2), shpT(ir.F32, 2, 2)}, "outside axis 0"},
		{"scatter_elements", nil, []ir.Type{f23, i23, shpT(ir.F64, 2, 3)}, "dtype f32"},
		{"scatter_elements", nil, []ir.Type{f23, shpT(ir.I64, 1, 3), f23}, "shape [1 3]"},
		{"scatter_elements", ir.A("reduction", "sub"), []ir.Type{f23, i23, f23}, `"sub"`},
		{"scatter_elements", ir.A("reduction", "add"), []ir.Type{shpT(ir.I1, 2), i2, shpT(ir.I1, 2)}, "i1"},
		{"gather_nd", nil, []ir.Type{f23, shpT(ir.I64)}, "scalar"},
		{"gather_nd", nil, []ir.Type{f23, shpT(ir.I64, 2, -1)}, "static"},
		{"gather_nd", nil, []ir.Type{f23, shpT(ir.I64, 2, 3)}, "rows of 3"},
		{"gather_nd", ir.A("batch_dims", 2), []ir.Type{f23, shpT(ir.I64, 2, 1)}, "batch_dims 2"},
		{"gather_nd", ir.A("batch_dims", 1), []ir.Type{f23, shpT(ir.I64, 3, 1)}, "batch dim 0"},
		{"gather_nd", nil, []ir.Type{f23, shpT(ir.F32, 2, 1)}, "i32 or i64"},
		{"scatter_nd", nil, []ir.Type{f23, shpT(ir.I64, 4, 1), shpT(ir.F32, 4, 2)}, "shape [4 3]"},
		{"scatter_nd", ir.A("reduction", "max"), []ir.Type{shpT(ir.I1, 3), shpT(ir.I64, 1, 1), shpT(ir.I1, 1)}, "i1"},
		{"scatter_elements_grad", nil, []ir.Type{shpT(ir.I32, 2, 3), i23}, "dy"},
		{"scatter_elements_grad", ir.A("axis", 1), []ir.Type{f23, shpT(ir.I64, 3, 3)}, "outside axis 1"},
		{"scatter_nd_grad", nil, []ir.Type{shpT(ir.I64, 2, 3), shpT(ir.I64, 2, 1)}, "dy"},
	} {
		shpWantErr(t, c.name, c.attrs, c.in, c.want)
	}

	// Run-time errors leave nothing behind, however often they happen.
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(79, 80))
	data := randTensor(t, a, r, tensor.F64, 2, 3)
	upd := randTensor(t, a, r, tensor.F64, 2, 3)
	dyn := shpT(ir.F64, -1, -1)
	idx := shpIdx(t, tensor.I64, []int64{0, 1, 2, -3, 3, 0}, 2, 3)
	short := shpIdx(t, tensor.I64, []int64{0, 1}, 2, 1)
	rows := shpIdx(t, tensor.I32, []int64{1, 2, -3, 0}, 2, 2)
	rowUpd, _ := tensor.FromF64(a, []float64{1, 2}, 2) // of the declared rank: Infer checks the updates' shape first
	for range 30 {
		shpWantKernelErr(t, a, "scatter_elements", ir.A("axis", 1), []ir.Type{dyn, shpT(ir.I64, -1, -1), dyn}, []*tensor.Tensor{data, idx, upd}, "index 3 at position [1 1]", "size 3")
		shpWantKernelErr(t, a, "scatter_elements", ir.A("axis", 1), []ir.Type{dyn, shpT(ir.I64, -1, -1), dyn}, []*tensor.Tensor{data, short, upd}, "updates", "differ in shape")
		shpWantKernelErr(t, a, "gather_nd", nil, []ir.Type{dyn, shpT(ir.I32, -1, 2)}, []*tensor.Tensor{data, rows}, "index -3 at position [1 0]", "dim 0")
		shpWantKernelErr(t, a, "scatter_nd", nil, []ir.Type{dyn, shpT(ir.I32, -1, 2), shpT(ir.F64, -1)}, []*tensor.Tensor{data, rows, rowUpd}, "index -3")
		shpWantKernelErr(t, a, "scatter_nd_grad", nil, []ir.Type{dyn, shpT(ir.I32, -1, 2)}, []*tensor.Tensor{data, rows}, "index -3")
		shpWantKernelErr(t, a, "scatter_elements_grad", ir.A("axis", 1), []ir.Type{dyn, shpT(ir.I64, -1, -1)}, []*tensor.Tensor{data, idx}, "index 3")
		shpWantKernelErr(t, a, "gather_nd", ir.A("batch_dims", 1), []ir.Type{dyn, shpT(ir.I64, -1, 1)}, []*tensor.Tensor{data, shpIdx(t, tensor.I64, []int64{0, 1, 2}, 3, 1)}, "batch dims")
	}
	release(data, upd, idx, short, rows, rowUpd)
	wantAllocated(t, a, 0)

	// OOM at every step.
	x := randTensor(t, host, r, tensor.F32, 7, 11)
	xi := shpRandIdx(t, r, tensor.I64, 7, true, 3, 11)
	xu := randTensor(t, host, r, tensor.F32, 3, 11)
	xr := sctRandRows(t, r, []int{7}, []int{4, 1})
	xru := randTensor(t, host, r, tensor.F32, 4, 11)
	xd := f64Rand(t, r, -1, 1, 7, 11)
	for _, c := range []struct {
		name  string
		attrs ir.Attrs
		in    []*tensor.Tensor
		fails int
	}{
		{"scatter_elements", ir.A("reduction", "add"), []*tensor.Tensor{x, xi, xu}, 4},
		{"gather_nd", nil, []*tensor.Tensor{x, xr}, 2},
		{"scatter_nd", ir.A("reduction", "mul"), []*tensor.Tensor{x, xr, xu}, 4},
		{"scatter_elements_grad", nil, []*tensor.Tensor{xd, xi}, 12},
		{"scatter_nd_grad", nil, []*tensor.Tensor{xd, xr}, 5},
	} {
		if c.name == "scatter_nd" {
			c.in[2] = xru
		}
		if n := shpOOMSweep(t, c.name, c.attrs, c.in...); n < c.fails {
			t.Fatalf("%s failed under %d limits, want at least %d", c.name, n, c.fails)
		}
	}
	release(x, xi, xu, xr, xru, xd)

	b := ir.NewBuilder(ir.NewProgram())
	d := ops.Data(b, "d", ir.F32, -1, 4, 5)
	i := ops.Data(b, "i", ir.I64, 3, 2, 1)
	g := ops.GatherND(b, d, i, 1)
	s := ops.ScatterND(b, d, i, ops.Data(b, "u", ir.F32, 3, 2, 5), 1, "add")
	e := ops.ScatterElements(b, d, ops.Data(b, "j", ir.I32, 3, 1, 5), ops.Data(b, "v", ir.F32, 3, 1, 5), 1, "none")
	if !g.Type().Equal(shpT(ir.F32, 3, 2, 5)) || !s.Type().Equal(shpT(ir.F32, -1, 4, 5)) || !e.Type().Equal(shpT(ir.F32, -1, 4, 5)) || b.Err() != nil {
		t.Fatalf("builders: %v %v %v %v", g.Type(), s.Type(), e.Type(), b.Err())
	}
}

func TestScatterGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(81, 82))
	x := func(shape ...int) *tensor.Tensor { return f64Rand(t, r, -1, 1, shape...) }
	// Repeated indices: the last update of each element gets its gradient.
	idx := shpIdx(t, tensor.I64, []int64{0, 2, -3, 1, 2, 0, 0, 1}, 4, 2)
	rows := shpIdx(t, tensor.I32, []int64{1, 0, 2, -1, 1, -3}, 3, 2)
	cases := []shpGradCase{
		{name: "scatter_elements", attrs: ir.A("reduction", "none"), in: []*tensor.Tensor{x(3, 2), idx, x(4, 2)}, dyn: [][]int{{0}, {0}}},
		{name: "scatter_elements", attrs: ir.A("reduction", "add", "axis", -2), in: []*tensor.Tensor{x(3, 2), idx, x(4, 2)}},
		{name: "gather_nd", in: []*tensor.Tensor{x(3, 3, 2), rows}, dyn: [][]int{{0, 2}}},
		{name: "gather_nd", attrs: ir.A("batch_dims", 1), in: []*tensor.Tensor{x(3, 3, 2), shpIdx(t, tensor.I64, []int64{1, 0, 2}, 3, 1)}},
		{name: "scatter_nd", in: []*tensor.Tensor{x(3, 3, 2), rows, x(3, 2)}, dyn: [][]int{{2}}},
		{name: "scatter_nd", attrs: ir.A("reduction", "add"), in: []*tensor.Tensor{x(3, 3, 2), rows, x(3, 2)}},
		{name: "scatter_nd", attrs: ir.A("batch_dims", 1), in: []*tensor.Tensor{x(3, 3, 2), shpIdx(t, tensor.I64, []int64{1, 0, 2}, 3, 1, 1), x(3, 1, 2)}},
	}
	for _, c := range cases {
		checkOpGrad(t, c.name, c.attrs, c.in...)
		for mode := range shpModeNames {
			shpCheckGrad(t, mode, c)
		}
	}
}

// TestScatterGradRefused: the combining reductions other than add have no
// rule, and say so.
func TestScatterGradRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		in   []ir.Type
	}{
		{"scatter_elements", []ir.Type{shpT(ir.F64, 3), shpT(ir.I64, 2), shpT(ir.F64, 2)}},
		{"scatter_nd", []ir.Type{shpT(ir.F64, 3), shpT(ir.I64, 2, 1), shpT(ir.F64, 2)}},
	} {
		for _, red := range []string{"mul", "max", "min"} {
			b := ir.NewBuilder(ir.NewProgram())
			var vals []*ir.Value
			for i, typ := range c.in {
				vals = append(vals, ops.Data(b, fmt.Sprint("x", i), typ.DType, typ.Dims...))
			}
			y := b.Op1(c.name, ir.A("reduction", red), vals...)
			_, err := autodiff.Backward(b, ops.ReduceSum(b, y, nil, false), []*ir.Value{vals[0]})
			if err == nil || !strings.Contains(err.Error(), "reduction \""+red+"\" are not implemented") {
				t.Fatalf("%s %s: %v, want an error", c.name, red, err)
			}
		}
	}
}

// TestScatterDonatedByExecutor runs a chain of scatters on a computed
// value through the executor: with donation each scatter updates the
// value in place, so the peak holds one copy of the data instead of two;
// the results equal those without donation, and nothing leaks.
func TestScatterDonatedByExecutor(t *testing.T) {
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F32, 64, 64)
	i := ops.Data(b, "i", ir.I64, 1, 64)
	u := ops.Data(b, "u", ir.F32, 1, 64)
	rows := ops.Data(b, "r", ir.I64, 2, 1)
	ru := ops.Data(b, "ru", ir.F32, 2, 64)
	y := ops.Scale(b, x, 2, 0)
	y = ops.ScatterElements(b, y, i, u, 0, "add")
	y = ops.ScatterND(b, y, rows, ru, 0, "none")
	ops.Fetch(b, "y", y)
	p, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(83, 84))
	feeds := map[string]*tensor.Tensor{
		"x":  randTensor(t, host, r, tensor.F32, 64, 64),
		"i":  shpRandIdx(t, r, tensor.I64, 64, true, 1, 64),
		"u":  randTensor(t, host, r, tensor.F32, 1, 64),
		"r":  shpIdx(t, tensor.I64, []int64{5, -1}, 2, 1),
		"ru": randTensor(t, host, r, tensor.F32, 2, 64),
	}
	var results [][]float32
	var peaks []int64
	for _, noDonate := range []bool{false, true} {
		a := memory.New(memory.Options{})
		x, err := exec.Compile(p, exec.Options{Alloc: a, CheckLeaks: true, NoDonate: noDonate})
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			res, err := x.Run(context.Background(), feeds)
			if err != nil {
				t.Fatal(err)
			}
			results = append(results, slices.Clone(res["y"].F32()))
			res.Release()
			wantAllocated(t, a, 0)
		}
		peaks = append(peaks, a.Stats().Allocated.Peak)
	}
	for _, got := range results[1:] {
		if !slices.Equal(got, results[0]) {
			t.Fatal("results differ between runs or with donation off")
		}
	}
	if peaks[0] >= peaks[1] {
		t.Fatalf("peak %d bytes with donation, %d without: no scatter ran in place", peaks[0], peaks[1])
	}
	for _, f := range feeds {
		f.Release()
	}
}
