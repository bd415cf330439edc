package ops_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gopir/gopir/internal/fdcheck"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Gradient rules of the neural-network family (matmul, conv, pool, norm,
// dropout, softmax, losses) against finite differences, and their helper
// ops (conv2d_grad_input, max_pool2d_grad, …) on their own.

// nnCheckGrad checks the gradient of a small program against central
// finite differences. build appends ops on the fed values and returns the
// values the loss is made of: loss = Σ_k Σ out_k·r_k with fixed random
// weights r_k. The gradient with respect to each input listed in wrt comes
// from autodiff.Backward and runs on the executor with the leak check.
// With dynamic, float inputs are declared with every dim dynamic, so that
// rules take their run-time shape paths.
func nnCheckGrad(t *testing.T, tol float64, dynamic bool, in []*tensor.Tensor, wrt []int, build func(b *ir.Builder, x []*ir.Value) []*ir.Value) {
	t.Helper()
	// program returns the program with the outs fetched (probe), or the
	// loss, or the loss and its gradients.
	program := func(loss, grad bool) *ir.Program {
		b := ir.NewBuilder(ir.NewProgram())
		vals := make([]*ir.Value, len(in))
		for i, x := range in {
			dims := x.Shape()
			if dynamic && x.DType() == tensor.F64 {
				dims = make([]int, x.Rank())
				for k := range dims {
					dims[k] = ir.Dynamic
				}
			}
			vals[i] = ops.Data(b, fmt.Sprintf("x%d", i), ir.DType(x.DType()), dims...)
		}
		outs := build(b, vals)
		if !loss {
			for k, y := range outs {
				ops.Fetch(b, fmt.Sprintf("y%d", k), y)
			}
		} else {
			var l *ir.Value
			for k, y := range outs {
				dims := make([]int, y.Type().Rank())
				for i := range dims {
					dims[i] = ir.Dynamic
				}
				r := ops.Data(b, fmt.Sprintf("r%d", k), ir.F64, dims...)
				term := ops.ReduceSum(b, ops.Multiply(b, y, r), nil, false)
				if l == nil {
					l = term
				} else {
					l = ops.Add(b, l, term)
				}
			}
			ops.Fetch(b, "loss", l)
			if grad {
				var ws []*ir.Value
				for _, i := range wrt {
					ws = append(ws, vals[i])
				}
				gs, err := autodiff.Backward(b, l, ws)
				if err != nil {
					t.Fatal(err)
				}
				for k, g := range gs {
					ops.Fetch(b, fmt.Sprintf("x%d@GRAD", wrt[k]), g)
				}
			}
		}
		p, err := b.Finish()
		if err != nil {
			t.Fatalf("%v\n%s", err, b.Program())
		}
		return p
	}
	feeds := map[string]*tensor.Tensor{}
	for i, x := range in {
		feeds[fmt.Sprintf("x%d", i)] = x
	}
	// Probe the outputs' shapes for the weights.
	probe := program(false, false)
	px, err := exec.Compile(probe, exec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pres, err := px.Run(context.Background(), feeds)
	if err != nil {
		t.Fatalf("%v\n%s", err, probe)
	}
	r := rand.New(rand.NewPCG(7, uint64(len(in))))
	for k := 0; ; k++ {
		y, ok := pres[fmt.Sprintf("y%d", k)]
		if !ok {
			break
		}
		w := f64Rand(t, r, -1, 1, y.Shape()...)
		defer w.Release()
		feeds[fmt.Sprintf("r%d", k)] = w
	}
	pres.Release()

	gp := program(true, true)
	a := memory.New(memory.Options{})
	gx, err := exec.Compile(gp, exec.Options{Alloc: a, CheckLeaks: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, gp)
	}
	fx, err := exec.Compile(program(true, false), exec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := gx.Run(context.Background(), feeds)
	if err != nil {
		t.Fatalf("%v\n%s", err, gp)
	}
	defer func() {
		res.Release()
		if got := a.Stats().Allocated.Current; got != 0 {
			t.Errorf("%d bytes allocated after the run", got)
		}
	}()
	lossAt := func() float64 {
		res, err := fx.Run(context.Background(), feeds)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Release()
		return res["loss"].F64()[0]
	}
	for _, i := range wrt {
		n := fmt.Sprintf("x%d", i)
		g := res[n+"@GRAD"]
		x := feeds[n].F64()
		if g.Len() != len(x) || !equalInts(g.Shape(), feeds[n].Shape()) {
			t.Fatalf("gradient of %s has shape %v, want %v", n, g.Shape(), feeds[n].Shape())
		}
		fdcheck.Check(t, n, x, g.F64(), lossAt, tol)
	}
}

// nnOpOut appends op name on x and returns its results listed in keep.
func nnOpOut(name string, attrs ir.Attrs, keep ...int) func(b *ir.Builder, x []*ir.Value) []*ir.Value {
	return func(b *ir.Builder, x []*ir.Value) []*ir.Value {
		op := b.Op(name, attrs, x...)
		var out []*ir.Value
		for _, k := range keep {
			out = append(out, op.Result(k))
		}
		return out
	}
}

func nnRandInputs(t *testing.T, r *rand.Rand, shapes ...[]int) []*tensor.Tensor {
	t.Helper()
	var in []*tensor.Tensor
	for _, s := range shapes {
		x := f64Rand(t, r, -1, 1, s...)
		t.Cleanup(x.Release)
		in = append(in, x)
	}
	return in
}

func TestNNGradMatmul(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	cases := []struct {
		tx, ty bool
		x, y   []int
	}{
		{false, false, []int{4}, []int{4}},
		{false, false, []int{4}, []int{4, 3}},
		{false, true, []int{4}, []int{3, 4}},
		{true, false, []int{4}, []int{4, 3}}, // transpose_x does not apply to 1-D x
		{false, false, []int{3, 4}, []int{4}},
		{true, false, []int{4, 3}, []int{4}},
		{false, false, []int{4}, []int{2, 4, 3}},
		{false, true, []int{4}, []int{2, 1, 3, 4}},
		{false, false, []int{2, 3, 4}, []int{4}},
		{true, false, []int{2, 2, 4, 3}, []int{4}},
		{false, false, []int{2, 1, 3, 4}, []int{3, 4, 5}},
		{true, true, []int{2, 4, 3}, []int{1, 5, 4}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%v%v/%v%v", tc.x, tc.tx, tc.y, tc.ty), func(t *testing.T) {
			in := nnRandInputs(t, r, tc.x, tc.y)
			attrs := ir.A("transpose_x", tc.tx, "transpose_y", tc.ty)
			checkOpGrad(t, "matmul", attrs, in...)
			nnCheckGrad(t, 1e-5, true, in, []int{0, 1}, nnOpOut("matmul", attrs, 0))
		})
	}
}

func TestNNGradConv2D(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	cases := []nnConvCase{
		{2, 3, 5, 6, 4, 3, 3, [2]int{1, 1}, [2]int{0, 0}, [2]int{1, 1}, 1},
		{2, 3, 6, 6, 4, 3, 3, [2]int{2, 2}, [2]int{1, 1}, [2]int{1, 1}, 1},
		{1, 2, 7, 6, 2, 3, 2, [2]int{2, 1}, [2]int{1, 0}, [2]int{2, 1}, 1},
		{2, 4, 5, 5, 6, 3, 3, [2]int{1, 2}, [2]int{1, 1}, [2]int{1, 1}, 2},
		{1, 4, 6, 6, 4, 3, 3, [2]int{1, 1}, [2]int{2, 2}, [2]int{2, 2}, 4}, // depthwise, dilated
		{2, 3, 7, 8, 3, 3, 3, [2]int{2, 2}, [2]int{1, 1}, [2]int{1, 1}, 3}, // depthwise, strided
		{2, 4, 4, 3, 6, 1, 1, [2]int{1, 1}, [2]int{0, 0}, [2]int{1, 1}, 2}, // 1×1: direct
		{2, 3, 7, 7, 2, 1, 1, [2]int{3, 2}, [2]int{0, 1}, [2]int{1, 1}, 1}, // 1×1 strided, padded
		{3, 2, 8, 7, 3, 2, 3, [2]int{3, 3}, [2]int{1, 1}, [2]int{1, 2}, 1}, // rows and cols left over
	}
	for _, c := range cases {
		t.Run(c.String(), func(t *testing.T) {
			in := nnRandInputs(t, r, []int{c.n, c.c, c.h, c.w}, []int{c.o, c.c / c.g, c.kh, c.kw})
			checkOpGrad(t, "conv2d", c.attrs(), in...)
			// Dynamic shapes: the helpers take the sizes from operands.
			nnCheckGrad(t, 1e-5, true, in, []int{0, 1}, nnOpOut("conv2d", c.attrs(), 0))
		})
	}
}

func TestNNGradPool(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	cases := []struct {
		x                  []int
		kernel, stride, pd []int
	}{
		{[]int{2, 3, 4, 4}, []int{2, 2}, nil, nil},
		{[]int{2, 2, 5, 5}, []int{3, 3}, []int{2, 2}, []int{1, 1}},
		{[]int{1, 2, 6, 5}, []int{3, 2}, []int{1, 2}, []int{1, 1}},
		{[]int{1, 3, 7, 7}, []int{2, 3}, []int{3, 1}, []int{0, 1}},
		{[]int{2, 1, 5, 6}, []int{3, 3}, []int{1, 1}, []int{1, 1}}, // overlapping windows
		{[]int{1, 2, 5, 4}, []int{3, 3}, []int{2, 1}, []int{2, 2}}, // padding beyond half the window
	}
	for _, tc := range cases {
		attrs := ir.A("kernel_size", tc.kernel)
		if tc.stride != nil {
			attrs = attrs.With("strides", nnIntListAttr(tc.stride))
		}
		if tc.pd != nil {
			attrs = attrs.With("paddings", nnIntListAttr(tc.pd))
		}
		t.Run(fmt.Sprintf("%v%v", tc.x, attrs), func(t *testing.T) {
			in := nnRandInputs(t, r, tc.x)
			checkOpGrad(t, "max_pool2d", attrs, in...)
			checkOpGrad(t, "max_pool2d_values", attrs, in...)
			checkOpGrad(t, "avg_pool2d", attrs, in...)
			nnCheckGrad(t, 1e-5, true, in, []int{0}, nnOpOut("max_pool2d", attrs, 0))
			nnCheckGrad(t, 1e-5, true, in, []int{0}, nnOpOut("avg_pool2d", attrs, 0))
		})
	}
}

func nnIntListAttr(v []int) ir.Attr {
	a, _ := ir.ToAttr(v)
	return a
}

func TestNNGradBatchNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, shape := range [][]int{{4, 3}, {2, 3, 4}, {3, 2, 3, 2}} {
		for _, training := range []bool{true, false} {
			attrs := ir.A("epsilon", 1e-3, "momentum", 0.2, "training", training)
			t.Run(fmt.Sprintf("%v/training=%v", shape, training), func(t *testing.T) {
				c := shape[1]
				in := nnRandInputs(t, r, shape, []int{c}, []int{c}, []int{c}, []int{c})
				for i := range in[4].F64() { // a positive running variance
					in[4].F64()[i] = 0.5 + r.Float64()
				}
				wrt := []int{0, 1, 2}
				if !training { // y depends on the running statistics too
					wrt = []int{0, 1, 2, 3, 4}
				}
				nnCheckGrad(t, 1e-5, false, in, wrt, nnOpOut("batch_norm", attrs, 0))
				nnCheckGrad(t, 1e-5, true, in, wrt, nnOpOut("batch_norm", attrs, 0))
			})
		}
	}
}

func TestNNGradBatchNormRunningStats(t *testing.T) {
	// The running statistics get zero gradients; gradients through the
	// statistics results are refused.
	r := rand.New(rand.NewPCG(4, 5))
	in := nnRandInputs(t, r, []int{4, 3}, []int{3}, []int{3}, []int{3}, []int{3})
	b := ir.NewBuilder(ir.NewProgram())
	var vals []*ir.Value
	for i, x := range in {
		vals = append(vals, ops.Data(b, fmt.Sprintf("x%d", i), ir.F64, x.Shape()...))
	}
	y, m, _, _, _ := ops.BatchNorm(b, vals[0], vals[1], vals[2], vals[3], vals[4], 1e-5, 0.1, true)
	loss := ops.ReduceSum(b, y, nil, false)
	gs, err := autodiff.Backward(b, loss, vals[3:])
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gs {
		if g.Def().Name() != "full" {
			t.Errorf("running statistic gradient is made by %q, want zeros", g.Def().Name())
		}
	}
	loss2 := ops.Add(b, loss, ops.ReduceSum(b, m, nil, false))
	if _, err := autodiff.Backward(b, loss2, vals[:1]); err == nil {
		t.Error("gradient through running_mean_out: no error")
	}
}

func TestNNGradLayerNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	cases := []struct {
		shape []int
		begin int
	}{
		{[]int{3, 5}, -1},
		{[]int{3, 5}, 1},
		{[]int{2, 3, 4}, 1},
		{[]int{2, 3, 4}, 2},
		{[]int{2, 3, 4}, -2},
		{[]int{2, 3}, 0},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%v/%d", tc.shape, tc.begin), func(t *testing.T) {
			axis := tc.begin
			if axis < 0 {
				axis += len(tc.shape)
			}
			norm := tc.shape[axis:]
			in := nnRandInputs(t, r, tc.shape, norm, norm)
			attrs := ir.A("epsilon", 1e-4, "begin_norm_axis", tc.begin)
			nnCheckGrad(t, 1e-5, false, in, []int{0, 1, 2}, nnOpOut("layer_norm", attrs, 0))
			nnCheckGrad(t, 1e-5, true, in, []int{0, 1, 2}, nnOpOut("layer_norm", attrs, 0))
		})
	}
}

func TestNNGradDropout(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	in := nnRandInputs(t, r, []int{3, 7})
	// A seed attribute fixes the mask, so that finite differences see the
	// same function; the mask result is in the loss too (it does not
	// depend on x).
	checkOpGrad(t, "dropout", ir.A("p", 0.4, "seed", 9), in...)
	checkOpGrad(t, "dropout", ir.A("p", 0.4, "training", false), in...)
	nnCheckGrad(t, 1e-5, true, in, []int{0}, nnOpOut("dropout", ir.A("p", 0.3, "seed", 3), 0))
}

func TestNNGradSoftmax(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, name := range []string{"softmax", "log_softmax"} {
		for _, tc := range []struct {
			shape []int
			axis  int
		}{{[]int{5}, 0}, {[]int{3, 4}, -1}, {[]int{3, 4}, 0}, {[]int{2, 3, 4}, 1}, {[]int{2, 3, 4}, -3}, {nil, 0}} {
			t.Run(fmt.Sprintf("%s%v/%d", name, tc.shape, tc.axis), func(t *testing.T) {
				in := nnRandInputs(t, r, tc.shape)
				attrs := ir.A("axis", tc.axis)
				checkOpGrad(t, name, attrs, in...)
				nnCheckGrad(t, 1e-5, true, in, []int{0}, nnOpOut(name, attrs, 0))
			})
		}
	}
}

// nnLabels makes an i64 tensor of labels in [0, n), with ignore at the
// positions listed.
func nnLabels(t *testing.T, r *rand.Rand, n int, ignore int64, at []int, shape ...int) *tensor.Tensor {
	t.Helper()
	l, err := tensor.New(host, tensor.I64, shape...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Release)
	for i := range l.I64() {
		l.I64()[i] = int64(r.IntN(n))
	}
	for _, i := range at {
		l.I64()[i] = ignore
	}
	return l
}

func TestNNGradCrossEntropy(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	t.Run("NxC", func(t *testing.T) {
		logits := nnRandInputs(t, r, []int{5, 4})[0]
		labels := nnLabels(t, r, 4, -100, []int{2}, 5)
		attrs := ir.A("ignore_index", -100)
		// Both results in the loss: the softmax result's gradient adds in.
		checkOpGrad(t, "cross_entropy_with_softmax", attrs, logits, labels)
		nnCheckGrad(t, 1e-5, true, []*tensor.Tensor{logits, labels}, []int{0}, nnOpOut("cross_entropy_with_softmax", attrs, 0))
		nnCheckGrad(t, 1e-5, false, []*tensor.Tensor{logits, labels}, []int{0}, nnOpOut("cross_entropy_with_softmax", attrs, 1))
	})
	t.Run("NxCxHxW/axis1", func(t *testing.T) {
		logits := nnRandInputs(t, r, []int{2, 3, 2, 2})[0]
		labels := nnLabels(t, r, 3, 1, nil, 2, 2, 2) // ignore_index 1 is a class
		attrs := ir.A("axis", 1, "ignore_index", 1)
		checkOpGrad(t, "cross_entropy_with_softmax", attrs, logits, labels)
		nnCheckGrad(t, 1e-5, false, []*tensor.Tensor{logits, labels}, []int{0}, nnOpOut("cross_entropy_with_softmax", attrs, 0))
	})
	t.Run("i32", func(t *testing.T) {
		logits := nnRandInputs(t, r, []int{3, 5})[0]
		labels := nnFrom(t, host, tensor.I32, []float64{4, 7, 0}, 3)
		t.Cleanup(labels.Release)
		attrs := ir.A("ignore_index", 7)
		nnCheckGrad(t, 1e-5, false, []*tensor.Tensor{logits, labels}, []int{0}, nnOpOut("cross_entropy_with_softmax", attrs, 0))
	})
}

func TestNNGradBCEWithLogits(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	in := nnRandInputs(t, r, []int{3, 4}, []int{3, 4})
	for i := range in[0].F64() {
		in[0].F64()[i] *= 3
		in[1].F64()[i] = (in[1].F64()[i] + 1) / 2 // targets in [0, 1)
	}
	checkOpGrad(t, "binary_cross_entropy_with_logits", nil, in...)
	nnCheckGrad(t, 1e-5, true, in, []int{0, 1}, nnOpOut("binary_cross_entropy_with_logits", nil, 0))
}

// TestNNGradInWhile differentiates conv2d, batch_norm, layer_norm, softmax
// and pools inside and after a while loop, whose residuals come back from
// a stack with dynamic types.
func TestNNGradInWhile(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 10))
	in := nnRandInputs(t, r, []int{2, 3, 5, 5}, []int{3, 3, 3, 3}, []int{3}, []int{3}, []int{5})
	for i := range in[1].F64() {
		in[1].F64()[i] *= 0.5
	}
	zeros := f64Rand(t, r, 0, 0, 3)
	ones := f64Rand(t, r, 1, 1, 3)
	t.Cleanup(zeros.Release)
	t.Cleanup(ones.Release)
	for _, trips := range []int64{0, 1, 3} {
		n := nnFrom(t, host, tensor.I64, []float64{float64(trips)})
		t.Cleanup(n.Release)
		feeds := append(append([]*tensor.Tensor(nil), in...), n, zeros, ones)
		build := func(b *ir.Builder, x []*ir.Value) []*ir.Value {
			i0 := ops.Full(b, ir.I64, 0)
			one := ops.Full(b, ir.I64, 1)
			res := b.While(ops.LessThan(b, i0, x[5]), []*ir.Value{i0, x[0]}, func(b *ir.Builder, args []*ir.Value) (*ir.Value, []*ir.Value) {
				h := ops.Conv2D(b, args[1], x[1], nil, []int{1, 1}, nil, 0)
				h, _, _, _, _ = ops.BatchNorm(b, h, x[2], x[3], x[6], x[7], 1e-5, 0.1, true)
				h, _, _ = ops.LayerNorm(b, h, x[4], x[4], 1e-5, -1)
				h = ops.Softmax(b, ops.Tanh(b, h), 1)
				i1 := ops.Add(b, args[0], one)
				return ops.LessThan(b, i1, x[5]), []*ir.Value{i1, h}
			})
			mx, _ := ops.MaxPool2D(b, res[1], []int{2, 2}, nil, []int{1, 1})
			av := ops.AvgPool2D(b, res[1], []int{3, 3}, []int{2, 2}, []int{1, 1})
			return []*ir.Value{mx, av}
		}
		t.Run(fmt.Sprint(trips), func(t *testing.T) {
			nnCheckGrad(t, 1e-5, false, feeds, []int{0, 1, 2, 3, 4}, build)
		})
	}
}

// ---- helper ops ----

// nnConvGradRef computes the gradients of Σ conv2d(x, w)·dy directly.
func nnConvGradRef(x, w, dy []float64, c nnConvCase) (dx, dw []float64) {
	oh := (c.h+2*c.p[0]-c.d[0]*(c.kh-1)-1)/c.s[0] + 1
	ow := (c.w+2*c.p[1]-c.d[1]*(c.kw-1)-1)/c.s[1] + 1
	cg, og := c.c/c.g, c.o/c.g
	dx = make([]float64, len(x))
	dw = make([]float64, len(w))
	for n := range c.n {
		for o := range c.o {
			g := o / og
			for y := range oh {
				for xo := range ow {
					d := dy[((n*c.o+o)*oh+y)*ow+xo]
					for ci := range cg {
						for i := range c.kh {
							for j := range c.kw {
								ih := y*c.s[0] - c.p[0] + i*c.d[0]
								iw := xo*c.s[1] - c.p[1] + j*c.d[1]
								if ih < 0 || ih >= c.h || iw < 0 || iw >= c.w {
									continue
								}
								xi := ((n*c.c+g*cg+ci)*c.h+ih)*c.w + iw
								wi := ((o*cg+ci)*c.kh+i)*c.kw + j
								dx[xi] += d * w[wi]
								dw[wi] += d * x[xi]
							}
						}
					}
				}
			}
		}
	}
	return dx, dw
}

func TestNNGradConv2DHelpers(t *testing.T) {
	nnDebug(t)
	r := rand.New(rand.NewPCG(11, 11))
	a := memory.New(memory.Options{})
	cases := append([]nnConvCase{
		{9, 3, 6, 6, 4, 3, 3, [2]int{2, 2}, [2]int{1, 1}, [2]int{1, 1}, 1}, // more samples than filter chunks
		{2, 16, 34, 33, 4, 3, 3, [2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1}, 2},
		{3, 4, 5, 5, 0, 3, 3, [2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1}, 1}, // no output channels
		{0, 4, 5, 5, 2, 3, 3, [2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1}, 1}, // no samples
	}, nnConvCases...)
	for _, c := range cases {
		oh := (c.h+2*c.p[0]-c.d[0]*(c.kh-1)-1)/c.s[0] + 1
		ow := (c.w+2*c.p[1]-c.d[1]*(c.kw-1)-1)/c.s[1] + 1
		for _, dt := range nnDTypes {
			t.Run(fmt.Sprintf("%s/%v", c, dt), func(t *testing.T) {
				x := randTensor(t, a, r, dt, c.n, c.c, c.h, c.w)
				w := randTensor(t, a, r, dt, c.o, c.c/c.g, c.kh, c.kw)
				dy := randTensor(t, a, r, dt, c.n, c.o, oh, ow)
				defer release(x, w, dy)
				wantDX, wantDW := nnConvGradRef(nnVals(x), nnVals(w), nnVals(dy), c)
				tol := nnTol(dt) * 10
				for _, threads := range []int{1, 2, 3} {
					in := nnRunThreads(t, a, threads, "conv2d_grad_input", c.attrs().With("input_size", nnIntListAttr([]int{c.h, c.w})), dy, w)
					fl := nnRunThreads(t, a, threads, "conv2d_grad_filter", c.attrs().With("filter_size", nnIntListAttr([]int{c.kh, c.kw})), dy, x)
					in2 := nnRunThreads(t, a, threads, "conv2d_grad_input", c.attrs(), dy, w, x)
					fl2 := nnRunThreads(t, a, threads, "conv2d_grad_filter", c.attrs(), dy, x, w)
					closeEnough(t, "dx", in[0], wantDX, x.Shape(), tol)
					closeEnough(t, "dw", fl[0], wantDW, w.Shape(), tol)
					nnSameBits(t, "dx (operand size)", in2[0], in[0])
					nnSameBits(t, "dw (operand size)", fl2[0], fl[0])
					if threads > 1 {
						ref := nnRunThreads(t, a, 1, "conv2d_grad_filter", c.attrs(), dy, x, w)
						nnSameBits(t, "dw threads", fl[0], ref[0])
						refIn := nnRunThreads(t, a, 1, "conv2d_grad_input", c.attrs(), dy, w, x)
						nnSameBits(t, "dx threads", in[0], refIn[0])
						release(ref[0], refIn[0])
					}
					release(in[0], fl[0], in2[0], fl2[0])
				}
			})
		}
	}
	wantAllocated(t, a, 0)
}

func TestNNGradHelpersInferErrors(t *testing.T) {
	dy := nnT(ir.F32, 2, 4, 3, 3)
	w := nnT(ir.F32, 4, 3, 3, 3)
	x := nnT(ir.F32, 2, 3, 5, 5)
	is := ir.A("input_size", []int{5, 5})
	fs := ir.A("filter_size", []int{3, 3})
	nnInferErr(t, "conv2d_grad_input", nil, []string{"input_size", "third operand"}, dy, w)
	nnInferErr(t, "conv2d_grad_input", is, []string{"not both"}, dy, w, x)
	nnInferErr(t, "conv2d_grad_input", ir.A("input_size", []int{6, 6}), []string{"shape", "conv2d's output"}, dy, w)
	nnInferErr(t, "conv2d_grad_input", is, []string{"dtype"}, nnT(ir.F64, 2, 4, 3, 3), w)
	nnInferErr(t, "conv2d_grad_input", is, []string{"rank 4"}, nnT(ir.F32, 4, 3, 3), w)
	nnInferErr(t, "conv2d_grad_input", is, []string{"f32 or f64"}, nnT(ir.I32, 2, 4, 3, 3), nnT(ir.I32, 4, 3, 3, 3))
	nnInferErr(t, "conv2d_grad_input", nil, []string{"channels"}, dy, w, nnT(ir.F32, 2, 4, 5, 5))
	nnInferErr(t, "conv2d_grad_input", nil, []string{"2 or 3 operands"}, dy)
	nnInferErr(t, "conv2d_grad_filter", nil, []string{"filter_size"}, dy, x)
	nnInferErr(t, "conv2d_grad_filter", ir.A("filter_size", []int{2, 2}), []string{"conv2d's output"}, dy, x)
	nnInferErr(t, "conv2d_grad_filter", fs.With("groups", ir.Int(2)), []string{"divisible by groups=2"}, dy, x)
	nnInferErr(t, "conv2d_grad_filter", nil, []string{"rank 4"}, dy, x, nnT(ir.F32, 3, 3))

	if got := nnInferOK(t, "conv2d_grad_input", ir.A("strides", 2), nnT(ir.F32, -1, 4, 2, 2), w, nnT(ir.F32, -1, -1, 6, -1)); !got[0].Equal(nnT(ir.F32, -1, 3, 6, -1)) {
		t.Errorf("conv2d_grad_input type %s", got[0])
	}
	if got := nnInferOK(t, "conv2d_grad_filter", fs, nnT(ir.F64, -1, 4, -1, -1), nnT(ir.F64, -1, 3, -1, -1)); !got[0].Equal(nnT(ir.F64, 4, 3, 3, 3)) {
		t.Errorf("conv2d_grad_filter type %s", got[0])
	}

	pdy := nnT(ir.F64, 2, 3, 2, 2)
	idx := nnT(ir.I64, 2, 3, 2, 2)
	nnInferErr(t, "max_pool2d_grad", nil, []string{"input_size"}, pdy, idx)
	nnInferErr(t, "max_pool2d_grad", is, []string{"indices", "i64"}, pdy, nnT(ir.I32, 2, 3, 2, 2))
	nnInferErr(t, "max_pool2d_grad", is, []string{"indices"}, pdy, nnT(ir.I64, 2, 3, 2, 3))
	nnInferErr(t, "max_pool2d_grad", is, []string{"rank 4"}, nnT(ir.F64, 3, 2, 2), idx)
	ak := ir.A("kernel_size", 2, "input_size", []int{4, 4})
	nnInferErr(t, "avg_pool2d_grad", ak, []string{"avg_pool2d's output"}, nnT(ir.F64, 2, 3, 3, 2))
	nnInferErr(t, "avg_pool2d_grad", ir.A("input_size", []int{4, 4}), []string{"kernel_size"}, pdy)
	nnInferErr(t, "avg_pool2d_grad", ir.A("kernel_size", 2), []string{"input_size"}, pdy)
	if got := nnInferOK(t, "avg_pool2d_grad", ir.A("kernel_size", 2), pdy, nnT(ir.F64, 2, 3, 4, 5)); !got[0].Equal(nnT(ir.F64, 2, 3, 4, 5)) {
		t.Errorf("avg_pool2d_grad type %s", got[0])
	}

	bx := nnT(ir.F32, 4, 3, 2)
	c3 := nnT(ir.F32, 3)
	nnInferErr(t, "batch_norm_grad", nil, []string{"shape of x"}, nnT(ir.F32, 4, 3, 3), bx, c3, c3, c3)
	nnInferErr(t, "batch_norm_grad", nil, []string{"saved_inv_std"}, bx, bx, c3, c3, nnT(ir.F32, 4))
	nnInferErr(t, "batch_norm_grad", nil, []string{"dtype"}, nnT(ir.F64, 4, 3, 2), bx, c3, c3, c3)
	nnInferErr(t, "batch_norm_grad", nil, []string{"rank >= 2"}, c3, c3, c3, c3, c3)
	nnInferErr(t, "layer_norm_grad", nil, []string{"scale"}, bx, bx, c3, nnT(ir.F32, 4, 3), nnT(ir.F32, 4, 3))
	nnInferErr(t, "layer_norm_grad", nil, []string{"mean"}, bx, bx, nnT(ir.F32, 2), nnT(ir.F32, 4), nnT(ir.F32, 4, 3))
	nnInferErr(t, "layer_norm_grad", ir.A("begin_norm_axis", 1), []string{"inv_std"}, bx, bx, nnT(ir.F32, 3, 2), nnT(ir.F32, 4), nnT(ir.F64, 4))
	nnInferErr(t, "softmax_grad", nil, []string{"shape and dtype"}, bx, nnT(ir.F32, 4, 3, 3))
	nnInferErr(t, "log_softmax_grad", ir.A("axis", 3), []string{"axis 3"}, bx, bx)
	nnInferErr(t, "cross_entropy_with_softmax_grad", nil, []string{"dloss"}, nnT(ir.F32, 4, 3), nnT(ir.I64, 4), nnT(ir.F32, 3))
	nnInferErr(t, "cross_entropy_with_softmax_grad", nil, []string{"labels"}, nnT(ir.F32, 4, 3), nnT(ir.I64, 3), nnT(ir.F32, 3))
}

func TestNNGradHelpersRunErrors(t *testing.T) {
	a := memory.New(memory.Options{})
	dy := nnFrom(t, host, tensor.F64, []float64{1, 2, 3, 4}, 1, 1, 2, 2)
	idx := nnFrom(t, host, tensor.I64, []float64{0, 3, 9, 1}, 1, 1, 2, 2)
	defer release(dy, idx)
	_, err := runOp(t, a, "max_pool2d_grad", ir.A("input_size", []int{3, 3}), dy, idx)
	if err == nil || !nnContains(err.Error(), "index 9", "[0 0 1 0]") {
		t.Errorf("max_pool2d_grad with a bad index: %v", err)
	}
	probs := nnFrom(t, host, tensor.F64, []float64{0.5, 0.5, 0.2, 0.8}, 2, 2)
	labels := nnFrom(t, host, tensor.I64, []float64{1, 2}, 2)
	dl := nnFrom(t, host, tensor.F64, []float64{1, 1}, 2)
	defer release(probs, labels, dl)
	_, err = runOp(t, a, "cross_entropy_with_softmax_grad", nil, probs, labels, dl)
	if err == nil || !nnContains(err.Error(), "label 2", "[1]") {
		t.Errorf("cross_entropy_with_softmax_grad with a bad label: %v", err)
	}
	wantAllocated(t, a, 0)
}

func nnContains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestNNGradHelpersF32 runs each helper op in f32 and f64 on the same
// values; the results agree to f32 precision, and do not depend on the
// thread count.
func TestNNGradHelpersF32(t *testing.T) {
	nnDebug(t)
	a := memory.New(memory.Options{})
	type opCase struct {
		name   string
		attrs  ir.Attrs
		shapes [][]int
		ints   map[int][]float64 // integer operands
	}
	cases := []opCase{
		{"max_pool2d_grad", ir.A("input_size", []int{3, 3}), [][]int{{2, 2, 2, 2}, {2, 2, 2, 2}}, map[int][]float64{1: {0, 1, 4, 8, 0, 0, 3, 3, 8, 7, 6, 5, 1, 2, 3, 4}}},
		{"avg_pool2d_grad", ir.A("kernel_size", 3, "strides", 2, "paddings", 1, "input_size", []int{5, 4}), [][]int{{2, 3, 3, 2}}, nil},
		{"batch_norm_grad", nil, [][]int{{4, 3, 5}, {4, 3, 5}, {3}, {3}, {3}}, nil},
		{"batch_norm_grad", ir.A("training", false), [][]int{{4, 3}, {4, 3}, {3}, {3}, {3}}, nil},
		{"layer_norm_grad", ir.A("begin_norm_axis", 1), [][]int{{4, 300}, {4, 300}, {300}, {4}, {4}}, nil},
		{"softmax_grad", ir.A("axis", 1), [][]int{{3, 4, 5}, {3, 4, 5}}, nil},
		{"log_softmax_grad", nil, [][]int{{3, 4}, {3, 4}}, nil},
		{"cross_entropy_with_softmax_grad", ir.A("axis", 0, "ignore_index", 2), [][]int{{4, 3}, {3}, {3}}, map[int][]float64{1: {0, 2, 3}}},
	}
	for _, tc := range cases {
		t.Run(tc.name+tc.attrs.String(), func(t *testing.T) {
			var results [][]float64
			for _, dt := range nnDTypes {
				var in []*tensor.Tensor
				rr := rand.New(rand.NewPCG(uint64(len(tc.shapes)), 1))
				for i, s := range tc.shapes {
					if v, ok := tc.ints[i]; ok {
						in = append(in, nnFrom(t, a, tensor.I64, v, s...))
						continue
					}
					x := randTensor(t, a, rr, dt, s...)
					if tc.name == "batch_norm_grad" && i == 4 || tc.name == "layer_norm_grad" && i == 4 {
						nnAbsPlus(x, 0.5)
					}
					in = append(in, x)
				}
				outs := nnRunThreads(t, a, 1, tc.name, tc.attrs, in...)
				outs2 := nnRunThreads(t, a, 3, tc.name, tc.attrs, in...)
				for i := range outs {
					nnSameBits(t, "threads", outs2[i], outs[i])
				}
				var flat []float64
				for _, o := range outs {
					flat = append(flat, nnVals(o)...)
				}
				results = append(results, flat)
				release(outs...)
				release(outs2...)
				release(in...)
			}
			nnClose(t, "f32 vs f64", results[0], results[1], 1e-4)
		})
	}
	wantAllocated(t, a, 0)
}

// nnAbsPlus sets each element v of the float tensor x to |v| + c.
func nnAbsPlus(x *tensor.Tensor, c float64) {
	switch x.DType() {
	case tensor.F32:
		for i, v := range x.F32() {
			x.F32()[i] = float32(math.Abs(float64(v)) + c)
		}
	case tensor.F64:
		for i, v := range x.F64() {
			x.F64()[i] = math.Abs(v) + c
		}
	}
}

func TestNNGradHelpersOOMSweep(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 13))
	a := memory.New(memory.Options{})
	mk := func(dt tensor.DType, s ...int) *tensor.Tensor { return randTensor(t, a, r, dt, s...) }
	dy := mk(tensor.F32, 3, 4, 5, 5)
	x := mk(tensor.F32, 3, 2, 5, 5)
	w := mk(tensor.F32, 4, 2, 3, 3)
	conv := ir.A("paddings", 1)
	checkOOMSweep(t, "conv2d_grad_input", conv.With("input_size", nnIntListAttr([]int{5, 5})), dy, w)
	checkOOMSweep(t, "conv2d_grad_input", conv, dy, w, x)
	checkOOMSweep(t, "conv2d_grad_filter", conv.With("filter_size", nnIntListAttr([]int{3, 3})), dy, x)
	checkOOMSweep(t, "conv2d_grad_filter", conv, dy, x, w)
	w1 := mk(tensor.F32, 4, 2, 1, 1)
	dy1 := mk(tensor.F32, 3, 4, 5, 5)
	checkOOMSweep(t, "conv2d_grad_input", nil, dy1, w1, x)
	checkOOMSweep(t, "conv2d_grad_filter", nil, dy1, x, w1)

	pdy := mk(tensor.F64, 2, 3, 2, 2)
	idx := nnFrom(t, a, tensor.I64, make([]float64, 24), 2, 3, 2, 2)
	checkOOMSweep(t, "max_pool2d_grad", ir.A("input_size", []int{4, 4}), pdy, idx)
	checkOOMSweep(t, "avg_pool2d_grad", ir.A("kernel_size", 2, "input_size", []int{4, 5}), pdy)

	bx, bdy, c3 := mk(tensor.F64, 4, 3, 2), mk(tensor.F64, 4, 3, 2), mk(tensor.F64, 3)
	checkOOMSweep(t, "batch_norm_grad", nil, bdy, bx, c3, c3, c3)
	l2, s4 := mk(tensor.F64, 2), mk(tensor.F64, 4)
	checkOOMSweep(t, "layer_norm_grad", ir.A("begin_norm_axis", 2), bdy, bx, l2, mk(tensor.F64, 4, 3), mk(tensor.F64, 4, 3))
	checkOOMSweep(t, "softmax_grad", nil, bdy, bx)
	checkOOMSweep(t, "log_softmax_grad", ir.A("axis", 0), bdy, bx)
	probs := mk(tensor.F64, 4, 3)
	labels := nnFrom(t, a, tensor.I64, []float64{0, 1, 2, 1}, 4)
	checkOOMSweep(t, "cross_entropy_with_softmax_grad", nil, probs, labels, s4)
}

// BenchmarkNNConv2DGrad runs conv2d_grad_input and conv2d_grad_filter
// (f32, GOMAXPROCS threads) on the shapes of BenchmarkNNConv2D; GFLOP/s
// counts 2 flops per multiply-add, as there.
func BenchmarkNNConv2DGrad(b *testing.B) {
	for _, tc := range []struct {
		name string
		c    nnConvCase
	}{
		{"lenet1_b64_1to6_k5p2_28", nnConvCase{64, 1, 28, 28, 6, 5, 5, [2]int{1, 1}, [2]int{2, 2}, [2]int{1, 1}, 1}},
		{"lenet2_b64_6to16_k5_14", nnConvCase{64, 6, 14, 14, 16, 5, 5, [2]int{1, 1}, [2]int{0, 0}, [2]int{1, 1}, 1}},
		{"resnet_b8_64to64_k3p1_56", nnConvCase{8, 64, 56, 56, 64, 3, 3, [2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1}, 1}},
	} {
		c := tc.c
		r := rand.New(rand.NewPCG(1, 2))
		a := memory.New(memory.Options{})
		oh := (c.h+2*c.p[0]-c.d[0]*(c.kh-1)-1)/c.s[0] + 1
		ow := (c.w+2*c.p[1]-c.d[1]*(c.kw-1)-1)/c.s[1] + 1
		x := randTensor(b, a, r, tensor.F32, c.n, c.c, c.h, c.w)
		w := randTensor(b, a, r, tensor.F32, c.o, c.c/c.g, c.kh, c.kw)
		dy := randTensor(b, a, r, tensor.F32, c.n, c.o, oh, ow)
		flops := 2 * float64(c.n*c.o*oh*ow) * float64(c.c/c.g*c.kh*c.kw)
		for _, op := range []struct {
			name  string
			attrs ir.Attrs
			in    []*tensor.Tensor
		}{
			{"conv2d_grad_input", c.attrs().With("input_size", nnIntListAttr([]int{c.h, c.w})), []*tensor.Tensor{dy, w}},
			{"conv2d_grad_filter", c.attrs().With("filter_size", nnIntListAttr([]int{c.kh, c.kw})), []*tensor.Tensor{dy, x}},
		} {
			b.Run(tc.name+"/"+op.name, func(b *testing.B) {
				k := bindFor(b, op.name, op.attrs, op.in...)
				ctx := &ops.Ctx{Alloc: a, Threads: nnBenchThreads()}
				for b.Loop() {
					outs, err := k(ctx, op.in)
					if err != nil {
						b.Fatal(err)
					}
					release(outs...)
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
		release(x, w, dy)
	}
}

// TestNNGradCatalog: every op of the family has a gradient rule; the
// helper ops of the backward have a rule that refuses (no second
// derivatives yet), so autodiff reports it rather than give zeros, but
// for the convolution helpers, which differentiate through each other
// (TestNNGradConv2DHelpersGrad).
func TestNNGradCatalog(t *testing.T) {
	for _, n := range []string{"matmul", "conv2d", "max_pool2d", "max_pool2d_values", "avg_pool2d", "max_pool", "avg_pool", "batch_norm", "layer_norm",
		"dropout", "softmax", "log_softmax", "cross_entropy_with_softmax", "binary_cross_entropy_with_logits",
		"conv2d_grad_input", "conv2d_grad_filter", "pad", "pad_grad", "resize", "resize_grad", "grid_sample"} {
		if d, ok := ops.Lookup(n); !ok || d.Grad == nil || d.NoGrad {
			t.Errorf("%s: want a Grad rule", n)
		}
	}
	for _, n := range []string{"max_pool2d_grad", "avg_pool2d_grad", "max_pool_grad", "avg_pool_grad", "grid_sample_grad",
		"batch_norm_grad", "layer_norm_grad", "softmax_grad", "log_softmax_grad", "cross_entropy_with_softmax_grad"} {
		d, ok := ops.Lookup(n)
		if !ok || d.Grad == nil || d.NoGrad || d.Bind == nil && d.Compute == nil {
			t.Errorf("%s: want a kernel and a refusing Grad rule", n)
			continue
		}
		b := ir.NewBuilder(ir.NewProgram())
		op := b.Generic(n, nil, nil, nil, 0)
		if _, err := d.Grad(ops.NewGradContext(b, op, nil, nil, nil)); err == nil || !strings.Contains(err.Error(), "second derivatives") {
			t.Errorf("%s: differentiating it gave %v, want a clear refusal", n, err)
		}
	}
}

// conv2d_grad_input and conv2d_grad_filter differentiate through each
// other (a transposed convolution trains; convolutions have second
// derivatives), with their sizes as attributes or read from an operand
// whose own gradient is 0.
func TestNNGradConv2DHelpersGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 13))
	for _, c := range []nnConvCase{
		{2, 3, 5, 6, 4, 3, 2, [2]int{2, 1}, [2]int{1, 0}, [2]int{1, 2}, 1},
		{1, 4, 6, 5, 6, 3, 3, [2]int{1, 2}, [2]int{2, 1}, [2]int{2, 1}, 2},
	} {
		t.Run(c.String(), func(t *testing.T) {
			oh := (c.h+2*c.p[0]-c.d[0]*(c.kh-1)-1)/c.s[0] + 1
			ow := (c.w+2*c.p[1]-c.d[1]*(c.kw-1)-1)/c.s[1] + 1
			x := f64Rand(t, r, -1, 1, c.n, c.c, c.h, c.w)
			w := f64Rand(t, r, -1, 1, c.o, c.c/c.g, c.kh, c.kw)
			dy := f64Rand(t, r, -1, 1, c.n, c.o, oh, ow)
			defer release(x, w, dy)
			checkOpGrad(t, "conv2d_grad_input", c.attrs().With("input_size", nnIntListAttr([]int{c.h, c.w})), dy, w)
			checkOpGrad(t, "conv2d_grad_filter", c.attrs().With("filter_size", nnIntListAttr([]int{c.kh, c.kw})), dy, x)
			checkOpGrad(t, "conv2d_grad_input", c.attrs(), dy, w, x)
			checkOpGrad(t, "conv2d_grad_filter", c.attrs(), dy, x, w)
			for _, mode := range []int{shpInIf, shpInLoop} {
				shpCheckGrad(t, mode, shpGradCase{name: "conv2d_grad_input", attrs: c.attrs(), in: []*tensor.Tensor{dy, w, x}, dyn: [][]int{{2}, nil, {3}}})
				shpCheckGrad(t, mode, shpGradCase{name: "conv2d_grad_filter", attrs: c.attrs(), in: []*tensor.Tensor{dy, x, w}, dyn: [][]int{{0}, {0}, {2}}})
			}
		})
	}
}
