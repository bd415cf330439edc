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

// Tests of the ops with run-time shapes of dyn_shape.go, against naive
// references written here.

// dynVec returns a 1-D index tensor of dtype dt (i32 or i64) on host.
func dynVec(t testing.TB, dt tensor.DType, vals ...int64) *tensor.Tensor {
	t.Helper()
	return shpIdx(t, dt, vals, len(vals))
}

// dynRun runs op name on in, with the operands' exact types (index
// vectors have static lengths), and returns its results.
func dynRun(t testing.TB, a *memory.Allocator, name string, attrs ir.Attrs, in ...*tensor.Tensor) []*tensor.Tensor {
	t.Helper()
	return shpRunThreads(t, a, 2, name, attrs, shpTypes(false, in...), in...)
}

// dynWantKernelErr is shpWantKernelErr with the operands' exact types.
func dynWantKernelErr(t *testing.T, a *memory.Allocator, name string, attrs ir.Attrs, in []*tensor.Tensor, want ...string) {
	t.Helper()
	shpWantKernelErr(t, a, name, attrs, shpTypes(false, in...), in, want...)
}

// dynInferType asserts the result type of op name over in.
func dynInferType(t *testing.T, name string, attrs ir.Attrs, want ir.Type, in ...ir.Type) {
	t.Helper()
	ewInferType(t, name, attrs, want, in...)
}

func TestDynShapeSize(t *testing.T) {
	shpDebug(t)
	r := rand.New(rand.NewPCG(1, 1))
	a := memory.New(memory.Options{})
	for _, dt := range shpDTypes {
		for rank := range 5 {
			shape := shpShape(r, rank)
			x := randTensor(t, a, r, dt, shape...)
			for _, dyn := range []bool{false, true} {
				s := shpRunThreads(t, a, 1, "shape", nil, shpTypes(dyn, x), x)[0]
				want := make([]float64, rank)
				for i, d := range shape {
					want[i] = float64(d)
				}
				if s.DType() != tensor.I64 {
					t.Fatalf("shape: dtype %s", s.DType())
				}
				closeEnough(t, "shape", s, want, []int{rank}, 0)
				n := shpRunThreads(t, a, 1, "size", nil, shpTypes(dyn, x), x)[0]
				closeEnough(t, "size", n, []float64{float64(shpSize(shape))}, nil, 0)
				release(s, n)
			}
			x.Release()
		}
	}
	wantAllocated(t, a, 0)
	dynInferType(t, "shape", nil, shpT(ir.I64, 3), shpT(ir.I1, -1, 2, -1))
	dynInferType(t, "shape", nil, shpT(ir.I64, 0), shpT(ir.F32))
	dynInferType(t, "size", nil, shpT(ir.I64), shpT(ir.F64, -1, 0))
	shpWantErr(t, "shape", nil, nil, "1 operands")
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F32, -1, 4)
	if s, n := ops.Shape(b, x), ops.Size(b, x); !s.Type().Equal(shpT(ir.I64, 2)) || !n.Type().Equal(shpT(ir.I64)) || b.Err() != nil {
		t.Fatalf("Shape, Size: %v %v %v", s.Type(), n.Type(), b.Err())
	}
}

// dynRefReshape is ONNX's reshape rule: a 0 copies the input dim unless
// allowZero, one -1 takes the rest. ok is false where ONNX fails.
func dynRefReshape(in, spec []int, allowZero bool) ([]int, bool) {
	out := slices.Clone(spec)
	n, p, infer := shpSize(in), 1, -1
	for i, d := range out {
		switch {
		case d == 0 && !allowZero:
			if i >= len(in) {
				return nil, false
			}
			out[i] = in[i]
			p *= in[i]
		case d == -1 && infer < 0:
			infer = i
		case d < 0:
			return nil, false
		default:
			p *= d
		}
	}
	if infer >= 0 {
		if p == 0 || n%p != 0 {
			return nil, false
		}
		out[infer] = n / p
	}
	return out, shpSize(out) == n
}

func TestDynReshape(t *testing.T) {
	shpDebug(t)
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(2, 2))
	for _, c := range []struct {
		in, spec  []int
		allowZero bool
		err       string
	}{
		{[]int{2, 3, 4}, []int{4, 0, -1}, false, ""},
		{[]int{2, 3, 4}, []int{0, -1}, false, ""},
		{[]int{2, 3, 4}, []int{2, 0, 4, 1}, false, ""},
		{[]int{2, 3, 4}, []int{-1}, false, ""},
		{[]int{2, 3, 4}, []int{3, 8}, true, ""},
		{[]int{0, 3, 4}, []int{3, 4, 0}, true, ""},
		{[]int{0, 3, 4}, []int{0, -1}, false, "ambiguous"},
		{[]int{1}, []int{}, false, ""},
		{[]int{}, []int{1, 1}, false, ""},
		{[]int{0, 3, 4}, []int{3, 4, 0}, false, "48 elements"},
		{[]int{2, 3}, []int{-1, -1}, false, "more than one -1"},
		{[]int{2, 3}, []int{4, -1}, false, "cannot be inferred"},
		{[]int{2, 3}, []int{0, 0, 0}, false, "copies dim 2"},
		{[]int{2, 3}, []int{-2, 3}, false, "sizes >= 0"},
		{[]int{0, 3}, []int{0, -1}, true, "ambiguous"},
	} {
		for _, dt := range []tensor.DType{tensor.I32, tensor.I64} {
			x := randTensor(t, a, r, tensor.F32, c.in...)
			spec := make([]int64, len(c.spec))
			for i, d := range c.spec {
				spec[i] = int64(d)
			}
			s := dynVec(t, dt, spec...)
			attrs := ir.A("allowzero", c.allowZero)
			if c.err != "" {
				dynWantKernelErr(t, a, "reshape_dyn", attrs, []*tensor.Tensor{x, s}, c.err)
				release(x, s)
				continue
			}
			want, ok := dynRefReshape(c.in, c.spec, c.allowZero)
			if !ok {
				t.Fatalf("bad case %v", c)
			}
			before, allocs := a.Stats().Allocated.Current, a.Stats().Allocs
			y := dynRun(t, a, "reshape_dyn", attrs, x, s)[0]
			if y.Storage() != x.Storage() || a.Stats().Allocated.Current != before || a.Stats().Allocs != allocs {
				t.Fatalf("reshape_dyn %v to %v: not a view", c.in, c.spec)
			}
			closeEnough(t, fmt.Sprintf("reshape_dyn %v to %v", c.in, c.spec), y, shpVals(x), want, 0)
			// The dims the builder declares are checked.
			dims := slices.Repeat([]int{-1}, len(want))
			if len(want) > 0 {
				dims[0] = want[0]
				y2 := dynRun(t, a, "reshape_dyn", ir.A("allowzero", c.allowZero, "dims", dims), x, s)[0]
				if y2.Storage() != x.Storage() {
					t.Fatalf("reshape_dyn with dims: not a view")
				}
				y2.Release()
				dims[0] = want[0] + 1
				dynWantKernelErr(t, a, "reshape_dyn", ir.A("allowzero", c.allowZero, "dims", dims), []*tensor.Tensor{x, s}, "differs from the declared")
			}
			release(y, x, s)
		}
	}
	wantAllocated(t, a, 0)

	// Types: the rank is the shape's length; dims refine it.
	dynInferType(t, "reshape_dyn", nil, shpT(ir.F32, -1, -1, -1), shpT(ir.F32, 2, 3), shpT(ir.I64, 3))
	dynInferType(t, "reshape_dyn", ir.A("dims", []int{-1, 784}), shpT(ir.I1, -1, 784), shpT(ir.I1, -1, 28, 28), shpT(ir.I32, 2))
	shpWantErr(t, "reshape_dyn", nil, []ir.Type{shpT(ir.F32, 6), shpT(ir.I64, -1)}, "static length")
	shpWantErr(t, "reshape_dyn", nil, []ir.Type{shpT(ir.F32, 6), shpT(ir.I64, 1, 2)}, "1-D i32 or i64")
	shpWantErr(t, "reshape_dyn", nil, []ir.Type{shpT(ir.F32, 6), shpT(ir.F32, 2)}, "1-D i32 or i64")
	shpWantErr(t, "reshape_dyn", ir.A("dims", []int{2}), []ir.Type{shpT(ir.F32, 6), shpT(ir.I64, 2)}, "1 entries for a result of rank 2")
	shpWantErr(t, "reshape_dyn", ir.A("dims", []int{2, -3}), []ir.Type{shpT(ir.F32, 6), shpT(ir.I64, 2)}, "sizes >= 0 or -1")
	shpWantErr(t, "reshape_dyn", ir.A("allowzero", 2.5), []ir.Type{shpT(ir.F32, 6), shpT(ir.I64, 2)}, "allowzero")
	shpWantErr(t, "reshape_dyn", nil, []ir.Type{shpT(ir.F32, 6)}, "2 operands")
	b := ir.NewBuilder(ir.NewProgram())
	y := ops.ReshapeDyn(b, ops.Data(b, "x", ir.F32, -1, 3), ops.Data(b, "s", ir.I64, 2), false, []int{-1, 3})
	z := ops.ReshapeDyn(b, ops.Data(b, "x2", ir.F32, 4), ops.Data(b, "s2", ir.I64, 3), true, nil)
	if !y.Type().Equal(shpT(ir.F32, -1, 3)) || !z.Type().Equal(shpT(ir.F32, -1, -1, -1)) || b.Err() != nil {
		t.Fatalf("ReshapeDyn: %v %v %v", y.Type(), z.Type(), b.Err())
	}
}

func TestDynSqueezeUnsqueeze(t *testing.T) {
	shpDebug(t)
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(3, 3))
	for _, dt := range shpDTypes {
		for range 20 {
			// unsqueeze: k random result positions, any order, some negative.
			shape := shpShape(r, r.IntN(4))
			k := r.IntN(3)
			rank := len(shape) + k
			pos := r.Perm(rank)[:k]
			axes := make([]int64, k)
			for i, p := range pos {
				axes[i] = int64(p)
				if r.IntN(2) == 0 {
					axes[i] -= int64(rank)
				}
			}
			want := make([]int, 0, rank)
			j := 0
			for i := range rank {
				if slices.Contains(pos, i) {
					want = append(want, 1)
				} else {
					want = append(want, shape[j])
					j++
				}
			}
			x := randTensor(t, a, r, dt, shape...)
			ax := dynVec(t, tensor.I64, axes...)
			y := dynRun(t, a, "unsqueeze_dyn", nil, x, ax)[0]
			if y.Storage() != x.Storage() {
				t.Fatalf("unsqueeze_dyn: not a view")
			}
			closeEnough(t, fmt.Sprintf("unsqueeze_dyn %v %v", shape, axes), y, shpVals(x), want, 0)
			// squeeze_dyn takes the dims back out.
			if k > 0 {
				z := dynRun(t, a, "squeeze_dyn", nil, y, ax)[0]
				if z.Storage() != x.Storage() {
					t.Fatalf("squeeze_dyn: not a view")
				}
				closeEnough(t, fmt.Sprintf("squeeze_dyn %v %v", want, axes), z, shpVals(x), shape, 0)
				z.Release()
			}
			release(y, x, ax)
		}
	}
	wantAllocated(t, a, 0)

	// Kernel errors.
	x := randTensor(t, a, r, tensor.F32, 1, 3, 1)
	for _, c := range []struct {
		name string
		axes []int64
		err  string
	}{
		{"squeeze_dyn", []int64{1}, "size is not 1"},
		{"squeeze_dyn", []int64{0, -3}, "appears twice"},
		{"squeeze_dyn", []int64{3}, "out of range"},
		{"unsqueeze_dyn", []int64{5}, "out of range"},
		{"unsqueeze_dyn", []int64{1, 1}, "appears twice"},
	} {
		ax := dynVec(t, tensor.I32, c.axes...)
		dynWantKernelErr(t, a, c.name, nil, []*tensor.Tensor{x, ax}, c.err)
		ax.Release()
	}
	x.Release()
	wantAllocated(t, a, 0)

	// Types: a result dim is static when every choice of axes gives it.
	dynInferType(t, "squeeze_dyn", nil, shpT(ir.F32, 3, 4, 5), shpT(ir.F32, 1, 3, 4, 5), shpT(ir.I64, 1))
	dynInferType(t, "squeeze_dyn", nil, shpT(ir.F32, -1, -1, 5), shpT(ir.F32, 1, 3, 1, 5), shpT(ir.I64, 1))
	dynInferType(t, "squeeze_dyn", nil, shpT(ir.F32, 3, 5), shpT(ir.F32, 1, 3, 1, 5), shpT(ir.I64, 2))
	dynInferType(t, "squeeze_dyn", nil, shpT(ir.F32, 3), shpT(ir.F32, -1, 3), shpT(ir.I32, 1))
	dynInferType(t, "unsqueeze_dyn", nil, shpT(ir.F32, -1, -1, -1, -1), shpT(ir.F32, 3, 4, 5), shpT(ir.I64, 1))
	dynInferType(t, "unsqueeze_dyn", nil, shpT(ir.F32, 1, 1), shpT(ir.F32), shpT(ir.I64, 2))
	dynInferType(t, "unsqueeze_dyn", nil, shpT(ir.F32, 1, 1, 1), shpT(ir.F32, 1, 1), shpT(ir.I64, 1))
	dynInferType(t, "unsqueeze_dyn", nil, shpT(ir.F32, 2, 3), shpT(ir.F32, 2, 3), shpT(ir.I64, 0))
	// Past 4096 choices every dim is dynamic.
	dynInferType(t, "unsqueeze_dyn", nil, shpT(ir.F32, slices.Repeat([]int{-1}, 18)...), shpT(ir.F32, slices.Repeat([]int{1}, 12)...), shpT(ir.I64, 6))
	shpWantErr(t, "squeeze_dyn", nil, []ir.Type{shpT(ir.F32, 2, 3), shpT(ir.I64, 1)}, "at most 0")
	shpWantErr(t, "squeeze_dyn", nil, []ir.Type{shpT(ir.F32, 1, 3), shpT(ir.I64, 0)}, "empty")
	shpWantErr(t, "squeeze_dyn", nil, []ir.Type{shpT(ir.F32, 1, 3), shpT(ir.I64, -1)}, "static length")
	shpWantErr(t, "unsqueeze_dyn", nil, []ir.Type{shpT(ir.F32, 1, 3), shpT(ir.F64, 1)}, "1-D i32 or i64")
	b := ir.NewBuilder(ir.NewProgram())
	y := ops.SqueezeDyn(b, ops.Data(b, "x", ir.F32, -1, 3), ops.Data(b, "a", ir.I64, 1))
	z := ops.UnsqueezeDyn(b, ops.Data(b, "x2", ir.F32), ops.Data(b, "a2", ir.I64, 1))
	if !y.Type().Equal(shpT(ir.F32, 3)) || !z.Type().Equal(shpT(ir.F32, 1)) || b.Err() != nil {
		t.Fatalf("SqueezeDyn, UnsqueezeDyn: %v %v %v", y.Type(), z.Type(), b.Err())
	}
}

// dynRefBroadcast is two-way broadcasting of dims and shape; ok is false
// where they do not broadcast.
func dynRefBroadcast(dims, shape []int) ([]int, bool) {
	r := max(len(dims), len(shape))
	out := make([]int, r)
	for i := range r {
		d, s := 1, 1
		if j := i - (r - len(dims)); j >= 0 {
			d = dims[j]
		}
		if j := i - (r - len(shape)); j >= 0 {
			s = shape[j]
		}
		switch {
		case d == s || s == 1:
			out[i] = d
		case d == 1:
			out[i] = s
		default:
			return nil, false
		}
	}
	return out, true
}

func TestDynExpand(t *testing.T) {
	shpDebug(t)
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(4, 4))
	check := func(dt tensor.DType, dims, shape []int, threads int) {
		t.Helper()
		out, ok := dynRefBroadcast(dims, shape)
		if !ok {
			t.Fatalf("bad case %v %v", dims, shape)
		}
		x := randTensor(t, a, r, dt, dims...)
		spec := make([]int64, len(shape))
		for i, d := range shape {
			spec[i] = int64(d)
		}
		s := dynVec(t, tensor.I64, spec...)
		xs := shpVals(x)
		want := shpRef(xs, out, func(idx []int) int {
			src := idx[len(out)-len(dims):]
			p := 0
			for i, d := range dims {
				p = p*d + min(src[i], d-1)
			}
			return p
		})
		y := shpRunThreads(t, a, threads, "expand_dyn", ir.A("dims", out), shpTypes(false, x, s), x, s)[0]
		closeEnough(t, fmt.Sprintf("expand_dyn %v with %v", dims, shape), y, want, out, 0)
		release(y, x, s)
	}
	for _, dt := range shpDTypes {
		for range 40 {
			dims := shpShape(r, r.IntN(4))
			// A shape that broadcasts with dims: per dim 1 (keep), the
			// dim itself, or a new size where dims has 1; maybe longer.
			var shape []int
			for range r.IntN(2) {
				shape = append(shape, shpDim(r))
			}
			for _, d := range dims {
				switch {
				case r.IntN(3) == 0:
					shape = append(shape, 1)
				case d == 1:
					shape = append(shape, shpDim(r))
				default:
					shape = append(shape, d)
				}
			}
			if len(shape) > 0 && r.IntN(3) == 0 {
				shape = shape[r.IntN(len(shape)):] // shorter than dims
			}
			check(dt, dims, shape, 2)
		}
	}
	check(tensor.F32, []int{301, 1}, []int{301, 257}, 4) // in parallel
	check(tensor.F64, []int{1, 7}, []int{3, 1, 1}, 1)
	wantAllocated(t, a, 0)

	x := randTensor(t, a, r, tensor.F32, 3, 2)
	for _, c := range []struct {
		shape []int64
		attrs ir.Attrs
		err   string
	}{
		{[]int64{4}, nil, "dim 1 is 2 against 4"},
		{[]int64{-1, 2}, nil, "sizes >= 0"},
		{[]int64{2, 3, 2}, ir.A("dims", []int{3, 3, 2}), "differs from the declared"},
	} {
		s := dynVec(t, tensor.I64, c.shape...)
		dynWantKernelErr(t, a, "expand_dyn", c.attrs, []*tensor.Tensor{x, s}, c.err)
		s.Release()
	}
	x.Release()
	wantAllocated(t, a, 0)

	dynInferType(t, "expand_dyn", nil, shpT(ir.F32, -1, 3, -1), shpT(ir.F32, 3, 1), shpT(ir.I64, 3))
	dynInferType(t, "expand_dyn", nil, shpT(ir.F32, 3, -1), shpT(ir.F32, 3, -1), shpT(ir.I64, 1))
	dynInferType(t, "expand_dyn", ir.A("dims", []int{2, 3, -1}), shpT(ir.F32, 2, 3, -1), shpT(ir.F32, 3, 1), shpT(ir.I64, 3))
	shpWantErr(t, "expand_dyn", ir.A("dims", []int{2, 4, 6}), []ir.Type{shpT(ir.F32, 3, 1), shpT(ir.I64, 3)}, "contradicts")
	shpWantErr(t, "expand_dyn", nil, []ir.Type{shpT(ir.F32, 3, 1), shpT(ir.I64, -1)}, "static length")
	b := ir.NewBuilder(ir.NewProgram())
	y := ops.ExpandDyn(b, ops.Data(b, "x", ir.F32, -1, 1), ops.Data(b, "s", ir.I64, 2), []int{-1, 5})
	z := ops.ExpandDyn(b, ops.Data(b, "x2", ir.F32, 2), ops.Data(b, "s2", ir.I64, 2), nil)
	if !y.Type().Equal(shpT(ir.F32, -1, 5)) || !z.Type().Equal(shpT(ir.F32, -1, 2)) || b.Err() != nil {
		t.Fatalf("ExpandDyn: %v %v %v", y.Type(), z.Type(), b.Err())
	}
}

func TestDynConstantOfShape(t *testing.T) {
	shpDebug(t)
	a := memory.New(memory.Options{})
	for _, c := range []struct {
		dt    ir.DType
		value ir.Attr
		want  float64
	}{
		{ir.F32, ir.Float(1.5), 1.5},
		{ir.F64, ir.Int(-3), -3},
		{ir.I32, ir.Int(7), 7},
		{ir.I64, ir.Float(0), 0},
		{ir.I1, ir.Int(1), 1},
	} {
		for _, shape := range [][]int{{2, 3}, {}, {0, 4}, {5}} {
			spec := make([]int64, len(shape))
			for i, d := range shape {
				spec[i] = int64(d)
			}
			s := dynVec(t, tensor.I32, spec...)
			y := dynRun(t, a, "constant_of_shape", ir.A("value", c.value, "dtype", c.dt), s)[0]
			want := make([]float64, shpSize(shape))
			for i := range want {
				want[i] = c.want
			}
			if ir.DType(y.DType()) != c.dt {
				t.Fatalf("constant_of_shape: dtype %s, want %s", y.DType(), c.dt)
			}
			closeEnough(t, fmt.Sprintf("constant_of_shape %v %s", shape, c.dt), y, want, shape, 0)
			release(y, s)
		}
	}
	// i64 values stay exact.
	s := dynVec(t, tensor.I64, 2)
	y := dynRun(t, a, "constant_of_shape", ir.A("value", ir.Int(1<<62+1), "dtype", ir.I64), s)[0]
	if y.I64()[1] != 1<<62+1 {
		t.Fatalf("constant_of_shape i64: %d", y.I64()[1])
	}
	y.Release()
	neg := dynVec(t, tensor.I64, 2, -1)
	dynWantKernelErr(t, a, "constant_of_shape", ir.A("value", 1, "dtype", ir.F32), []*tensor.Tensor{neg}, "sizes >= 0")
	dynWantKernelErr(t, a, "constant_of_shape", ir.A("value", 1, "dtype", ir.F32, "dims", []int{3}), []*tensor.Tensor{s}, "differs from the declared")
	release(s, neg)
	wantAllocated(t, a, 0)

	dynInferType(t, "constant_of_shape", ir.A("value", 0, "dtype", ir.F32), shpT(ir.F32, -1, -1), shpT(ir.I64, 2))
	dynInferType(t, "constant_of_shape", ir.A("value", 0, "dtype", ir.I32, "dims", []int{-1, 16}), shpT(ir.I32, -1, 16), shpT(ir.I64, 2))
	shpWantErr(t, "constant_of_shape", ir.A("value", 0.5, "dtype", ir.I64), []ir.Type{shpT(ir.I64, 2)}, "not an integer")
	shpWantErr(t, "constant_of_shape", ir.A("value", 0), []ir.Type{shpT(ir.I64, 2)}, "dtype")
	shpWantErr(t, "constant_of_shape", ir.A("value", 0, "dtype", ir.F32), []ir.Type{shpT(ir.I64, -1)}, "static length")
	b := ir.NewBuilder(ir.NewProgram())
	v := ops.ConstantOfShape(b, ops.Data(b, "s", ir.I64, 2), ir.I64, ir.Int(3), []int{-1, 16})
	w := ops.ConstantOfShape(b, ops.Data(b, "s2", ir.I64, 1), ir.F32, ir.Float(0), nil)
	if !v.Type().Equal(shpT(ir.I64, -1, 16)) || !w.Type().Equal(shpT(ir.F32, -1)) || b.Err() != nil {
		t.Fatalf("ConstantOfShape: %v %v %v", v.Type(), w.Type(), b.Err())
	}
}

// dynRefRange is start, start+delta, ... before limit, in float64.
func dynRefRange(start, limit, delta float64) []float64 {
	var out []float64
	n := math.Ceil((limit - start) / delta)
	for i := 0; float64(i) < n; i++ {
		out = append(out, start+float64(i)*delta)
	}
	return out
}

func TestDynRange(t *testing.T) {
	a := memory.New(memory.Options{})
	scalar := func(dt tensor.DType, v float64) *tensor.Tensor {
		s, err := tensor.Scalar(host, dt, v)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, c := range []struct {
		start, limit, delta float64
	}{
		{0, 5, 1}, {1, 10, 3}, {10, 4, -2}, {10, 4, 3}, {-3, -3, 1}, {2.5, 7, 0.75}, {1, 0.1, -0.3}, {0, 1e3, 7},
	} {
		want := dynRefRange(c.start, c.limit, c.delta)
		for _, dt := range []tensor.DType{tensor.F32, tensor.F64, tensor.I32, tensor.I64} {
			if dt != tensor.F32 && dt != tensor.F64 && (c.start != math.Trunc(c.start) || c.delta != math.Trunc(c.delta) || c.limit != math.Trunc(c.limit)) {
				continue
			}
			in := []*tensor.Tensor{scalar(dt, c.start), scalar(dt, c.limit), scalar(dt, c.delta)}
			y := dynRun(t, a, "range", nil, in...)[0]
			if y.DType() != dt {
				t.Fatalf("range: dtype %s, want %s", y.DType(), dt)
			}
			closeEnough(t, fmt.Sprintf("range(%v, %v, %v) %s", c.start, c.limit, c.delta, dt), y, want, []int{len(want)}, 1e-6)
			release(y)
			release(in...)
		}
	}
	// Integers are exact at the ends of their range.
	big := func(vs ...int64) []*tensor.Tensor {
		out := make([]*tensor.Tensor, len(vs))
		for i, v := range vs {
			out[i] = shpIdx(t, tensor.I64, []int64{v}, []int{}...)
		}
		return out
	}
	in := big(math.MaxInt64-2, math.MaxInt64, 1)
	y := dynRun(t, a, "range", nil, in...)[0]
	if !slices.Equal(y.I64(), []int64{math.MaxInt64 - 2, math.MaxInt64 - 1}) {
		t.Fatalf("range near MaxInt64: %v", y.I64())
	}
	release(y)
	release(in...)
	in = big(math.MaxInt64, math.MinInt64, math.MinInt64)
	y = dynRun(t, a, "range", nil, in...)[0]
	if !slices.Equal(y.I64(), []int64{math.MaxInt64, -1}) {
		t.Fatalf("range with delta MinInt64: %v", y.I64())
	}
	release(y)
	release(in...)
	// Errors.
	for _, c := range []struct {
		in  []*tensor.Tensor
		err string
	}{
		{big(0, 5, 0), "delta is 0"},
		{[]*tensor.Tensor{scalar(tensor.F64, 0), scalar(tensor.F64, 1), scalar(tensor.F64, 0)}, "not finite"},
		{[]*tensor.Tensor{scalar(tensor.F32, 0), scalar(tensor.F32, float64(math.NaN())), scalar(tensor.F32, 1)}, "not finite"},
		{big(0, 1<<41, 1), "2^40"},
	} {
		dynWantKernelErr(t, a, "range", nil, c.in, c.err)
		release(c.in...)
	}
	wantAllocated(t, a, 0)

	dynInferType(t, "range", nil, shpT(ir.I32, -1), shpT(ir.I32), shpT(ir.I32), shpT(ir.I32))
	shpWantErr(t, "range", nil, []ir.Type{shpT(ir.I32), shpT(ir.I64), shpT(ir.I32)}, "differ in dtype")
	shpWantErr(t, "range", nil, []ir.Type{shpT(ir.F32, 1), shpT(ir.F32), shpT(ir.F32)}, "scalars")
	shpWantErr(t, "range", nil, []ir.Type{shpT(ir.I1), shpT(ir.I1), shpT(ir.I1)}, "want f32, f64, i32 or i64")
	b := ir.NewBuilder(ir.NewProgram())
	v := ops.Range(b, ops.Data(b, "s", ir.F64), ops.Data(b, "l", ir.F64), ops.Data(b, "d", ir.F64))
	if !v.Type().Equal(shpT(ir.F64, -1)) || b.Err() != nil {
		t.Fatalf("Range: %v %v", v.Type(), b.Err())
	}
}
