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

// bnZeros is a zeroed f64 state of ch channels, width wide.
func bnZeros(t *testing.T, a *memory.Allocator, ch, width int) *tensor.Tensor {
	t.Helper()
	s, err := tensor.New(a, tensor.F64, ch, width)
	if err != nil {
		t.Fatal(err)
	}
	clear(s.F64())
	return s
}

// bnSameBits fails unless got holds want's bits, elements [lo, lo+got.Len()).
func bnSameBits(t *testing.T, what string, got, want *tensor.Tensor, lo int) {
	t.Helper()
	for i := range got.Len() {
		if g, w := got.Float64At(i), want.Float64At(lo+i); math.Float64bits(g) != math.Float64bits(w) {
			t.Fatalf("%s: element %d is %v in pieces, %v whole", what, lo+i, g, w)
		}
	}
}

// Batch norm run in pieces of the batch (the statistics summed piece by
// piece, then each piece normalised; the gradient's sums likewise, then
// each piece's dx) gives batch_norm's and batch_norm_grad's bits for the
// whole batch, for any cut into whole samples, in f32 and f64; a finish
// over one value per channel is refused as batch_norm refuses it; and
// every op returns its bytes, also when allocations fail.
func TestBatchNormInPiecesIsTheWholeBatch(t *testing.T) {
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(21, 22))
	bnAttrs := ir.A("epsilon", 1e-5, "momentum", 0.1, "training", true)
	finAttrs := ir.A("epsilon", 1e-5, "momentum", 0.1)
	for _, c := range []struct {
		dt     tensor.DType
		shape  []int
		pieces [][2]int
	}{
		{tensor.F32, []int{9, 3, 5, 7}, [][2]int{{0, 4}, {4, 8}, {8, 9}}},
		{tensor.F32, []int{6, 4, 8, 8}, [][2]int{{0, 2}, {2, 2}, {2, 6}}},
		{tensor.F64, []int{5, 2, 33}, [][2]int{{0, 1}, {1, 5}}},
		{tensor.F32, []int{7, 6}, [][2]int{{0, 4}, {4, 7}}},
	} {
		n, ch := c.shape[0], c.shape[1]
		x, dy := randTensor(t, a, r, c.dt, c.shape...), randTensor(t, a, r, c.dt, c.shape...)
		scale, bias := randTensor(t, a, r, c.dt, ch), randTensor(t, a, r, c.dt, ch)
		rm, rv := randTensor(t, a, r, c.dt, ch), randTensor(t, a, r, c.dt, ch)
		for i := range ch {
			rv.SetFloat64At(i, 0.5+float64(i))
		}
		base := a.Stats().Allocated.Current
		whole := mustRun(t, a, "batch_norm", bnAttrs, x, scale, bias, rm, rv)
		grad := mustRun(t, a, "batch_norm_grad", ir.A("training", true), dy, x, scale, whole[3], whole[4])
		piece := func(v *tensor.Tensor, p [2]int) *tensor.Tensor { return slab(t, a, v, p[0], p[1]) }
		per := x.Len() / n

		sums := bnZeros(t, a, ch, kernels.BNStatsWidth)
		for _, p := range c.pieces {
			xp := piece(x, p)
			next := mustRun(t, a, "batch_norm_sum_acc", nil, sums, xp)[0]
			release(xp, sums)
			sums = next
		}
		sq := bnZeros(t, a, ch, kernels.BNStatsWidth)
		for _, p := range c.pieces {
			xp := piece(x, p)
			next := mustRun(t, a, "batch_norm_sqdev_acc", nil, sq, xp, sums)[0]
			release(xp, sq)
			sq = next
		}
		fin := mustRun(t, a, "batch_norm_finish", finAttrs, sums, sq, scale, bias, rm, rv)
		for i, what := range []string{"running_mean", "running_var", "saved_mean", "saved_inv_std"} {
			bnSameBits(t, what, fin[i], whole[1+i], 0)
		}
		acc := bnZeros(t, a, ch, kernels.BNGradWidth)
		for _, p := range c.pieces {
			xp := piece(x, p)
			y := mustRun(t, a, "batch_norm_apply", nil, xp, fin[4])[0]
			bnSameBits(t, "y", y, whole[0], p[0]*per)
			dyp := piece(dy, p)
			next := mustRun(t, a, "batch_norm_grad_sum_acc", nil, acc, dyp, xp, fin[2])[0]
			release(xp, y, dyp, acc)
			acc = next
		}
		ds := mustRun(t, a, "batch_norm_grad_finish", nil, acc, fin[3])
		bnSameBits(t, "dscale", ds[0], grad[1], 0)
		bnSameBits(t, "dbias", ds[1], grad[2], 0)
		for _, p := range c.pieces {
			xp, dyp := piece(x, p), piece(dy, p)
			dx := mustRun(t, a, "batch_norm_grad_x", nil, dyp, xp, scale, fin[2], fin[3], acc)[0]
			bnSameBits(t, "dx", dx, grad[0], p[0]*per)
			release(xp, dyp, dx)
		}
		for range 10 {
			release(mustRun(t, a, "batch_norm_sum_acc", nil, sums, x)...)
			release(mustRun(t, a, "batch_norm_sqdev_acc", nil, sq, x, sums)...)
			release(mustRun(t, a, "batch_norm_finish", finAttrs, sums, sq, scale, bias, rm, rv)...)
			release(mustRun(t, a, "batch_norm_apply", nil, x, fin[4])...)
			release(mustRun(t, a, "batch_norm_grad_sum_acc", nil, acc, dy, x, fin[2])...)
			release(mustRun(t, a, "batch_norm_grad_finish", nil, acc, fin[3])...)
			release(mustRun(t, a, "batch_norm_grad_x", nil, dy, x, scale, fin[2], fin[3], acc)...)
		}
		checkOOMSweep(t, "batch_norm_sqdev_acc", nil, sq, x, sums)
		checkOOMSweep(t, "batch_norm_finish", finAttrs, sums, sq, scale, bias, rm, rv)
		checkOOMSweep(t, "batch_norm_grad_x", nil, dy, x, scale, fin[2], fin[3], acc)
		// One value per channel: refused, as batch_norm refuses it.
		one := slab(t, a, x, 0, 1)
		if per == ch {
			z := bnZeros(t, a, ch, kernels.BNStatsWidth)
			s1 := mustRun(t, a, "batch_norm_sum_acc", nil, z, one)[0]
			release(z)
			if _, err := runOp(t, a, "batch_norm_finish", finAttrs, s1, s1, scale, bias, rm, rv); err == nil {
				t.Errorf("%v: a finish over one value per channel: no error", c.shape)
			}
			release(s1)
		}
		release(one, sums, sq, acc)
		release(fin...)
		release(ds...)
		release(whole...)
		release(grad...)
		wantAllocated(t, a, base)
		release(x, dy, scale, bias, rm, rv)
	}
	wantAllocated(t, a, 0)
}

// Operands that do not fit are refused by Infer, naming what is wrong;
// the gradient is refused with an error, never zero.
func TestBatchNormInPiecesRefuses(t *testing.T) {
	f := func(dims ...int) ir.Type { return ir.TensorOf(ir.F32, dims...) }
	d := func(dims ...int) ir.Type { return ir.TensorOf(ir.F64, dims...) }
	bad := []struct {
		name string
		in   []ir.Type
	}{
		{"batch_norm_sum_acc", []ir.Type{d(3, 32), f(2, 3, 4)}},
		{"batch_norm_sum_acc", []ir.Type{f(3, 33), f(2, 3, 4)}},
		{"batch_norm_sum_acc", []ir.Type{d(4, 33), f(2, 3, 4)}},
		{"batch_norm_sum_acc", []ir.Type{d(3, 33), f(3)}},
		{"batch_norm_sqdev_acc", []ir.Type{d(3, 33), f(2, 3), d(3, 65)}},
		{"batch_norm_finish", []ir.Type{d(3, 33), d(3, 33), f(3), f(3), f(3)}},
		{"batch_norm_finish", []ir.Type{d(3, 33), d(3, 33), f(3), f(3), f(4), f(3)}},
		{"batch_norm_apply", []ir.Type{f(2, 3, 4), d(3, 2)}},
		{"batch_norm_grad_sum_acc", []ir.Type{d(3, 65), f(2, 3, 4), f(2, 3, 5), f(3)}},
		{"batch_norm_grad_sum_acc", []ir.Type{d(3, 33), f(2, 3, 4), f(2, 3, 4), f(3)}},
		{"batch_norm_grad_finish", []ir.Type{d(3, 65), f(4)}},
		{"batch_norm_grad_x", []ir.Type{f(2, 3), f(2, 3), f(3), f(3), f(3), d(3, 33)}},
		{"batch_norm_grad_x", []ir.Type{f(2, 3), d(2, 3), f(3), f(3), f(3), d(3, 65)}},
	}
	for _, c := range bad {
		if _, err := buildOp(t, c.name, nil, c.in...); err == nil {
			t.Errorf("%s on %v: no error", c.name, c.in)
		}
	}
	for _, name := range []string{"batch_norm_sum_acc", "batch_norm_sqdev_acc", "batch_norm_finish", "batch_norm_apply", "batch_norm_grad_sum_acc", "batch_norm_grad_finish", "batch_norm_grad_x"} {
		d, _ := ops.Lookup(name)
		if d.Grad == nil {
			t.Fatalf("%s has no Grad", name)
		}
		if _, err := d.Grad(nil); err == nil {
			t.Errorf("%s: the gradient gives no error", name)
		}
	}
}
