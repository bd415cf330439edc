package optimize_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/optimize"
)

// winogradNCHWOn reports whether conv2d_fused says yes to Winograd on the
// small CNN's second layer (32→64 on 16×16): where the kernels have the
// vector transforms.
func winogradNCHWOn(t *testing.T) bool {
	t.Helper()
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F32, ir.Dynamic, 32, 16, 16)
	w := ops.Data(b, "w", ir.F32, 64, 32, 3, 3)
	y := ops.Conv2DFused(b, x, w, ir.A("paddings", 1), ops.Epilogue{Activation: "relu"})
	ops.Fetch(b, "y", y)
	if _, err := b.Finish(); err != nil {
		t.Fatal(err)
	}
	d, _ := ops.Lookup("conv2d_fused")
	return d.Winograd(y.Def())
}

// TestWinogradNCHWMarks: the pass marks the NCHW fused convolutions that
// conv2d_fused's Def.Winograd takes — 3×3, stride 1, f32, at least 16
// channels in and out — with winograd:true, and leaves the others (3
// input channels, a 1×1 or strided filter, float64, a plain conv2d, one
// already marked) as they are. (TestModelsOptimized holds the small CNN,
// whose second layer it marks, to the unmarked program's results.)
func TestWinogradNCHWMarks(t *testing.T) {
	if !winogradNCHWOn(t) {
		t.Skip("no vector Winograd transforms on this machine")
	}
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F32, ir.Dynamic, 3, 16, 16)
	weights := 0
	fused := func(x *ir.Value, o, k int, attrs ir.Attrs) *ir.Value {
		c := x.Type().Dims[1]
		weights++
		w := ops.Data(b, fmt.Sprintf("w%d", weights), x.Type().DType, o, c, k, k)
		return ops.Conv2DFused(b, x, w, attrs, ops.Epilogue{Activation: "relu"})
	}
	first := fused(x, 32, 3, ir.A("paddings", 1))                                                                    // 3 input channels: no
	second := fused(first, 32, 3, ir.A("paddings", 1, "pool", "max2x2"))                                             // yes
	third := fused(second, 32, 1, ir.A())                                                                            // 1×1: no
	fourth := fused(third, 32, 3, ir.A("paddings", 1, "strides", 2))                                                 // strided: no
	fifth := fused(fourth, 16, 3, ir.A("paddings", 1, "winograd", true))                                             // marked already
	plain := ops.Conv2D(b, fifth, ops.Data(b, "wp", ir.F32, 16, 16, 3, 3), []int{1, 1}, []int{1, 1}, []int{1, 1}, 1) // conv2d: no hook
	ops.Fetch(b, "y", plain)
	x64 := ops.Data(b, "x64", ir.F64, 1, 16, 8, 8)
	ops.Fetch(b, "y64", fused(x64, 16, 3, ir.A("paddings", 1))) // float64: no
	p, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	q, n, err := optimize.Winograd(p)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("marked %d convolutions, want 1", n)
	}
	var marked []string
	q.Walk(func(op *ir.Op) bool {
		if on, err := op.Attrs.Bool("winograd"); err == nil && on {
			marked = append(marked, fmt.Sprintf("%s %v", op.Name(), op.Operand(1).Type()))
		}
		return true
	})
	want := []string{"conv2d_fused tensor<32x32x3x3xf32>", "conv2d_fused tensor<16x32x3x3xf32>"}
	if !slices.Equal(marked, want) {
		t.Errorf("winograd:true on %q, want %q (the new one and the one marked before)", marked, want)
	}
}
