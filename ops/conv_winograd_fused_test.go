package ops_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// winoMagnitudes is conv2d of |x| and |w|: each output's sum of the
// magnitudes of its products, the scale of its float32 rounding.
func winoMagnitudes(t *testing.T, a *memory.Allocator, attrs ir.Attrs, x, w *tensor.Tensor) []float64 {
	t.Helper()
	ax, aw := cloneTo(t, a, x), cloneTo(t, a, w)
	defer release(ax, aw)
	for _, v := range [][]float32{ax.F32(), aw.F32()} {
		for i := range v {
			v[i] = float32(math.Abs(float64(v[i])))
		}
	}
	outs := mustRun(t, a, "conv2d", attrs, ax, aw)
	defer release(outs...)
	return toF64(outs[0])
}

// TestConvFusedWinogradNCHW: conv2d_fused with winograd:true stays within
// 2e-6 of each output's product magnitudes (plus its bias's and
// residual's) of the op without it — with a bias and ReLU, the pool, a
// residual, each activation — with the weights as the call transforms
// them and as the executor's pack cache hands them (ConvPackWinograd).
func TestConvFusedWinogradNCHW(t *testing.T) {
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(21, 22))
	for _, tc := range []struct {
		x, w  []int
		pad   int
		attrs ir.Attrs // the epilogue's and the pool's
	}{
		{[]int{2, 32, 16, 16}, []int{64, 32, 3, 3}, 1, ir.A("bias", true, "activation", "relu", "pool", "max2x2")},
		{[]int{2, 32, 16, 16}, []int{64, 32, 3, 3}, 1, ir.A("bias", true, "activation", "relu")},
		{[]int{1, 17, 9, 7}, []int{20, 17, 3, 3}, 1, ir.A("bias", true, "residual", true, "activation", "silu")},
		{[]int{3, 16, 6, 5}, []int{16, 16, 3, 3}, 0, ir.A("activation", "clip", "min", -1.0, "max", 1.0)},
		{[]int{1, 16, 11, 13}, []int{24, 16, 3, 3}, 2, ir.A("bias", true, "activation", "sigmoid", "pool", "max2x2")},
	} {
		x, w := randTensor(t, a, r, tensor.F32, tc.x...), randTensor(t, a, r, tensor.F32, tc.w...)
		in := []*tensor.Tensor{x, w}
		if on, _ := tc.attrs.Bool("bias"); on {
			in = append(in, randTensor(t, a, r, tensor.F32, tc.w[0]))
		}
		oh, ow := tc.x[2]+2*tc.pad-2, tc.x[3]+2*tc.pad-2
		if on, _ := tc.attrs.Bool("residual"); on {
			in = append(in, randTensor(t, a, r, tensor.F32, tc.x[0], tc.w[0], oh, ow))
		}
		attrs := append(ir.A("paddings", tc.pad), tc.attrs...)
		mag := winoMagnitudes(t, a, ir.A("paddings", tc.pad), x, w)
		want := mustRun(t, a, "conv2d_fused", attrs, in...)[0]
		wattrs := attrs.With("winograd", ir.Bool(true))
		got := mustRun(t, a, "conv2d_fused", wattrs, in...)[0]
		packed := runConvFusedPacked(t, a, wattrs, tc.pad, in...)
		pool := tc.attrs.Has("pool")
		for _, g := range []*tensor.Tensor{got, packed} {
			gv, wv := g.F32(), want.F32()
			for i := range wv {
				m := mag[i]
				if pool { // the largest of the window's
					pw, ph := ow/2, oh/2
					plane, y, x := i/(ph*pw), i%(ph*pw)/pw, i%pw
					m = 0
					for dy := range 2 {
						for dx := range 2 {
							m = max(m, mag[(plane*oh+2*y+dy)*ow+2*x+dx])
						}
					}
				}
				m += 4 // the bias's and residual's scale: values in [-2, 2)
				if d := math.Abs(float64(gv[i]) - float64(wv[i])); !(d <= 2e-6*m) {
					t.Fatalf("%v %v: out[%d] = %v, without winograd %v (magnitude %v)", tc.x, attrs, i, gv[i], wv[i], m)
				}
			}
		}
		release(in...)
		release(want, got, packed)
	}
	wantAllocated(t, a, 0)
}

// runConvFusedPacked runs conv2d_fused on in with its weights packed
// beforehand (kernels.PackConv2D), as the executor's pack cache hands
// them.
func runConvFusedPacked(t *testing.T, a *memory.Allocator, attrs ir.Attrs, pad int, in ...*tensor.Tensor) *tensor.Tensor {
	t.Helper()
	types := make([]ir.Type, len(in))
	for i, x := range in {
		types[i] = ir.TensorOf(ir.DType(x.DType()), x.Shape()...)
	}
	op, err := buildOp(t, "conv2d_fused", attrs, types...)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ops.Bind(op)
	if err != nil {
		t.Fatal(err)
	}
	xs, ws := in[0].Shape(), in[1].Shape()
	p := kernels.Conv2DParams{N: xs[0], C: xs[1], H: xs[2], W: xs[3], O: ws[0], KH: 3, KW: 3, SH: 1, SW: 1, PH: pad, PW: pad, DH: 1, DW: 1, Groups: 1, Winograd: true}
	if kernels.Conv2DPackForm(p) != kernels.ConvPackWinograd {
		t.Fatalf("%+v: pack form %d, want ConvPackWinograd", p, kernels.Conv2DPackForm(p))
	}
	packed, err := tensor.New(a, tensor.F32, kernels.Conv2DPackedLen(p))
	if err != nil {
		t.Fatal(err)
	}
	defer packed.Release()
	kernels.PackConv2D(p, in[1].F32(), packed.F32())
	c := &ops.Ctx{Alloc: a, Threads: 2, Seed: 1}
	c.SetPacked(packed.Raw())
	outs, err := k(c, in)
	if err != nil {
		t.Fatal(err)
	}
	return outs[0]
}

// TestConvFusedWinogradNCHWErrors: winograd:true where F(2×2, 3×3) does
// not apply is an error at build time, naming what is wrong.
func TestConvFusedWinogradNCHWErrors(t *testing.T) {
	for _, tc := range []struct {
		w     []int
		attrs ir.Attrs
		err   string
	}{
		{[]int{8, 4, 5, 5}, ir.A("winograd", true), "3×3 filter"},
		{[]int{8, 4, 3, 3}, ir.A("winograd", true, "strides", 2), "strides 1"},
		{[]int{8, 2, 3, 3}, ir.A("winograd", true, "groups", 2), "groups 1"},
	} {
		_, err := buildOp(t, "conv2d_fused", tc.attrs, ir.TensorOf(ir.F32, 1, 4, 8, 8), ir.TensorOf(ir.F32, tc.w...))
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v %v: err %v, want one saying %q", tc.w, tc.attrs, err, tc.err)
		}
	}
	if _, err := buildOp(t, "conv2d_fused", ir.A("winograd", true), ir.TensorOf(ir.F64, 1, 4, 8, 8), ir.TensorOf(ir.F64, 8, 4, 3, 3)); err == nil || !strings.Contains(err.Error(), "takes f32") {
		t.Errorf("f64: err %v", err)
	}
}

// TestConvFusedWinogradNCHWRepeatMemory: a compiled conv2d_fused with
// winograd:true, run many times with a residual of the wrong shape every
// other time (an error), leaves the allocator's bytes at the baseline
// after every run.
func TestConvFusedWinogradNCHWRepeatMemory(t *testing.T) {
	a := memory.New(memory.Options{})
	host := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(23, 24))
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F32, 2, 16, 8, 8)
	w := ops.Data(b, "w", ir.F32, 16, 16, 3, 3)
	bias := ops.Data(b, "b", ir.F32, 16)
	res := ops.Data(b, "r", ir.F32, ir.Dynamic, 16, 8, 8)
	y := ops.Conv2DFused(b, x, w, ir.A("paddings", 1, "winograd", true), ops.Epilogue{Bias: bias, Residual: res, Activation: "relu"})
	ops.Fetch(b, "y", y)
	prog, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	c, err := exec.Compile(prog, exec.Options{Alloc: a, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	feeds := map[string]*tensor.Tensor{
		"x": randTensor(t, host, r, tensor.F32, 2, 16, 8, 8),
		"w": randTensor(t, host, r, tensor.F32, 16, 16, 3, 3),
		"b": randTensor(t, host, r, tensor.F32, 16),
	}
	good, bad := randTensor(t, host, r, tensor.F32, 2, 16, 8, 8), randTensor(t, host, r, tensor.F32, 1, 16, 8, 8)
	defer release(feeds["x"], feeds["w"], feeds["b"], good, bad)
	for i := range 40 {
		feeds["r"] = good
		if i%2 == 1 {
			feeds["r"] = bad
		}
		out, err := c.Run(context.Background(), feeds)
		if i%2 == 1 {
			if err == nil || !strings.Contains(err.Error(), "residual") {
				t.Fatalf("run %d: err %v", i, err)
			}
		} else {
			if err != nil {
				t.Fatalf("run %d: %v", i, err)
			}
			out.Release()
		}
		wantAllocated(t, a, 0)
	}
}
