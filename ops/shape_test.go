package ops_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Tests of the shape ops (shape.go): naive references written here, on
// random shapes with size-0, size-1 and prime dims, for every dtype.

var shpDTypes = []tensor.DType{tensor.F32, tensor.F64, tensor.I32, tensor.I64, tensor.Bool}

// shpDebug turns tensor debug mode on for one test.
func shpDebug(t *testing.T) {
	prev := tensor.Debug()
	tensor.SetDebug(true)
	t.Cleanup(func() { tensor.SetDebug(prev) })
}

// shpDim draws a dim: mostly small primes and 1, sometimes 0.
func shpDim(r *rand.Rand) int {
	return []int{0, 1, 1, 2, 3, 3, 5, 7}[r.IntN(8)]
}

func shpShape(r *rand.Rand, rank int) []int {
	s := make([]int, rank)
	for i := range s {
		s[i] = shpDim(r)
	}
	return s
}

// shpVals returns every element of x as float64.
func shpVals(x *tensor.Tensor) []float64 {
	v := make([]float64, x.Len())
	for i := range v {
		v[i] = x.Float64At(i)
	}
	return v
}

func shpSize(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// shpUnravel returns the multi-index of flat position i in shape.
func shpUnravel(i int, shape []int) []int {
	idx := make([]int, len(shape))
	for k := len(shape) - 1; k >= 0; k-- {
		idx[k] = i % shape[k]
		i /= shape[k]
	}
	return idx
}

// shpRavel is the inverse of shpUnravel.
func shpRavel(idx, shape []int) int {
	p := 0
	for k, i := range idx {
		p = p*shape[k] + i
	}
	return p
}

// shpRef builds the expected elements of a result of shape out whose
// element at multi-index idx is x's element src(idx) (a flat position).
func shpRef(x []float64, out []int, src func(idx []int) int) []float64 {
	want := make([]float64, shpSize(out))
	for i := range want {
		want[i] = x[src(shpUnravel(i, out))]
	}
	return want
}

// shpRunTyped builds the op for the given (possibly dynamic) operand types
// and runs its kernel on in.
func shpRunTyped(t testing.TB, a *memory.Allocator, name string, attrs ir.Attrs, types []ir.Type, in ...*tensor.Tensor) ([]*tensor.Tensor, error) {
	t.Helper()
	op, err := buildOp(t, name, attrs, types...)
	if err != nil {
		t.Fatalf("%s: build: %v", name, err)
	}
	k, err := ops.Bind(op)
	if err != nil {
		t.Fatalf("%s: bind: %v", name, err)
	}
	return k(&ops.Ctx{Alloc: a, Threads: 3, Seed: 1}, in)
}

// shpWantErr asserts that building op name over types fails with a message
// holding every string of want.
func shpWantErr(t *testing.T, name string, attrs ir.Attrs, types []ir.Type, want ...string) {
	t.Helper()
	_, err := buildOp(t, name, attrs, types...)
	if err == nil {
		t.Fatalf("%s %s on %v: no error, want one naming %q", name, attrs, types, want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("%s %s on %v: error %q does not name %q", name, attrs, types, err, w)
		}
	}
}

// shpWantKernelErr asserts a kernel error holding every string of want,
// and that nothing stays allocated beyond the inputs.
func shpWantKernelErr(t *testing.T, a *memory.Allocator, name string, attrs ir.Attrs, types []ir.Type, in []*tensor.Tensor, want ...string) {
	t.Helper()
	before := a.Stats().Allocated.Current
	outs, err := shpRunTyped(t, a, name, attrs, types, in...)
	if err == nil {
		release(outs...)
		t.Fatalf("%s %s: no kernel error, want one naming %q", name, attrs, want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("%s %s: kernel error %q does not name %q", name, attrs, err, w)
		}
	}
	wantAllocated(t, a, before)
}

func shpT(dt ir.DType, dims ...int) ir.Type { return ir.TensorOf(dt, dims...) }

// shpCheckView runs a view op and checks that its result shares x's
// storage, costs no bytes and holds x's elements under shape want.
func shpCheckView(t *testing.T, a *memory.Allocator, name string, attrs ir.Attrs, x *tensor.Tensor, want []int) {
	t.Helper()
	before := a.Stats().Allocated.Current
	allocs := a.Stats().Allocs
	refs := x.Refs()
	out := mustRun(t, a, name, attrs, x)[0]
	if out.Storage() != x.Storage() || x.Refs() != refs+1 {
		t.Fatalf("%s: result does not share the input's storage", name)
	}
	if a.Stats().Allocated.Current != before || a.Stats().Allocs != allocs {
		t.Fatalf("%s: the view allocated memory", name)
	}
	closeEnough(t, name, out, shpVals(x), want, 0)
	out.Release()
}

// ---- reshape ----

func TestShpReshape(t *testing.T) {
	shpDebug(t)
	r := rand.New(rand.NewPCG(1, 2))
	a := memory.New(memory.Options{})
	for _, dt := range shpDTypes {
		for range 30 {
			shape := shpShape(r, r.IntN(5))
			x := randTensor(t, a, r, dt, shape...)
			n := x.Len()
			// A random target: factor n into a few dims, maybe with a -1.
			var target, want []int
			switch {
			case n == 0:
				target = []int{0, r.IntN(3) + 1}
				want = target
			case r.IntN(2) == 0:
				target, want = []int{n}, []int{n}
				if r.IntN(2) == 0 {
					target = []int{-1}
				}
			default:
				f := 1
				for _, d := range []int{2, 3, 5, 7} {
					if n%d == 0 {
						f = d
						break
					}
				}
				target, want = []int{f, 1, n / f}, []int{f, 1, n / f}
				if r.IntN(2) == 0 {
					target = []int{f, 1, -1}
				}
				if r.IntN(3) == 0 {
					target = []int{-1, n / f}
					want = []int{f, n / f}
				}
			}
			shpCheckView(t, a, "reshape", ir.A("shape", target), x, want)
			x.Release()
		}
	}
	// Scalars, and 0 as a literal size.
	x := randTensor(t, a, r, tensor.F32)
	shpCheckView(t, a, "reshape", ir.A("shape", []int{1, 1}), x, []int{1, 1})
	shpCheckView(t, a, "reshape", ir.A("shape", []int{-1}), x, []int{1})
	x11 := mustRun(t, a, "reshape", ir.A("shape", []int{1, -1}), x)[0]
	y := mustRun(t, a, "reshape", ir.A("shape", []int{}), x11)
	if y[0].Rank() != 0 || y[0].Storage() != x.Storage() {
		t.Fatalf("reshape to []: %v", y[0])
	}
	release(y[0], x11)
	x.Release()
	x = randTensor(t, a, r, tensor.I32, 3, 0)
	shpCheckView(t, a, "reshape", ir.A("shape", []int{0, 7}), x, []int{0, 7})
	x.Release()
	wantAllocated(t, a, 0)
	// The builder helper.
	b := ir.NewBuilder(ir.NewProgram())
	v := ops.Reshape(b, ops.Data(b, "x", ir.F32, 2, 3), 3, -1)
	if !v.Type().Equal(shpT(ir.F32, 3, 2)) || b.Err() != nil {
		t.Fatalf("Reshape: %v %v", v.Type(), b.Err())
	}
}

func TestShpReshapeInfer(t *testing.T) {
	cases := []struct {
		in, shape, want []int
	}{
		{[]int{2, 3}, []int{3, 2}, []int{3, 2}},
		{[]int{2, 3}, []int{-1}, []int{6}},
		{[]int{-1, 4}, []int{-1, 2}, []int{-1, 2}},
		{[]int{-1, 4}, []int{8}, []int{8}},
		{[]int{-1, 0}, []int{0, -1}, nil}, // -1 next to a 0
		{[]int{-1, 0}, []int{5, 0}, []int{5, 0}},
		{[]int{0, -1}, []int{0}, []int{0}},
		{[]int{}, []int{1, 1, -1}, []int{1, 1, 1}},
	}
	for _, c := range cases {
		b := ir.NewBuilder(ir.NewProgram())
		v := ops.Reshape(b, ops.Data(b, "x", ir.F64, c.in...), c.shape...)
		if c.want == nil {
			if b.Err() == nil {
				t.Errorf("reshape %v to %v: no error", c.in, c.shape)
			}
			continue
		}
		if b.Err() != nil || !v.Type().Equal(shpT(ir.F64, c.want...)) {
			t.Errorf("reshape %v to %v: %v %v, want %v", c.in, c.shape, v.Type(), b.Err(), c.want)
		}
	}
	shpWantErr(t, "reshape", ir.A("shape", []int{4, 2}), []ir.Type{shpT(ir.F32, 2, 3)}, "[2 3]", "[4 2]")
	shpWantErr(t, "reshape", ir.A("shape", []int{4, -1}), []ir.Type{shpT(ir.F32, 2, 3)}, "[2 3]", "[4 -1]")
	shpWantErr(t, "reshape", ir.A("shape", []int{-1, -1}), []ir.Type{shpT(ir.F32, 2, 3)}, "[-1 -1]")
	shpWantErr(t, "reshape", ir.A("shape", []int{-2, 3}), []ir.Type{shpT(ir.F32, 2, 3)}, "[-2 3]")
	shpWantErr(t, "reshape", ir.A("shape", []int{4}), []ir.Type{shpT(ir.F32, -1, 3)}, "[? 3]", "[4]")
	shpWantErr(t, "reshape", nil, []ir.Type{shpT(ir.F32, 2, 3)}, "shape")
	// At run time the count must match, and the error names both shapes.
	a := memory.New(memory.Options{})
	x := randTensor(t, a, rand.New(rand.NewPCG(1, 1)), tensor.F32, 5, 3)
	shpWantKernelErr(t, a, "reshape", ir.A("shape", []int{4, 3}), []ir.Type{shpT(ir.F32, -1, 3)}, []*tensor.Tensor{x}, "[5 3]", "[4 3]")
	outs, err := shpRunTyped(t, a, "reshape", ir.A("shape", []int{3, -1}), []ir.Type{shpT(ir.F32, -1, 3)}, x)
	if err != nil || !slices.Equal(outs[0].Shape(), []int{3, 5}) {
		t.Fatalf("dynamic reshape: %v %v", outs, err)
	}
	release(outs...)
	x.Release()
	wantAllocated(t, a, 0)
}

// ---- transpose ----

func shpTransposeRef(x *tensor.Tensor, perm []int) ([]float64, []int) {
	in := x.Shape()
	out := make([]int, len(perm))
	for i, p := range perm {
		out[i] = in[p]
	}
	return shpRef(shpVals(x), out, func(idx []int) int {
		src := make([]int, len(in))
		for i, p := range perm {
			src[p] = idx[i]
		}
		return shpRavel(src, in)
	}), out
}

func TestShpTranspose(t *testing.T) {
	shpDebug(t)
	r := rand.New(rand.NewPCG(3, 4))
	a := memory.New(memory.Options{})
	check := func(x *tensor.Tensor, perm []int) {
		t.Helper()
		want, shape := shpTransposeRef(x, perm)
		out := mustRun(t, a, "transpose", ir.A("perm", perm), x)[0]
		closeEnough(t, fmt.Sprintf("transpose %v %v", x.Type(), perm), out, want, shape, 0)
		if out.Storage() == x.Storage() {
			t.Fatal("transpose did not copy")
		}
		out.Release()
	}
	for _, dt := range shpDTypes {
		for range 40 {
			x := randTensor(t, a, r, dt, shpShape(r, r.IntN(6))...)
			check(x, r.Perm(x.Rank()))
			x.Release()
		}
	}
	// Large cases: the parallel row copy, the blocked 2-D transpose
	// (batched, odd sizes) and the general strided path.
	for _, c := range []struct {
		shape, perm []int
	}{
		{[]int{257, 263}, []int{1, 0}},
		{[]int{3, 67, 131}, []int{0, 2, 1}},
		{[]int{67, 3, 131}, []int{2, 0, 1}},
		{[]int{31, 37, 41}, []int{2, 1, 0}},
		{[]int{5, 127, 2, 61}, []int{1, 0, 2, 3}},
		{[]int{2, 3, 5, 7, 11, 13}, []int{5, 3, 1, 0, 2, 4}},
		{[]int{1, 300, 1, 200}, []int{3, 2, 1, 0}},
	} {
		for _, dt := range shpDTypes {
			x := randTensor(t, a, r, dt, c.shape...)
			check(x, c.perm)
			x.Release()
		}
	}
	wantAllocated(t, a, 0)
	shpWantErr(t, "transpose", ir.A("perm", []int{0}), []ir.Type{shpT(ir.F32, 2, 3)}, "[0]", "[2 3]")
	shpWantErr(t, "transpose", ir.A("perm", []int{0, 0}), []ir.Type{shpT(ir.F32, 2, 3)}, "[0 0]", "[2 3]")
	shpWantErr(t, "transpose", ir.A("perm", []int{0, 2}), []ir.Type{shpT(ir.F32, 2, 3)}, "[0 2]", "[2 3]")
	b := ir.NewBuilder(ir.NewProgram())
	v := ops.Transpose(b, ops.Data(b, "x", ir.I1, -1, 3, 4), 2, -3, 1)
	if !v.Type().Equal(shpT(ir.I1, 4, -1, 3)) || b.Err() != nil {
		t.Fatalf("Transpose: %v %v", v.Type(), b.Err())
	}
}

// TestShpTransposeThreads checks that every thread count gives the same
// bytes.
func TestShpTransposeThreads(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	a := memory.New(memory.Options{})
	x := randTensor(t, a, r, tensor.F64, 3, 101, 257)
	op, err := buildOp(t, "transpose", ir.A("perm", []int{2, 0, 1}), shpT(ir.F64, 3, 101, 257))
	if err != nil {
		t.Fatal(err)
	}
	k, _ := ops.Bind(op)
	var first []float64
	for threads := 1; threads <= 5; threads++ {
		out, err := k(&ops.Ctx{Alloc: a, Threads: threads}, []*tensor.Tensor{x})
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = slices.Clone(out[0].F64())
		} else if !slices.Equal(first, out[0].F64()) {
			t.Fatalf("threads %d differ", threads)
		}
		release(out...)
	}
	x.Release()
	wantAllocated(t, a, 0)
}

// ---- squeeze / unsqueeze / flatten ----

func TestShpSqueezeUnsqueeze(t *testing.T) {
	shpDebug(t)
	r := rand.New(rand.NewPCG(7, 8))
	a := memory.New(memory.Options{})
	for _, dt := range shpDTypes {
		for range 30 {
			shape := shpShape(r, r.IntN(6))
			x := randTensor(t, a, r, dt, shape...)
			// squeeze with no axes drops every 1.
			var all []int
			for _, d := range shape {
				if d != 1 {
					all = append(all, d)
				}
			}
			shpCheckView(t, a, "squeeze", ir.A("axes", []int{}), x, append([]int{}, all...))
			// squeeze with a random subset of the 1s, some negative.
			var axes []int
			var rest []int
			for i, d := range shape {
				if d == 1 && r.IntN(2) == 0 {
					if r.IntN(2) == 0 {
						axes = append(axes, i)
					} else {
						axes = append(axes, i-len(shape))
					}
					continue
				}
				rest = append(rest, d)
			}
			if len(axes) == 0 {
				rest = all // no axes: every 1 goes
			}
			shpCheckView(t, a, "squeeze", ir.A("axes", append([]int{}, axes...)), x, append([]int{}, rest...))
			// unsqueeze at random result positions.
			k := r.IntN(3)
			res := len(shape) + k
			pos := r.Perm(res)[:k]
			want := make([]int, 0, res)
			j := 0
			for i := range res {
				if slices.Contains(pos, i) {
					want = append(want, 1)
				} else {
					want = append(want, shape[j])
					j++
				}
			}
			for i := range pos {
				if r.IntN(2) == 0 {
					pos[i] -= res
				}
			}
			shpCheckView(t, a, "unsqueeze", ir.A("axes", pos), x, want)
			x.Release()
		}
	}
	wantAllocated(t, a, 0)
	shpWantErr(t, "squeeze", ir.A("axes", []int{1}), []ir.Type{shpT(ir.F32, 1, 3)}, "axis 1", "[1 3]")
	shpWantErr(t, "squeeze", ir.A("axes", []int{2}), []ir.Type{shpT(ir.F32, 1, 3)}, "[1 3]")
	shpWantErr(t, "squeeze", ir.A("axes", []int{0, -2}), []ir.Type{shpT(ir.F32, 1, 3)}, "twice")
	shpWantErr(t, "unsqueeze", ir.A("axes", []int{3}), []ir.Type{shpT(ir.F32, 1, 3)}, "[1 3]")
	shpWantErr(t, "unsqueeze", ir.A("axes", []int{1, 1}), []ir.Type{shpT(ir.F32, 1, 3)}, "twice")
	// A dynamic dim may be squeezed; it is checked at run time. With no
	// axes, dynamic dims are kept.
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F32, -1, 1, 3)
	if v := ops.Squeeze(b, x, 0); !v.Type().Equal(shpT(ir.F32, 1, 3)) {
		t.Fatalf("squeeze dynamic: %v", v.Type())
	}
	if v := ops.Squeeze(b, x); !v.Type().Equal(shpT(ir.F32, -1, 3)) {
		t.Fatalf("squeeze all: %v", v.Type())
	}
	if v := ops.Unsqueeze(b, x, 0, -1); !v.Type().Equal(shpT(ir.F32, 1, -1, 1, 3, 1)) || b.Err() != nil {
		t.Fatalf("unsqueeze: %v %v", v.Type(), b.Err())
	}
	xt := randTensor(t, a, r, tensor.F32, 2, 1, 3)
	shpWantKernelErr(t, a, "squeeze", ir.A("axes", []int{0}), []ir.Type{shpT(ir.F32, -1, 1, 3)}, []*tensor.Tensor{xt}, "axis 0", "tensor<2x1x3xf32>")
	xt.Release()
	wantAllocated(t, a, 0)
}

func TestShpFlatten(t *testing.T) {
	shpDebug(t)
	r := rand.New(rand.NewPCG(9, 10))
	a := memory.New(memory.Options{})
	for _, dt := range shpDTypes {
		for range 30 {
			shape := shpShape(r, 1+r.IntN(5))
			x := randTensor(t, a, r, dt, shape...)
			s := r.IntN(len(shape))
			e := s + r.IntN(len(shape)-s)
			want := slices.Concat(shape[:s], []int{shpSize(shape[s : e+1])}, shape[e+1:])
			ss, ee := s, e
			if r.IntN(2) == 0 {
				ss -= len(shape)
			}
			if r.IntN(2) == 0 {
				ee -= len(shape)
			}
			shpCheckView(t, a, "flatten", ir.A("start_axis", ss, "stop_axis", ee), x, want)
			if len(shape) >= 2 {
				shpCheckView(t, a, "flatten", nil, x, []int{shape[0], shpSize(shape[1:])})
			}
			x.Release()
		}
	}
	x := randTensor(t, a, r, tensor.I64)
	shpCheckView(t, a, "flatten", nil, x, []int{1})
	x.Release()
	wantAllocated(t, a, 0)
	shpWantErr(t, "flatten", ir.A("start_axis", 2, "stop_axis", 1), []ir.Type{shpT(ir.F32, 2, 3, 4)}, "[2 3 4]")
	shpWantErr(t, "flatten", ir.A("start_axis", 0, "stop_axis", 3), []ir.Type{shpT(ir.F32, 2, 3, 4)}, "[2 3 4]")
	shpWantErr(t, "flatten", nil, []ir.Type{shpT(ir.F32, 4)}, "[4]")
	b := ir.NewBuilder(ir.NewProgram())
	v := ops.Flatten(b, ops.Data(b, "x", ir.F32, 2, -1, 3, 5), 1, -1)
	w := ops.Flatten(b, ops.Data(b, "y", ir.F32, 2, 0, -1, 5), 0, 2)
	if !v.Type().Equal(shpT(ir.F32, 2, -1)) || !w.Type().Equal(shpT(ir.F32, 0, 5)) || b.Err() != nil {
		t.Fatalf("Flatten: %v %v %v", v.Type(), w.Type(), b.Err())
	}
}

// ---- expand ----

func TestShpExpand(t *testing.T) {
	shpDebug(t)
	r := rand.New(rand.NewPCG(11, 12))
	a := memory.New(memory.Options{})
	check := func(x *tensor.Tensor, target, want []int) {
		t.Helper()
		in := x.Shape()
		lead := len(want) - len(in)
		ref := shpRef(shpVals(x), want, func(idx []int) int {
			src := make([]int, len(in))
			for i := range in {
				if in[i] != 1 {
					src[i] = idx[lead+i]
				}
			}
			return shpRavel(src, in)
		})
		out := mustRun(t, a, "expand", ir.A("shape", target), x)[0]
		closeEnough(t, fmt.Sprintf("expand %v to %v", x.Type(), target), out, ref, want, 0)
		out.Release()
	}
	for _, dt := range shpDTypes {
		for range 40 {
			shape := shpShape(r, r.IntN(5))
			x := randTensor(t, a, r, dt, shape...)
			lead := r.IntN(3)
			target := make([]int, lead+len(shape))
			want := make([]int, len(target))
			for i := range target {
				switch {
				case i < lead:
					target[i] = shpDim(r)
					want[i] = target[i]
				case shape[i-lead] == 1 && r.IntN(3) > 0:
					target[i] = shpDim(r)
					want[i] = target[i]
				case r.IntN(2) == 0:
					target[i] = -1
					want[i] = shape[i-lead]
				default:
					target[i] = shape[i-lead]
					want[i] = target[i]
				}
			}
			check(x, target, want)
			x.Release()
		}
	}
	// Large: broadcast rows (fill) and broadcast columns, in parallel.
	x := randTensor(t, a, r, tensor.F32, 1, 300)
	check(x, []int{257, -1}, []int{257, 300})
	x.Release()
	x = randTensor(t, a, r, tensor.I64, 300, 1)
	check(x, []int{3, 300, 257}, []int{3, 300, 257})
	x.Release()
	wantAllocated(t, a, 0)
	shpWantErr(t, "expand", ir.A("shape", []int{4, 3}), []ir.Type{shpT(ir.F32, 2, 3)}, "[2 3]", "[4 3]")
	shpWantErr(t, "expand", ir.A("shape", []int{3}), []ir.Type{shpT(ir.F32, 2, 3)}, "[2 3]", "[3]")
	shpWantErr(t, "expand", ir.A("shape", []int{-1, 2, 3}), []ir.Type{shpT(ir.F32, 2, 3)}, "[2 3]", "[-1 2 3]")
	b := ir.NewBuilder(ir.NewProgram())
	v := ops.Expand(b, ops.Data(b, "x", ir.F32, -1, 1), 2, -1, 5)
	if !v.Type().Equal(shpT(ir.F32, 2, -1, 5)) || b.Err() != nil {
		t.Fatalf("Expand: %v %v", v.Type(), b.Err())
	}
	xt := randTensor(t, a, r, tensor.F32, 3, 1)
	shpWantKernelErr(t, a, "expand", ir.A("shape", []int{4, 2}), []ir.Type{shpT(ir.F32, -1, 1)}, []*tensor.Tensor{xt}, "[3 1]", "[4 2]")
	xt.Release()
	wantAllocated(t, a, 0)
}

// ---- concat / split ----

func TestShpConcat(t *testing.T) {
	shpDebug(t)
	r := rand.New(rand.NewPCG(13, 14))
	a := memory.New(memory.Options{})
	check := func(xs []*tensor.Tensor, axis int) {
		t.Helper()
		ax := axis
		if ax < 0 {
			ax += xs[0].Rank()
		}
		want := slices.Clone(xs[0].Shape())
		want[ax] = 0
		var starts []int
		for _, x := range xs {
			starts = append(starts, want[ax])
			want[ax] += x.Shape()[ax]
		}
		ref := make([]float64, shpSize(want))
		for i := range ref {
			idx := shpUnravel(i, want)
			k := len(xs) - 1
			for idx[ax] < starts[k] {
				k--
			}
			idx[ax] -= starts[k]
			ref[i] = xs[k].Float64At(shpRavel(idx, xs[k].Shape()))
		}
		out := mustRun(t, a, "concat", ir.A("axis", axis), xs...)[0]
		closeEnough(t, fmt.Sprintf("concat axis %d", axis), out, ref, want, 0)
		out.Release()
	}
	for _, dt := range shpDTypes {
		for range 40 {
			shape := shpShape(r, 1+r.IntN(4))
			axis := r.IntN(len(shape))
			xs := make([]*tensor.Tensor, 1+r.IntN(4))
			for i := range xs {
				s := slices.Clone(shape)
				s[axis] = shpDim(r)
				xs[i] = randTensor(t, a, r, dt, s...)
			}
			if r.IntN(2) == 0 {
				axis -= len(shape)
			}
			check(xs, axis)
			release(xs...)
		}
	}
	// Large, in parallel: few rows, and many rows.
	for _, shape := range [][]int{{2, 40000}, {5000, 7}} {
		xs := []*tensor.Tensor{randTensor(t, a, r, tensor.F32, shape...), randTensor(t, a, r, tensor.F32, shape[0], 3), randTensor(t, a, r, tensor.F32, shape...)}
		check(xs, 1)
		release(xs...)
	}
	wantAllocated(t, a, 0)
	shpWantErr(t, "concat", ir.A("axis", 0), []ir.Type{shpT(ir.F32, 2, 3), shpT(ir.F32, 2, 4)}, "[2 3]", "[2 4]")
	shpWantErr(t, "concat", ir.A("axis", 0), []ir.Type{shpT(ir.F32, 2, 3), shpT(ir.F32, 2, 3, 1)}, "[2 3]", "[2 3 1]")
	shpWantErr(t, "concat", ir.A("axis", 0), []ir.Type{shpT(ir.F32, 2, 3), shpT(ir.F64, 2, 3)}, "tensor<2x3xf32>", "tensor<2x3xf64>")
	shpWantErr(t, "concat", ir.A("axis", 2), []ir.Type{shpT(ir.F32, 2, 3)}, "[2 3]")
	shpWantErr(t, "concat", ir.A("axis", 0), []ir.Type{shpT(ir.F32)}, "[]")
	shpWantErr(t, "concat", ir.A("axis", 0), nil, "at least 1")
	b := ir.NewBuilder(ir.NewProgram())
	v := ops.Concat(b, 1, ops.Data(b, "x", ir.F32, -1, 3), ops.Data(b, "y", ir.F32, 4, 2))
	w := ops.Concat(b, 1, ops.Data(b, "z", ir.F32, 2, -1), ops.Data(b, "u", ir.F32, 2, 2))
	if !v.Type().Equal(shpT(ir.F32, 4, 5)) || !w.Type().Equal(shpT(ir.F32, 2, -1)) || b.Err() != nil {
		t.Fatalf("Concat: %v %v %v", v.Type(), w.Type(), b.Err())
	}
	x1, x2 := randTensor(t, a, r, tensor.F32, 3, 3), randTensor(t, a, r, tensor.F32, 4, 2)
	shpWantKernelErr(t, a, "concat", ir.A("axis", 1), []ir.Type{shpT(ir.F32, -1, 3), shpT(ir.F32, 4, 2)}, []*tensor.Tensor{x1, x2}, "[3 3]", "[4 2]")
	release(x1, x2)
	wantAllocated(t, a, 0)
}

func TestShpSplit(t *testing.T) {
	shpDebug(t)
	r := rand.New(rand.NewPCG(15, 16))
	a := memory.New(memory.Options{})
	check := func(x *tensor.Tensor, axis int, sections, sizes []int) {
		t.Helper()
		ax := axis
		if ax < 0 {
			ax += x.Rank()
		}
		outs := mustRun(t, a, "split", ir.A("sections", sections, "axis", axis), x)
		if len(outs) != len(sizes) {
			t.Fatalf("split: %d results, want %d", len(outs), len(sizes))
		}
		start := 0
		for k, s := range sizes {
			want := slices.Clone(x.Shape())
			want[ax] = s
			ref := shpRef(shpVals(x), want, func(idx []int) int {
				src := slices.Clone(idx)
				src[ax] += start
				return shpRavel(src, x.Shape())
			})
			closeEnough(t, fmt.Sprintf("split %v %v axis %d part %d", x.Type(), sections, axis, k), outs[k], ref, want, 0)
			start += s
		}
		release(outs...)
	}
	for _, dt := range shpDTypes {
		for range 40 {
			shape := shpShape(r, 1+r.IntN(4))
			axis := r.IntN(len(shape))
			d := shape[axis]
			var sizes []int
			for left := d; ; {
				s := r.IntN(left + 1)
				if r.IntN(4) == 0 {
					s = 0
				}
				if len(sizes) >= 3 || r.IntN(3) == 0 {
					s = left
				}
				sizes = append(sizes, s)
				left -= s
				if left == 0 && r.IntN(2) == 0 {
					break
				}
			}
			sections := slices.Clone(sizes)
			if r.IntN(2) == 0 {
				sections[r.IntN(len(sections))] = -1
			}
			x := randTensor(t, a, r, dt, shape...)
			if r.IntN(2) == 0 {
				axis -= len(shape)
			}
			check(x, axis, sections, sizes)
			x.Release()
		}
	}
	x := randTensor(t, a, r, tensor.F64, 3, 50001)
	check(x, 1, []int{20000, -1, 1}, []int{20000, 30000, 1})
	check(x, 0, []int{1, 1, 1}, []int{1, 1, 1})
	x.Release()
	wantAllocated(t, a, 0)
	shpWantErr(t, "split", ir.A("sections", []int{1, 1}, "axis", 1), []ir.Type{shpT(ir.F32, 2, 3)}, "[2 3]", "[1 1]")
	shpWantErr(t, "split", ir.A("sections", []int{2, -1, 2}, "axis", 1), []ir.Type{shpT(ir.F32, 2, 3)}, "[2 3]", "[2 -1 2]")
	shpWantErr(t, "split", ir.A("sections", []int{-1, -1}, "axis", 1), []ir.Type{shpT(ir.F32, 2, 3)}, "[2 3]", "[-1 -1]")
	shpWantErr(t, "split", ir.A("sections", []int{}, "axis", 1), []ir.Type{shpT(ir.F32, 2, 3)}, "[2 3]", "empty")
	shpWantErr(t, "split", ir.A("sections", []int{3}, "axis", 2), []ir.Type{shpT(ir.F32, 2, 3)}, "[2 3]")
	b := ir.NewBuilder(ir.NewProgram())
	vs := ops.Split(b, ops.Data(b, "x", ir.I32, 2, -1), 1, 2, -1)
	if len(vs) != 2 || !vs[0].Type().Equal(shpT(ir.I32, 2, 2)) || !vs[1].Type().Equal(shpT(ir.I32, 2, -1)) || b.Err() != nil {
		t.Fatalf("Split: %v", b.Err())
	}
	xt := randTensor(t, a, r, tensor.I32, 2, 3)
	shpWantKernelErr(t, a, "split", ir.A("sections", []int{2, 2}, "axis", 1), []ir.Type{shpT(ir.I32, 2, -1)}, []*tensor.Tensor{xt}, "tensor<2x3xi32>", "[2 2]")
	xt.Release()
	wantAllocated(t, a, 0)
}

// ---- memory ----

// shpOOMSweep is checkOOMSweep starting from a limit of 64 bytes (a Limit
// of 0 means "no limit" to the allocator, so checkOOMSweep as written
// succeeds at once and never fails an allocation). It returns how many
// limits failed with *memory.ResourceExhausted, and checks that nothing
// stays allocated after each attempt.
func shpOOMSweep(t *testing.T, name string, attrs ir.Attrs, in ...*tensor.Tensor) int {
	t.Helper()
	checkOOMSweep(t, name, attrs, in...)
	for limit := int64(64); ; limit += 64 {
		a := memory.New(memory.Options{Limit: limit, ChunkSize: 64})
		big := memory.New(memory.Options{ChunkSize: 64})
		copies := make([]*tensor.Tensor, len(in))
		for i, x := range in {
			copies[i] = cloneTo(t, big, x)
		}
		outs, err := runOp(t, a, name, attrs, copies...)
		release(copies...)
		if err == nil {
			release(outs...)
			wantAllocated(t, a, 0)
			return int(limit/64 - 1)
		}
		var oom *memory.ResourceExhausted
		if !errors.As(err, &oom) {
			t.Fatalf("%s under limit %d: %v, want ResourceExhausted", name, limit, err)
		}
		wantAllocated(t, a, 0)
		if limit > 1<<26 {
			t.Fatalf("%s never succeeded", name)
		}
	}
}

func TestShpOOMSweep(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	a := memory.New(memory.Options{})
	x := randTensor(t, a, r, tensor.F32, 3, 1, 5)
	y := randTensor(t, a, r, tensor.F32, 3, 2, 5)
	// Views allocate nothing, so they never fail.
	for _, c := range []struct {
		name  string
		attrs ir.Attrs
	}{
		{"reshape", ir.A("shape", []int{5, -1})},
		{"squeeze", ir.A("axes", []int{1})},
		{"unsqueeze", ir.A("axes", []int{0})},
		{"flatten", nil},
	} {
		if n := shpOOMSweep(t, c.name, c.attrs, x); n != 0 {
			t.Fatalf("%s failed under %d limits", c.name, n)
		}
	}
	// The others fail under at least one limit per 64 bytes they need
	// beyond the first 64 (expand: 480 bytes; concat: 240; split's three
	// results: 24, 48 and 48, so the second and third allocations fail too).
	for _, c := range []struct {
		name  string
		attrs ir.Attrs
		in    []*tensor.Tensor
		fails int
	}{
		{"transpose", ir.A("perm", []int{2, 0, 1}), []*tensor.Tensor{x}, 0},
		{"expand", ir.A("shape", []int{2, 3, 4, 5}), []*tensor.Tensor{x}, 7},
		{"concat", ir.A("axis", 1), []*tensor.Tensor{x, y, x}, 3},
		{"split", ir.A("sections", []int{1, -1, 2}, "axis", 2), []*tensor.Tensor{y}, 2},
	} {
		if n := shpOOMSweep(t, c.name, c.attrs, c.in...); n < c.fails {
			t.Fatalf("%s failed under %d limits, want at least %d", c.name, n, c.fails)
		}
	}
	release(x, y)
	wantAllocated(t, a, 0)
}
