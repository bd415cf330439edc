package tensor_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

func mustPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("no panic, want one containing %q", want)
		}
		if msg := fmt.Sprint(r); !strings.Contains(msg, want) {
			t.Fatalf("panic %q\nwant it to contain %q", msg, want)
		}
	}()
	f()
}

func allocated(a *memory.Allocator) int64 { return a.Stats().Allocated.Current }

func TestFromAndAccessors(t *testing.T) {
	a := memory.New(memory.Options{})
	type tc struct {
		name  string
		make  func() (*tensor.Tensor, error)
		dt    tensor.DType
		shape []int
		vals  []float64
		check func(*tensor.Tensor) bool
	}
	for _, c := range []tc{
		{"f32", func() (*tensor.Tensor, error) { return tensor.FromF32(a, []float32{1, -2.5, 3, 4, 5, 6}, 2, 3) },
			tensor.F32, []int{2, 3}, []float64{1, -2.5, 3, 4, 5, 6},
			func(x *tensor.Tensor) bool { return x.F32()[1] == -2.5 && len(x.F32()) == 6 }},
		{"f64", func() (*tensor.Tensor, error) { return tensor.FromF64(a, []float64{0.1, 1e300}) },
			tensor.F64, []int{2}, []float64{0.1, 1e300},
			func(x *tensor.Tensor) bool { return x.F64()[1] == 1e300 }},
		{"i32", func() (*tensor.Tensor, error) { return tensor.FromI32(a, []int32{-7, 1 << 30, 0, 2}, 2, 1, 2) },
			tensor.I32, []int{2, 1, 2}, []float64{-7, 1 << 30, 0, 2},
			func(x *tensor.Tensor) bool { return x.I32()[1] == 1<<30 }},
		{"i64", func() (*tensor.Tensor, error) { return tensor.FromI64(a, []int64{1 << 40}, []int{}...) },
			tensor.I64, []int{}, []float64{1 << 40},
			func(x *tensor.Tensor) bool { return x.I64()[0] == 1<<40 }},
		{"bool", func() (*tensor.Tensor, error) { return tensor.FromBool(a, []bool{true, false, true}) },
			tensor.Bool, []int{3}, []float64{1, 0, 1},
			func(x *tensor.Tensor) bool { return x.Bool()[0] && !x.Bool()[1] && x.Raw()[2] == 1 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			x, err := c.make()
			if err != nil {
				t.Fatal(err)
			}
			defer x.Release()
			if x.DType() != c.dt || !slices.Equal(x.Shape(), c.shape) || x.Rank() != len(c.shape) || x.Len() != len(c.vals) {
				t.Fatalf("got %s rank %d len %d", x.Type(), x.Rank(), x.Len())
			}
			if x.Bytes() != int64(len(c.vals)*c.dt.Size()) || int64(len(x.Raw())) != x.Bytes() {
				t.Fatalf("Bytes %d, Raw %d", x.Bytes(), len(x.Raw()))
			}
			for i, v := range c.vals {
				if x.Float64At(i) != v {
					t.Errorf("Float64At(%d) = %v, want %v", i, x.Float64At(i), v)
				}
			}
			if !c.check(x) {
				t.Error("typed accessor disagrees")
			}
			for _, acc := range []struct {
				dt tensor.DType
				f  func()
			}{
				{tensor.F32, func() { x.F32() }}, {tensor.F64, func() { x.F64() }}, {tensor.I32, func() { x.I32() }},
				{tensor.I64, func() { x.I64() }}, {tensor.Bool, func() { x.Bool() }},
			} {
				if acc.dt != c.dt {
					mustPanic(t, "on a "+x.Type()+" tensor", acc.f)
				}
			}
		})
	}
	if got := allocated(a); got != 0 {
		t.Fatalf("%d bytes still allocated", got)
	}
}

func TestNewErrors(t *testing.T) {
	a := memory.New(memory.Options{})
	for _, tc := range []struct {
		name string
		f    func() error
		want string
	}{
		{"negative dim", func() error { _, err := tensor.New(a, tensor.F32, 2, -1); return err }, "negative dimension -1 at axis 1"},
		{"overflow", func() error { _, err := tensor.New(a, tensor.F64, math.MaxInt/2, 3); return err }, "too many elements"},
		{"invalid dtype", func() error { _, err := tensor.New(a, tensor.Invalid, 2); return err }, "invalid dtype"},
		{"nil allocator", func() error { _, err := tensor.New(nil, tensor.F32, 2); return err }, "nil allocator"},
		{"data/shape mismatch", func() error { _, err := tensor.FromF32(a, []float32{1, 2, 3}, 2, 2); return err }, "3 elements of data for shape [2 2]"},
	} {
		if err := tc.f(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestOOMPassesThrough(t *testing.T) {
	a := memory.New(memory.Options{Limit: 1 << 20, ChunkSize: 1 << 20})
	x, err := tensor.New(a, tensor.F32, 1<<17) // 512 KiB
	if err != nil {
		t.Fatal(err)
	}
	defer x.Release()
	_, err = tensor.New(a, tensor.F32, 1<<18) // 1 MiB
	var oom *memory.ResourceExhausted
	if !errors.As(err, &oom) {
		t.Fatalf("error %v is not *memory.ResourceExhausted", err)
	}
	want := "ResourceExhaustedError: Out of memory error on CPU 0. Cannot allocate 1.000000MB memory on CPU 0, 512.000000KB memory has been allocated and available memory is only 512.000000KB."
	if err.Error() != want {
		t.Fatalf("got  %s\nwant %s", err, want)
	}
}

func TestZerosScalarAndEmpty(t *testing.T) {
	a := memory.New(memory.Options{})
	z, err := tensor.Zeros(a, tensor.I64, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(z.I64(), make([]int64, 6)) {
		t.Fatal("Zeros not zero")
	}
	z.Release()

	s, err := tensor.Scalar(a, tensor.F32, 2.5)
	if err != nil {
		t.Fatal(err)
	}
	if s.Rank() != 0 || s.Len() != 1 || s.F32()[0] != 2.5 || s.Shape() == nil || s.String() != "tensor<f32>[2.5]" {
		t.Fatalf("scalar %s shape %#v", s, s.Shape())
	}
	s.Release()

	before := a.Stats()
	for _, shape := range [][]int{{0}, {2, 0, 3}, {0, 0}} {
		e, err := tensor.New(a, tensor.F64, shape...)
		if err != nil {
			t.Fatal(err)
		}
		if e.Len() != 0 || e.Bytes() != 0 || e.Raw() != nil || len(e.F64()) != 0 || e.Storage().Bytes() != 0 {
			t.Fatalf("%s: len %d bytes %d", e.Type(), e.Len(), e.Bytes())
		}
		if got := e.String(); got != e.Type()+"[]" {
			t.Fatalf("String %q", got)
		}
		v, err := e.Reshape(0)
		if err != nil {
			t.Fatal(err)
		}
		v.Release()
		e.Release()
	}
	if after := a.Stats(); after != before {
		t.Fatalf("empty tensors touched the allocator:\n%+v\n%+v", before, after)
	}
}

func TestRefcountAndViews(t *testing.T) {
	a := memory.New(memory.Options{})
	base := allocated(a)
	x, err := tensor.FromF32(a, []float32{1, 2, 3, 4, 5, 6, 7, 8}, 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	if x.Refs() != 1 || allocated(a) != base+64 {
		t.Fatalf("refs %d allocated %d", x.Refs(), allocated(a))
	}
	v, err := x.Reshape(4, 2)
	if err != nil {
		t.Fatal(err)
	}
	if v.Storage() != x.Storage() || x.Refs() != 2 || v.Refs() != 2 || !slices.Equal(v.Shape(), []int{4, 2}) {
		t.Fatalf("view: refs %d shape %v", x.Refs(), v.Shape())
	}
	if &v.F32()[0] != &x.F32()[0] {
		t.Fatal("view copied the data")
	}
	if y := x.Retain(); y != x || x.Refs() != 3 {
		t.Fatal("Retain must return the same header with one more ref")
	}
	if _, err := x.Reshape(3, 3); err == nil || !strings.Contains(err.Error(), "cannot reshape tensor<2x4xf32> (8 elements) to [3 3]") {
		t.Fatalf("bad reshape error: %v", err)
	}
	if x.Refs() != 3 {
		t.Fatal("failed reshape changed refs")
	}

	x.Release()
	x.Release()
	// The view alone keeps the storage alive.
	if allocated(a) != base+64 || v.F32()[7] != 8 {
		t.Fatal("storage freed while a view holds it")
	}
	v.Release()
	if allocated(a) != base {
		t.Fatalf("allocated %d after last release, baseline %d", allocated(a), base)
	}
	if x.String() != "tensor<2x4xf32>[released]" {
		t.Fatalf("String after release: %q", x.String())
	}
	mustPanic(t, "double release of tensor<4x2xf32>", v.Release)
	mustPanic(t, "Retain of released tensor<2x4xf32>", func() { x.Retain() })
	mustPanic(t, "Retain of released", func() { _, _ = x.Reshape(8) })
}

func TestStringAndFloat64At(t *testing.T) {
	a := memory.New(memory.Options{})
	for _, tc := range []struct {
		make func() (*tensor.Tensor, error)
		want string
	}{
		{func() (*tensor.Tensor, error) { return tensor.FromF32(a, []float32{0.1, 2, 3, 4, 5, 6, 7}, 7) }, "tensor<7xf32>[0.1 2 3 4 5 6 ...]"},
		{func() (*tensor.Tensor, error) { return tensor.FromI64(a, []int64{-3, 9}, 1, 2) }, "tensor<1x2xi64>[-3 9]"},
		{func() (*tensor.Tensor, error) { return tensor.FromBool(a, []bool{true, false}) }, "tensor<2xi1>[true false]"},
		{func() (*tensor.Tensor, error) { return tensor.FromF64(a, []float64{math.Inf(-1)}, []int{}...) }, "tensor<f64>[-Inf]"},
	} {
		x, err := tc.make()
		if err != nil {
			t.Fatal(err)
		}
		if x.String() != tc.want {
			t.Errorf("String() = %q, want %q", x.String(), tc.want)
		}
		mustPanic(t, "index 99 out of range", func() { x.Float64At(99) })
		x.Release()
	}
}
