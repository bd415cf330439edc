package ops

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

// The planner adds each kernel's Work to its prediction of the peak, so
// Work must be exactly what Fn takes from the workspace, on every path a
// kernel picks at run time and for every thread count.

// workCheck runs op name's Compute on random operands of dtype dt and the
// given shapes with exactly Work(shapes, threads) bytes of workspace and
// fails unless Fn took all of them.
func workCheck(t *testing.T, name string, attrs ir.Attrs, dt ir.DType, threads int, shapes ...[]int) {
	t.Helper()
	b := ir.NewBuilder(ir.NewProgram())
	vals := make([]*ir.Value, len(shapes))
	for i, s := range shapes {
		vals[i] = Data(b, fmt.Sprint("x", i), dt, s...)
	}
	op := b.Op(name, attrs, vals...)
	if err := b.Err(); err != nil {
		t.Fatalf("%s %v: %v", name, shapes, err)
	}
	comp, err := defs[name].Compute(op)
	if err != nil {
		t.Fatal(err)
	}
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(uint64(threads), 7))
	in := make([]*tensor.Tensor, len(shapes))
	for i, s := range shapes {
		x, err := tensor.New(a, tensor.DType(dt), s...)
		if err != nil {
			t.Fatal(err)
		}
		if dt == ir.F32 {
			for j := range x.F32() {
				x.F32()[j] = r.Float32()
			}
		} else {
			for j := range x.F64() {
				x.F64()[j] = r.Float64()
			}
		}
		in[i] = x
	}
	types, err := ResultTypes(op, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*tensor.Tensor, len(types))
	for i, ty := range types {
		if out[i], err = tensor.New(a, tensor.DType(ty.DType), ty.Dims...); err != nil {
			t.Fatal(err)
		}
	}
	var n int64
	if comp.Work != nil {
		n = comp.Work(shapes, threads)
	}
	c := &Ctx{Alloc: a, Threads: threads}
	c.SetWork(make([]byte, n))
	if err := comp.Fn(c, in, out); err != nil {
		t.Fatal(err)
	}
	if int64(c.workUsed) != n {
		t.Errorf("%s %v %s threads=%d: Work gives %d bytes, Fn took %d", name, shapes, dt, threads, n, c.workUsed)
	}
	c.SetWork(nil)
	releaseAll(in)
	releaseAll(out)
	if got := a.Stats().Allocated.Current; got != 0 {
		t.Errorf("%s: %d bytes left allocated", name, got)
	}
}

// TestConvWorkExact covers the convolutions' paths: the direct float32
// kernels (few channels per group, unit strides), the batched float32 GEMM
// (many channels, small maps, strides), depthwise, im2col + GEMM
// (float64, and the gradients), 1×1 products without workspace, groups,
// batches smaller and larger than the thread count, and empty operands.
func TestConvWorkExact(t *testing.T) {
	type conv struct {
		n, c, h, w, o, kh, kw int
		attrs                 ir.Attrs
	}
	cases := []conv{
		{64, 1, 28, 28, 6, 5, 5, ir.A("paddings", 2)}, // LeNet
		{64, 6, 14, 14, 16, 5, 5, nil},
		{3, 4, 9, 8, 20, 3, 3, ir.A("paddings", 1)}, // > 16 outputs per group
		{5, 6, 9, 9, 4, 3, 2, ir.A("strides", []int{2, 1}, "dilations", []int{1, 2})},
		{2, 8, 7, 7, 8, 1, 1, nil},                                                // 1×1 product
		{4, 6, 7, 7, 6, 3, 3, ir.A("groups", 3)},                                  // groups, direct
		{4, 40, 7, 7, 40, 3, 3, ir.A("groups", 2)},                                // groups, im2col
		{1, 3, 30, 30, 5, 3, 3, ir.A("paddings", 1)},                              // one sample
		{9, 2, 6, 5, 3, 3, 3, ir.A("paddings", 3)},                                // padding wider than the kernel's reach
		{0, 2, 6, 5, 3, 3, 3, nil},                                                // empty batch
		{2, 0, 6, 5, 3, 3, 3, nil},                                                // no input channels
		{20, 16, 12, 12, 16, 3, 3, ir.A("paddings", 1)},                           // more chunks than the filter gradient's 8
		{4, 12, 9, 9, 12, 3, 3, ir.A("groups", 12, "paddings", 1)},                // depthwise
		{3, 10, 11, 9, 10, 3, 3, ir.A("groups", 10, "strides", 2, "paddings", 1)}, // depthwise, strided
		{1, 40, 2, 2, 64, 3, 3, ir.A("paddings", 1)},                              // batched GEMM, transposed
		{16, 24, 4, 4, 40, 3, 3, ir.A("paddings", 1)},                             // batched GEMM, small maps
		{3, 17, 9, 8, 33, 1, 1, ir.A("strides", 2)},                               // batched GEMM, strided 1×1
	}
	for _, cs := range cases {
		x := []int{cs.n, cs.c, cs.h, cs.w}
		g := 1
		if cs.attrs.Has("groups") {
			g64, _ := cs.attrs.Int("groups")
			g = int(g64)
		}
		w := []int{cs.o, cs.c / g, cs.kh, cs.kw}
		var out []int
		{
			a, err := nnConvDecode(cs.attrs)
			if err != nil {
				t.Fatal(err)
			}
			if out, err = nnConvShape(ir.TensorOf(ir.F32, x...), ir.TensorOf(ir.F32, w...), a); err != nil {
				t.Fatal(err)
			}
		}
		for _, dt := range []ir.DType{ir.F32, ir.F64} {
			for _, th := range []int{1, 2, 3, 8} {
				workCheck(t, "conv2d", cs.attrs, dt, th, x, w)
				workCheck(t, "conv2d_grad_input", cs.attrs.With("input_size", nnIntList(x[2:])), dt, th, out, w)
				workCheck(t, "conv2d_grad_input", cs.attrs, dt, th, out, w, x)
				workCheck(t, "conv2d_grad_filter", cs.attrs.With("filter_size", nnIntList(w[2:])), dt, th, out, x)
				workCheck(t, "conv2d_grad_filter", cs.attrs, dt, th, out, x, w)
			}
		}
	}
}
