package ops_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// nnRefBatchNorm returns y, running mean/var out, saved mean, saved inv std.
func nnRefBatchNorm(x []float64, shape []int, scale, bias, rm, rv []float64, eps, mom float64, training bool) [5][]float64 {
	n, c := shape[0], shape[1]
	inner := nnSize(shape[2:])
	cnt := float64(n * inner)
	mean, vr := make([]float64, c), make([]float64, c)
	if training {
		for ch := range c {
			for i := range n {
				for j := range inner {
					mean[ch] += x[(i*c+ch)*inner+j]
				}
			}
			if cnt > 0 {
				mean[ch] /= cnt
			}
			for i := range n {
				for j := range inner {
					d := x[(i*c+ch)*inner+j] - mean[ch]
					vr[ch] += d * d
				}
			}
			if cnt > 0 {
				vr[ch] /= cnt
			}
		}
	} else {
		copy(mean, rm)
		copy(vr, rv)
	}
	var r [5][]float64
	r[0] = make([]float64, len(x))
	for i := range n {
		for ch := range c {
			for j := range inner {
				k := (i*c+ch)*inner + j
				r[0][k] = (x[k]-mean[ch])/math.Sqrt(vr[ch]+eps)*scale[ch] + bias[ch]
			}
		}
	}
	r[1], r[2] = append([]float64(nil), rm...), append([]float64(nil), rv...)
	if training && cnt > 0 {
		for ch := range c {
			r[1][ch] = (1-mom)*rm[ch] + mom*mean[ch]
			r[2][ch] = (1-mom)*rv[ch] + mom*vr[ch]*cnt/(cnt-1)
		}
	}
	r[3] = mean
	r[4] = make([]float64, c)
	for ch := range c {
		r[4][ch] = 1 / math.Sqrt(vr[ch]+eps)
	}
	return r
}

func TestNNBatchNorm(t *testing.T) {
	nnDebug(t)
	r := rand.New(rand.NewPCG(11, 12))
	shapes := [][]int{{4, 3, 5, 6}, {7, 5}, {3, 2, 7}, {2, 1, 1, 1}, {1, 3, 2, 2}, {13, 7, 3, 1}, {0, 3, 4, 4}, {2, 0, 3, 3}, {64, 16, 14, 14}}
	for _, dt := range nnDTypes {
		for _, shape := range shapes {
			for _, training := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/%v/training=%v", dt, shape, training), func(t *testing.T) {
					a := memory.New(memory.Options{})
					c := shape[1]
					x := randTensor(t, a, r, dt, shape...)
					scale, bias := randTensor(t, a, r, dt, c), randTensor(t, a, r, dt, c)
					rm, rv := randTensor(t, a, r, dt, c), randTensor(t, a, r, dt, c)
					for i := range c { // a variance is positive
						nnSetAt(rv, i, math.Abs(rv.Float64At(i))+0.1)
					}
					in := []*tensor.Tensor{x, scale, bias, rm, rv}
					before := make([][]float64, 5)
					for i, t := range in {
						before[i] = nnVals(t)
					}
					eps, mom := 1e-3, 0.25
					attrs := ir.A("epsilon", eps, "momentum", mom, "training", training)
					want := nnRefBatchNorm(before[0], shape, before[1], before[2], before[3], before[4], eps, mom, training)
					outs := mustRun(t, a, "batch_norm", attrs, in...)
					closeEnough(t, "y", outs[0], want[0], shape, nnTol(dt))
					for i := 1; i < 5; i++ {
						closeEnough(t, fmt.Sprintf("result %d", i), outs[i], want[i], []int{c}, nnTol(dt))
					}
					for i, t2 := range in {
						nnClose(t, fmt.Sprintf("operand %d after the op", i), nnVals(t2), before[i], 0)
					}
					// eval shares the running stats; training makes fresh ones
					shares := outs[1].Storage() == rm.Storage() && outs[2].Storage() == rv.Storage() && outs[3].Storage() == rm.Storage()
					if shares != !training {
						t.Fatalf("training=%v: results share the running stats: %v", training, shares)
					}
					for _, th := range []int{1, 3} {
						o := nnRunThreads(t, a, th, "batch_norm", attrs, in...)
						for i := range o {
							nnSameBits(t, fmt.Sprintf("result %d with %d threads", i, th), o[i], outs[i])
						}
						release(o...)
					}
					release(outs...)
					release(in...)
					wantAllocated(t, a, 0)
				})
			}
		}
	}
}

// nnSetAt sets element i of a float tensor.
func nnSetAt(x *tensor.Tensor, i int, v float64) {
	if x.DType() == tensor.F32 {
		x.F32()[i] = float32(v)
	} else {
		x.F64()[i] = v
	}
}

func TestNNBatchNormOneValuePerChannel(t *testing.T) {
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(1, 1))
	x := randTensor(t, a, r, tensor.F32, 1, 3, 1, 1)
	p := []*tensor.Tensor{randTensor(t, a, r, tensor.F32, 3), randTensor(t, a, r, tensor.F32, 3), randTensor(t, a, r, tensor.F32, 3), randTensor(t, a, r, tensor.F32, 3)}
	in := append([]*tensor.Tensor{x}, p...)
	_, err := runOp(t, a, "batch_norm", nil, in...)
	if err == nil || !strings.Contains(err.Error(), "more than 1 value per channel") || !strings.Contains(err.Error(), "tensor<1x3x1x1xf32>") {
		t.Fatalf("error %v", err)
	}
	outs := mustRun(t, a, "batch_norm", ir.A("training", false), in...)
	release(outs...)
	release(in...)
	wantAllocated(t, a, 0)
}

func TestNNBatchNormInfer(t *testing.T) {
	c := nnT(ir.F32, 3)
	got := nnInferOK(t, "batch_norm", nil, nnT(ir.F32, -1, 3, 8, 8), c, c, c, c)
	want := []string{"tensor<?x3x8x8xf32>", "tensor<3xf32>", "tensor<3xf32>", "tensor<3xf32>", "tensor<3xf32>"}
	for i := range want {
		if got[i].String() != want[i] {
			t.Fatalf("result %d: %s, want %s", i, got[i], want[i])
		}
	}
	got = nnInferOK(t, "batch_norm", ir.A("training", false), nnT(ir.F64, 4, -1), nnT(ir.F64, 5), nnT(ir.F64, -1), nnT(ir.F64, 5), nnT(ir.F64, 5))
	if got[1].String() != "tensor<5xf64>" {
		t.Fatalf("stats type %s", got[1])
	}
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F32, 2, 3, 4, 4)
	s := ops.Parameter(b, "s", ir.F32, 3)
	y, m, v, sm, si := ops.BatchNorm(b, x, s, s, s, s, 1e-5, 0.1, true)
	if err := b.Err(); err != nil || y.Type().String() != "tensor<2x3x4x4xf32>" || m == v || sm == si {
		t.Fatalf("builder: %v %s", err, y.Type())
	}

	x4 := nnT(ir.F32, 2, 3, 4, 4)
	nnInferErr(t, "batch_norm", nil, []string{"scale", "tensor<4xf32>", "tensor<2x3x4x4xf32>"}, x4, nnT(ir.F32, 4), c, c, c)
	nnInferErr(t, "batch_norm", nil, []string{"running_var", "tensor<3x1xf32>"}, x4, c, c, c, nnT(ir.F32, 3, 1))
	nnInferErr(t, "batch_norm", nil, []string{"bias", "tensor<3xf64>", "dtype"}, x4, c, nnT(ir.F64, 3), c, c)
	nnInferErr(t, "batch_norm", nil, []string{"tensor<3xf32>", "rank >= 2"}, c, c, c, c, c)
	nnInferErr(t, "batch_norm", nil, []string{"tensor<2x3xi32>", "f32 or f64"}, nnT(ir.I32, 2, 3), c, c, c, c)
	nnInferErr(t, "batch_norm", ir.A("epsilon", -1.0), []string{"epsilon"}, x4, c, c, c, c)
	nnInferErr(t, "batch_norm", ir.A("training", 1), []string{"training"}, x4, c, c, c, c)
	nnInferErr(t, "batch_norm", nil, []string{"5 operands"}, x4, c, c, c)
}

func TestNNBatchNormOOMSweep(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	a := memory.New(memory.Options{})
	x := randTensor(t, a, r, tensor.F32, 4, 3, 3, 3)
	p := []*tensor.Tensor{randTensor(t, a, r, tensor.F32, 3), randTensor(t, a, r, tensor.F32, 3), randTensor(t, a, r, tensor.F32, 3), randTensor(t, a, r, tensor.F32, 3)}
	in := append([]*tensor.Tensor{x}, p...)
	checkOOMSweep(t, "batch_norm", nil, in...)
	checkOOMSweep(t, "batch_norm", ir.A("training", false), in...)
	release(in...)
}

// nnRefLayerNorm normalises rows×cols.
func nnRefLayerNorm(x, scale, bias []float64, rows, cols int, eps float64) (y, mean, inv []float64) {
	y = make([]float64, len(x))
	for r := range rows {
		var m, v float64
		for j := range cols {
			m += x[r*cols+j]
		}
		if cols > 0 {
			m /= float64(cols)
		}
		for j := range cols {
			d := x[r*cols+j] - m
			v += d * d
		}
		if cols > 0 {
			v /= float64(cols)
		}
		is := 1 / math.Sqrt(v+eps)
		for j := range cols {
			y[r*cols+j] = (x[r*cols+j]-m)*is*scale[j] + bias[j]
		}
		mean, inv = append(mean, m), append(inv, is)
	}
	return y, mean, inv
}

func TestNNLayerNorm(t *testing.T) {
	nnDebug(t)
	r := rand.New(rand.NewPCG(13, 14))
	cases := []struct {
		shape []int
		begin int
	}{
		{[]int{4, 7}, -1}, {[]int{4, 7}, 1}, {[]int{2, 3, 5}, 1}, {[]int{2, 3, 5}, 0}, {[]int{2, 3, 4, 3}, -2},
		{[]int{7}, 0}, {[]int{1, 1}, -1}, {[]int{0, 5}, 1}, {[]int{3, 0}, 1}, {[]int{13, 11}, -1}, {[]int{512, 256}, -1},
	}
	for _, dt := range nnDTypes {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/%v/%d", dt, tc.shape, tc.begin), func(t *testing.T) {
				a := memory.New(memory.Options{})
				b := tc.begin
				if b < 0 {
					b += len(tc.shape)
				}
				x := randTensor(t, a, r, dt, tc.shape...)
				scale := randTensor(t, a, r, dt, tc.shape[b:]...)
				bias := randTensor(t, a, r, dt, tc.shape[b:]...)
				rows, cols := nnSize(tc.shape[:b]), nnSize(tc.shape[b:])
				y, m, is := nnRefLayerNorm(nnVals(x), nnVals(scale), nnVals(bias), rows, cols, 1e-4)
				attrs := ir.A("epsilon", 1e-4, "begin_norm_axis", tc.begin)
				outs := mustRun(t, a, "layer_norm", attrs, x, scale, bias)
				closeEnough(t, "y", outs[0], y, tc.shape, nnTol(dt))
				closeEnough(t, "mean", outs[1], m, tc.shape[:b], nnTol(dt))
				closeEnough(t, "inv_std", outs[2], is, tc.shape[:b], nnTol(dt))
				for _, th := range []int{1, 3} {
					o := nnRunThreads(t, a, th, "layer_norm", attrs, x, scale, bias)
					for i := range o {
						nnSameBits(t, fmt.Sprintf("result %d with %d threads", i, th), o[i], outs[i])
					}
					release(o...)
				}
				release(outs...)
				release(x, scale, bias)
				wantAllocated(t, a, 0)
			})
		}
	}
}

func TestNNLayerNormInfer(t *testing.T) {
	got := nnInferOK(t, "layer_norm", nil, nnT(ir.F32, -1, 10, 16), nnT(ir.F32, 16), nnT(ir.F32, 16))
	if got[0].String() != "tensor<?x10x16xf32>" || got[1].String() != "tensor<?x10xf32>" || got[2].String() != "tensor<?x10xf32>" {
		t.Fatalf("types %v", got)
	}
	got = nnInferOK(t, "layer_norm", ir.A("begin_norm_axis", 1), nnT(ir.F64, 4, 10, 16), nnT(ir.F64, 10, -1), nnT(ir.F64, 10, 16))
	if got[1].String() != "tensor<4xf64>" {
		t.Fatalf("types %v", got)
	}
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F32, 2, 8)
	s := ops.Parameter(b, "s", ir.F32, 8)
	y, m, is := ops.LayerNorm(b, x, s, s, 1e-5, -1)
	if err := b.Err(); err != nil || y.Type().String() != "tensor<2x8xf32>" || m.Type().String() != "tensor<2xf32>" || is == m {
		t.Fatalf("builder: %v", err)
	}
	x3 := nnT(ir.F32, 2, 3, 4)
	nnInferErr(t, "layer_norm", nil, []string{"scale", "tensor<3xf32>", "[4]", "tensor<2x3x4xf32>"}, x3, nnT(ir.F32, 3), nnT(ir.F32, 4))
	nnInferErr(t, "layer_norm", ir.A("begin_norm_axis", 1), []string{"bias", "tensor<12xf32>", "[3 4]"}, x3, nnT(ir.F32, 3, 4), nnT(ir.F32, 12))
	nnInferErr(t, "layer_norm", ir.A("begin_norm_axis", 3), []string{"begin_norm_axis 3", "tensor<2x3x4xf32>"}, x3, nnT(ir.F32, 4), nnT(ir.F32, 4))
	nnInferErr(t, "layer_norm", nil, []string{"tensor<f32>"}, nnT(ir.F32), nnT(ir.F32), nnT(ir.F32))
	nnInferErr(t, "layer_norm", nil, []string{"scale", "tensor<4xf64>", "dtype"}, x3, nnT(ir.F64, 4), nnT(ir.F32, 4))
	nnInferErr(t, "layer_norm", nil, []string{"tensor<2x3x4xi32>", "f32 or f64"}, nnT(ir.I32, 2, 3, 4), nnT(ir.I32, 4), nnT(ir.I32, 4))
}

func TestNNLayerNormOOMSweep(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	a := memory.New(memory.Options{})
	x := randTensor(t, a, r, tensor.F32, 4, 6)
	s, b := randTensor(t, a, r, tensor.F32, 6), randTensor(t, a, r, tensor.F32, 6)
	checkOOMSweep(t, "layer_norm", nil, x, s, b)
	release(x, s, b)
}
