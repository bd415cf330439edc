package ops_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// accCase is a sum over a batch added into acc: the accumulating op, the
// plain op it continues, and their operands.
type accCase struct {
	name       string
	acc, plain string
	attrs      ir.Attrs // the accumulating op's
	plainAttrs ir.Attrs
	dt         tensor.DType
	accShape   []int
	batch      [][]int // the plain op's operands; axis 0 is the batch
	canonical  bool    // the kernel sums in BatchGroup groups
}

var convAttrs = convA(1, 0, nil)

// convA is a convolution's attributes: stride, padding, and the filter
// size when given.
func convA(stride, pad int, filter []int) ir.Attrs {
	if filter != nil {
		return ir.A("strides", []int{stride, stride}, "paddings", []int{pad, pad}, "dilations", []int{1, 1}, "groups", 1, "filter_size", filter)
	}
	return ir.A("strides", []int{stride, stride}, "paddings", []int{pad, pad}, "dilations", []int{1, 1}, "groups", 1)
}

var accCases = []accCase{
	{name: "lenet conv2", acc: "conv2d_grad_filter_acc", plain: "conv2d_grad_filter", attrs: convAttrs, plainAttrs: convA(1, 0, []int{5, 5}),
		dt: tensor.F32, accShape: []int{16, 6, 5, 5}, batch: [][]int{{18, 16, 10, 10}, {18, 6, 14, 14}}, canonical: true},
	{name: "batched GEMM path", acc: "conv2d_grad_filter_acc", plain: "conv2d_grad_filter", attrs: convA(1, 1, nil), plainAttrs: convA(1, 1, []int{3, 3}),
		dt: tensor.F32, accShape: []int{64, 16, 3, 3}, batch: [][]int{{6, 64, 8, 8}, {6, 16, 8, 8}}, canonical: true},
	{name: "batched GEMM path, groups of several depth slices", acc: "conv2d_grad_filter_acc", plain: "conv2d_grad_filter", attrs: convA(1, 1, nil), plainAttrs: convA(1, 1, []int{3, 3}),
		dt: tensor.F32, accShape: []int{32, 32, 3, 3}, batch: [][]int{{9, 32, 16, 16}, {9, 32, 16, 16}}, canonical: true},
	{name: "f64 strided", acc: "conv2d_grad_filter_acc", plain: "conv2d_grad_filter", attrs: convA(2, 0, nil), plainAttrs: convA(2, 0, []int{3, 3}),
		dt: tensor.F64, accShape: []int{4, 3, 3, 3}, batch: [][]int{{9, 4, 4, 4}, {9, 3, 9, 9}}, canonical: true},
	{name: "conv bias", acc: "reduce_sum_to_acc", plain: "reduce_sum_to", plainAttrs: ir.A("shape", []int{6, 1, 1}),
		dt: tensor.F32, accShape: []int{6, 1, 1}, batch: [][]int{{13, 6, 7, 7}}, canonical: true},
	{name: "dense bias", acc: "reduce_sum_to_acc", plain: "reduce_sum_to", plainAttrs: ir.A("shape", []int{5}),
		dt: tensor.F64, accShape: []int{5}, batch: [][]int{{9, 5}}, canonical: true},
	{name: "batch of one kept", acc: "reduce_sum_to_acc", plain: "reduce_sum_to", plainAttrs: ir.A("shape", []int{1, 3}),
		dt: tensor.F32, accShape: []int{1, 3}, batch: [][]int{{1, 3}}, canonical: true},
}

// slab returns samples [lo, hi) of x.
func slab(t *testing.T, a *memory.Allocator, x *tensor.Tensor, lo, hi int) *tensor.Tensor {
	t.Helper()
	shape := append([]int{hi - lo}, x.Shape()[1:]...)
	s, err := tensor.New(a, x.DType(), shape...)
	if err != nil {
		t.Fatal(err)
	}
	per := len(x.Raw()) / max(x.Shape()[0], 1)
	copy(s.Raw(), x.Raw()[lo*per:hi*per])
	return s
}

// Each accumulating sum gives acc plus the plain op's sum, to rounding;
// where the kernel sums canonically, the batch cut into pieces of whole
// groups (the first by the plain op, the others added by the
// accumulating one) gives the plain op's bits for the whole batch.
func TestAccumulatingSums(t *testing.T) {
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(11, 12))
	for _, c := range accCases {
		acc := randTensor(t, a, r, c.dt, c.accShape...)
		var batch []*tensor.Tensor
		for _, s := range c.batch {
			batch = append(batch, randTensor(t, a, r, c.dt, s...))
		}
		base := a.Stats().Allocated.Current
		got := mustRun(t, a, c.acc, c.attrs, append([]*tensor.Tensor{acc}, batch...)...)[0]
		sum := mustRun(t, a, c.plain, c.plainAttrs, batch...)[0]
		want := make([]float64, acc.Len())
		for i := range want {
			want[i] = acc.Float64At(i) + sum.Float64At(i)
		}
		closeEnough(t, c.name, got, want, c.accShape, 1e-5)
		if c.canonical {
			n := c.batch[0][0]
			for _, per := range []int{kernels.BatchGroup, 2 * kernels.BatchGroup} {
				var run *tensor.Tensor
				for lo := 0; lo < n; lo += per {
					hi := min(lo+per, n)
					var pieces []*tensor.Tensor
					for _, x := range batch {
						pieces = append(pieces, slab(t, a, x, lo, hi))
					}
					var next *tensor.Tensor
					if lo == 0 {
						next = mustRun(t, a, c.plain, c.plainAttrs, pieces...)[0]
					} else {
						next = mustRun(t, a, c.acc, c.attrs, append([]*tensor.Tensor{run}, pieces...)...)[0]
						run.Release()
					}
					release(pieces...)
					run = next
				}
				for i := range sum.Len() {
					if math.Float64bits(run.Float64At(i)) != math.Float64bits(sum.Float64At(i)) {
						t.Fatalf("%s in pieces of %d: element %d is %v, %v whole", c.name, per, i, run.Float64At(i), sum.Float64At(i))
					}
				}
				run.Release()
			}
		}
		release(got, sum)
		wantAllocated(t, a, base)
		for range 20 {
			release(mustRun(t, a, c.acc, c.attrs, append([]*tensor.Tensor{acc}, batch...)...)...)
		}
		wantAllocated(t, a, base)
		checkOOMSweep(t, c.acc, c.attrs, append([]*tensor.Tensor{acc}, batch...)...)
		release(acc)
		release(batch...)
	}
	wantAllocated(t, a, 0)
}

// Operands that do not make a sum into acc are refused by Infer, naming
// what is wrong; the gradient is refused with an error, never zero.
func TestAccumulatingSumsRefuse(t *testing.T) {
	f := func(dims ...int) ir.Type { return ir.TensorOf(ir.F32, dims...) }
	bad := []struct {
		name  string
		attrs ir.Attrs
		in    []ir.Type
	}{
		{"conv2d_grad_filter_acc", convAttrs, []ir.Type{f(16, 6, 3, 3), f(2, 16, 10, 10), f(2, 6, 14, 14)}},
		{"conv2d_grad_filter_acc", convA(1, 0, []int{5, 5}), []ir.Type{f(16, 6, 5, 5), f(2, 16, 10, 10), f(2, 6, 14, 14)}},
		{"conv2d_grad_filter_acc", convAttrs, []ir.Type{f(2, 16, 10, 10), f(2, 6, 14, 14)}},
		{"conv2d_grad_filter_acc", convAttrs, []ir.Type{ir.TensorOf(ir.F64, 16, 6, 5, 5), f(2, 16, 10, 10), f(2, 6, 14, 14)}},
		{"reduce_sum_to_acc", nil, []ir.Type{f(4, 3), f(4, 3)}},
		{"reduce_sum_to_acc", nil, []ir.Type{f(2), f(4, 3)}},
		{"reduce_sum_to_acc", nil, []ir.Type{f(3)}},
		{"reduce_sum_to_acc", nil, []ir.Type{f(), f()}},
	}
	for _, c := range bad {
		if _, err := buildOp(t, c.name, c.attrs, c.in...); err == nil {
			t.Errorf("%s %v on %v: no error", c.name, c.attrs, c.in)
		}
	}
	for _, name := range []string{"conv2d_grad_filter_acc", "reduce_sum_to_acc"} {
		d, _ := ops.Lookup(name)
		if d.Grad == nil {
			t.Fatalf("%s has no Grad", name)
		}
		if _, err := d.Grad(nil); err == nil {
			t.Errorf("%s: the gradient gives no error", name)
		}
	}
}
