package ops_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// bindFor binds op name for operands shaped like in.
func bindFor(t testing.TB, name string, attrs ir.Attrs, in ...*tensor.Tensor) ops.Kernel {
	t.Helper()
	types := make([]ir.Type, len(in))
	for i, x := range in {
		types[i] = ir.TensorOf(ir.DType(x.DType()), x.Shape()...)
	}
	op, err := buildOp(t, name, attrs, types...)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ops.Bind(op)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func ownedMask(idx ...int) uint64 {
	var m uint64
	for _, i := range idx {
		m |= 1 << uint(i)
	}
	return m
}

// TestElementwiseInPlace runs elementwise kernels the way the executor does
// when it donates operands: an owned, unshared operand of the result's
// dtype and shape is updated in place and returned; every other owned
// operand is released by the kernel, on success and on error; results
// are those of the out-of-place kernel.
func TestElementwiseInPlace(t *testing.T) {
	a := memory.New(memory.Options{})
	f := func(data []float32, shape ...int) *tensor.Tensor {
		x, err := tensor.FromF32(a, data, shape...)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	b := func(data ...bool) *tensor.Tensor {
		x, err := tensor.FromBool(a, data)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	big := make([]float32, 100000) // over the split threshold: the parallel path works in place too
	for i := range big {
		big[i] = float32(i % 13)
	}
	type tc struct {
		name    string
		op      string
		attrs   ir.Attrs
		in      func() []*tensor.Tensor
		owned   []int
		shared  []int // operands someone else holds too (one extra reference)
		reuse   int   // index of the operand returned, -1 for a new tensor
		want    []float64
		threads int
	}
	for _, c := range []tc{
		{name: "add both owned", op: "add", in: func() []*tensor.Tensor {
			return []*tensor.Tensor{f([]float32{1, 2, 3}, 3), f([]float32{10, 20, 30}, 3)}
		},
			owned: []int{0, 1}, reuse: 0, want: []float64{11, 22, 33}},
		{name: "add first shared", op: "add", in: func() []*tensor.Tensor {
			return []*tensor.Tensor{f([]float32{1, 2, 3}, 3), f([]float32{10, 20, 30}, 3)}
		},
			owned: []int{0, 1}, shared: []int{0}, reuse: 1, want: []float64{11, 22, 33}},
		{name: "add not owned", op: "add", in: func() []*tensor.Tensor {
			return []*tensor.Tensor{f([]float32{1, 2, 3}, 3), f([]float32{10, 20, 30}, 3)}
		},
			reuse: -1, want: []float64{11, 22, 33}},
		{name: "subtract scalar into the big operand", op: "subtract", in: func() []*tensor.Tensor {
			return []*tensor.Tensor{f([]float32{5}, []int{}...), f([]float32{1, 2, 3, 4}, 2, 2)}
		},
			owned: []int{0, 1}, reuse: 1, want: []float64{4, 3, 2, 1}},
		{name: "scalar operand cannot hold the result", op: "multiply", in: func() []*tensor.Tensor { return []*tensor.Tensor{f([]float32{1, 2}, 2), f([]float32{3}, 1, 1)} },
			owned: []int{1}, reuse: -1, want: []float64{3, 6}},
		{name: "broadcast rows in place", op: "maximum", in: func() []*tensor.Tensor {
			return []*tensor.Tensor{f([]float32{1, 5, 3, 0, 2, 9}, 2, 3), f([]float32{2, 2, 2}, 3)}
		},
			owned: []int{0, 1}, reuse: 0, want: []float64{2, 5, 3, 2, 2, 9}},
		{name: "scale", op: "scale", attrs: ir.A("scale", 2.0, "bias", 1.0), in: func() []*tensor.Tensor { return []*tensor.Tensor{f([]float32{1, 2}, 2)} },
			owned: []int{0}, reuse: 0, want: []float64{3, 5}},
		{name: "equal on i1", op: "equal", in: func() []*tensor.Tensor { return []*tensor.Tensor{b(true, false, true), b(true, true, false)} },
			owned: []int{0, 1}, reuse: 0, want: []float64{1, 0, 0}},
		{name: "logical_not", op: "logical_not", in: func() []*tensor.Tensor { return []*tensor.Tensor{b(true, false)} },
			owned: []int{0}, reuse: 0, want: []float64{0, 1}},
		{name: "where into x", op: "where", in: func() []*tensor.Tensor {
			return []*tensor.Tensor{b(true, false), f([]float32{1, 2}, 2), f([]float32{7, 8}, 2)}
		}, owned: []int{0, 1, 2}, reuse: 1, want: []float64{1, 8}},
		{name: "full_like", op: "full_like", attrs: ir.A("value", 4.0), in: func() []*tensor.Tensor { return []*tensor.Tensor{f([]float32{1, 2}, 2)} },
			owned: []int{0}, reuse: 0, want: []float64{4, 4}},
		{name: "big add on two threads", op: "add", threads: 2, in: func() []*tensor.Tensor { return []*tensor.Tensor{f(big, len(big)), f(big, len(big))} },
			owned: []int{1}, reuse: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := a.Stats().Allocated.Current
			in := c.in()
			k := bindFor(t, c.op, c.attrs, in...)
			for _, i := range c.shared {
				in[i].Retain()
			}
			before := a.Stats().Allocs
			threads := max(c.threads, 1)
			ctx := &ops.Ctx{Alloc: a, Threads: threads, Owned: ownedMask(c.owned...), Results: make([]*tensor.Tensor, 1)}
			outs, err := k(ctx, slices.Clone(in))
			if err != nil {
				t.Fatal(err)
			}
			out := outs[0]
			if &outs[0] != &ctx.Results[0] {
				t.Error("result not returned in Ctx.Results")
			}
			if c.reuse >= 0 {
				if out != in[c.reuse] || a.Stats().Allocs != before {
					t.Fatalf("result not written into operand %d", c.reuse)
				}
			} else if a.Stats().Allocs != before+1 || slices.Contains(in, out) {
				t.Fatal("result does not have a buffer of its own")
			}
			for i, v := range c.want {
				if out.Float64At(i) != v {
					t.Fatalf("result %v, want %v", out, c.want)
				}
			}
			if c.want == nil {
				for i := range big {
					if out.F32()[i] != 2*big[i] {
						t.Fatalf("element %d = %v, want %v", i, out.F32()[i], 2*big[i])
					}
				}
			}
			// Each owned operand: returned (its reference moved to the
			// result) or released by the kernel, which leaves only the
			// extra reference of a shared one.
			for _, i := range c.owned {
				want := int32(0)
				if slices.Contains(c.shared, i) {
					want++
				}
				if i == c.reuse {
					want++
				}
				if in[i].Refs() != want {
					t.Errorf("operand %d: refs %d, want %d", i, in[i].Refs(), want)
				}
			}
			out.Release()
			for i, x := range in {
				if !slices.Contains(c.owned, i) && i != c.reuse {
					x.Release()
				}
			}
			for _, i := range c.shared {
				in[i].Release()
			}
			if got := a.Stats().Allocated.Current; got != base {
				t.Fatalf("allocated %d, want %d: %+v", got, base, a.Live())
			}
		})
	}
}

// TestElementwiseOwnedOperandsReleasedOnError checks that a failing
// kernel releases the operands it owns.
func TestElementwiseOwnedOperandsReleasedOnError(t *testing.T) {
	a := memory.New(memory.Options{})
	x, _ := tensor.FromI32(a, []int32{1, 2}, 2)
	y, _ := tensor.FromI32(a, []int32{1, 0}, 2)
	k := bindFor(t, "divide", nil, x, y)
	_, err := k(&ops.Ctx{Alloc: a, Threads: 1, Owned: ownedMask(0, 1)}, []*tensor.Tensor{x, y})
	if !errors.Is(err, kernels.ErrDivideByZero) {
		t.Fatalf("err %v", err)
	}
	if n := a.Stats().Allocated.Current; n != 0 {
		t.Fatalf("%d bytes left after the failed kernel: owned operands not released", n)
	}

	// A dtype mismatch fails before any work; the owned operand goes too.
	f, _ := tensor.FromF32(a, []float32{1}, 1)
	g, _ := tensor.FromF32(a, []float32{1}, 1)
	k = bindFor(t, "add", nil, f, g)
	wrong, _ := tensor.FromI32(a, []int32{1}, 1)
	if _, err := k(&ops.Ctx{Alloc: a, Threads: 1, Owned: ownedMask(1)}, []*tensor.Tensor{f, wrong}); err == nil {
		t.Fatal("no error for a wrong dtype")
	}
	f.Release()
	g.Release()
	if n := a.Stats().Allocated.Current; n != 0 {
		t.Fatalf("%d bytes left", n)
	}
}

// TestElementwiseTakeable pins which operands of elementwise ops a result
// may take over: those of the result's dtype.
func TestElementwiseTakeable(t *testing.T) {
	f32, i1 := ir.TensorOf(ir.F32, 2, 3), ir.TensorOf(ir.I1, 2, 3)
	for _, tc := range []struct {
		name  string
		attrs ir.Attrs
		in    []ir.Type
		want  []int
	}{
		{"add", nil, []ir.Type{f32, f32}, []int{0, 1}},
		{"subtract", nil, []ir.Type{f32, f32}, []int{0, 1}},
		{"pow", nil, []ir.Type{f32, f32}, []int{0, 1}},
		{"scale", ir.A("scale", 2.0, "bias", 0.0), []ir.Type{f32}, []int{0}},
		{"tanh", nil, []ir.Type{f32}, []int{0}},
		{"equal", nil, []ir.Type{i1, i1}, []int{0, 1}},
		{"equal", nil, []ir.Type{f32, f32}, nil},
		{"less_than", nil, []ir.Type{f32, f32}, nil},
		{"logical_and", nil, []ir.Type{i1, i1}, []int{0, 1}},
		{"logical_not", nil, []ir.Type{i1}, []int{0}},
		{"where", nil, []ir.Type{i1, f32, f32}, []int{1, 2}},
		{"where", nil, []ir.Type{i1, i1, i1}, []int{0, 1, 2}},
		{"full_like", ir.A("value", 1.0), []ir.Type{f32}, []int{0}},
		{"cast", ir.A("dtype", ir.I32), []ir.Type{f32}, nil},
		{"assign", nil, []ir.Type{f32}, nil},
	} {
		op, err := buildOp(t, tc.name, tc.attrs, tc.in...)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := ops.Takeable(op); !slices.Equal(got, tc.want) {
			t.Errorf("%s%v: takeable operands %v, want %v", tc.name, tc.in, got, tc.want)
		}
	}
}
