package ops_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// nnRefMatmul is numpy.matmul with transposes, written naively.
func nnRefMatmul(x []float64, xs []int, y []float64, ys []int, tx, ty bool) ([]float64, []int) {
	xVec, yVec := len(xs) == 1, len(ys) == 1
	if xVec {
		xs, tx = []int{1, xs[0]}, false
	}
	if yVec {
		ys, ty = []int{ys[0], 1}, false
	}
	xr, xc := xs[len(xs)-2], xs[len(xs)-1]
	yr, yc := ys[len(ys)-2], ys[len(ys)-1]
	m, k, n := xr, xc, yc
	if tx {
		m, k = xc, xr
	}
	if ty {
		n = yr
	}
	xb, yb := xs[:len(xs)-2], ys[:len(ys)-2]
	rank := max(len(xb), len(yb))
	batch := make([]int, rank)
	for i := range rank {
		a, b := 1, 1
		if j := i - (rank - len(xb)); j >= 0 {
			a = xb[j]
		}
		if j := i - (rank - len(yb)); j >= 0 {
			b = yb[j]
		}
		batch[i] = max(a, b)
		if a == 0 || b == 0 {
			batch[i] = 0
		}
	}
	// flat batch offset of operand with batch dims ob for out batch index idx
	boff := func(ob []int, idx []int) int {
		off := 0
		for j, d := range ob {
			i := idx[j+rank-len(ob)]
			if d == 1 {
				i = 0
			}
			off = off*d + i
		}
		return off
	}
	nb := nnSize(batch)
	out := make([]float64, nb*m*n)
	idx := make([]int, rank)
	for b := range nb {
		rem := b
		for d := rank - 1; d >= 0; d-- {
			idx[d] = rem % batch[d]
			rem /= batch[d]
		}
		xo, yo := boff(xb, idx)*xr*xc, boff(yb, idx)*yr*yc
		for i := range m {
			for j := range n {
				var s float64
				for kk := range k {
					var a, bv float64
					if tx {
						a = x[xo+kk*xc+i]
					} else {
						a = x[xo+i*xc+kk]
					}
					if ty {
						bv = y[yo+j*yc+kk]
					} else {
						bv = y[yo+kk*yc+j]
					}
					s += a * bv
				}
				out[b*m*n+i*n+j] = s
			}
		}
	}
	shape := append([]int(nil), batch...)
	if !xVec {
		shape = append(shape, m)
	}
	if !yVec {
		shape = append(shape, n)
	}
	return out, shape
}

type nnMatmulCase struct {
	xs, ys []int
	tx, ty bool
}

func (c nnMatmulCase) String() string { return fmt.Sprintf("%v%v·%v%v", c.xs, c.tx, c.ys, c.ty) }

var nnMatmulCases = []nnMatmulCase{
	{[]int{3, 4}, []int{4, 5}, false, false},
	{[]int{4}, []int{4}, false, false},
	{[]int{4}, []int{4, 5}, false, false},
	{[]int{3, 4}, []int{4}, false, false},
	{[]int{4}, []int{5, 4}, true, true}, // flags don't apply to the 1-D x
	{[]int{2, 3, 4}, []int{4, 5}, false, false},
	{[]int{2, 3, 4}, []int{5, 4}, false, true},
	{[]int{2, 4, 3}, []int{4, 5}, true, false},
	{[]int{2, 3, 4}, []int{2, 4, 5}, false, false},
	{[]int{1, 3, 4}, []int{5, 4, 5}, false, false},
	{[]int{3, 4}, []int{2, 3, 4, 5}, false, false},
	{[]int{2, 1, 3, 4}, []int{5, 4, 2}, false, false},
	{[]int{2, 3, 4}, []int{4}, false, false},
	{[]int{4}, []int{2, 4, 3}, false, false},
	{[]int{0, 3}, []int{3, 4}, false, false},
	{[]int{3, 0}, []int{0, 4}, false, false},
	{[]int{2, 0, 3, 4}, []int{4, 5}, false, false},
	{[]int{1, 1}, []int{1, 1}, false, false},
	{[]int{7, 13}, []int{11, 13}, false, true},
	{[]int{13, 7}, []int{13, 11}, true, false},
	{[]int{67, 131}, []int{131, 70}, false, false},
	{[]int{131, 67}, []int{70, 131}, true, true},
	{[]int{64, 8, 9}, []int{64, 9, 7}, false, false},
	{[]int{5, 64, 8, 9}, []int{64, 7, 8}, true, true},
}

// nnRandMatmulCase draws compatible shapes with broadcast batch dims.
func nnRandMatmulCase(r *rand.Rand) nnMatmulCase {
	dims := []int{0, 1, 2, 3, 5, 7}
	m, n, k := dims[r.IntN(6)], dims[r.IntN(6)], dims[r.IntN(6)]
	batch := nnRandDims(r, r.IntN(3), 1, 2, 3)
	side := func(rows, cols int, vec bool) ([]int, bool) {
		if vec {
			return []int{cols}, false
		}
		b := append([]int(nil), batch[r.IntN(len(batch)+1):]...)
		for i := range b {
			if r.IntN(3) == 0 {
				b[i] = 1
			}
		}
		tr := r.IntN(2) == 0
		if tr {
			return append(b, cols, rows), true
		}
		return append(b, rows, cols), false
	}
	c := nnMatmulCase{}
	c.xs, c.tx = side(m, k, r.IntN(6) == 0)
	c.ys, c.ty = side(k, n, r.IntN(6) == 0)
	if len(c.ys) == 1 {
		c.ys = []int{k}
	}
	return c
}

func TestNNMatmul(t *testing.T) {
	nnDebug(t)
	r := rand.New(rand.NewPCG(1, 2))
	cases := append([]nnMatmulCase(nil), nnMatmulCases...)
	for range 60 {
		cases = append(cases, nnRandMatmulCase(r))
	}
	for _, dt := range nnDTypes {
		for _, tc := range cases {
			t.Run(dt.String()+"/"+tc.String(), func(t *testing.T) {
				a := memory.New(memory.Options{})
				x := randTensor(t, a, r, dt, tc.xs...)
				y := randTensor(t, a, r, dt, tc.ys...)
				want, shape := nnRefMatmul(nnVals(x), tc.xs, nnVals(y), tc.ys, tc.tx, tc.ty)
				attrs := ir.A("transpose_x", tc.tx, "transpose_y", tc.ty)
				out := mustRun(t, a, "matmul", attrs, x, y)
				closeEnough(t, "matmul", out[0], want, shape, nnTol(dt))
				for _, th := range []int{1, 3} {
					o := nnRunThreads(t, a, th, "matmul", attrs, x, y)
					nnSameBits(t, fmt.Sprintf("matmul with %d threads", th), o[0], out[0])
					release(o...)
				}
				release(out...)
				release(x, y)
				wantAllocated(t, a, 0)
			})
		}
	}
}

func TestNNMatmulDefaultsAndBuilder(t *testing.T) {
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F32, -1, 3, 4)
	y := ops.Data(b, "y", ir.F32, 5, 4)
	z := ops.Matmul(b, x, y, false, true)
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	if got := z.Type().String(); got != "tensor<?x3x5xf32>" {
		t.Fatalf("type %s", got)
	}
	// no attributes at all: both flags default to false
	got := nnInferOK(t, "matmul", nil, nnT(ir.F64, 2, 3), nnT(ir.F64, 3, -1))
	if got[0].String() != "tensor<2x?xf64>" {
		t.Fatalf("type %s", got[0])
	}
	got = nnInferOK(t, "matmul", nil, nnT(ir.F64, -1, 2, 3), nnT(ir.F64, 4, 1, -1, 6))
	if got[0].String() != "tensor<4x?x2x6xf64>" {
		t.Fatalf("type %s", got[0])
	}
}

func TestNNMatmulInferErrors(t *testing.T) {
	nnInferErr(t, "matmul", nil, []string{"tensor<2x3xf32>", "tensor<4x5xf32>", "3 and 4"}, nnT(ir.F32, 2, 3), nnT(ir.F32, 4, 5))
	nnInferErr(t, "matmul", ir.A("transpose_x", true), []string{"tensor<2x3xf32>", "transpose_x=true"}, nnT(ir.F32, 2, 3), nnT(ir.F32, 3, 5))
	nnInferErr(t, "matmul", nil, []string{"tensor<2x2x3xf32>", "tensor<3x3x5xf32>", "[2]", "[3]"}, nnT(ir.F32, 2, 2, 3), nnT(ir.F32, 3, 3, 5))
	nnInferErr(t, "matmul", nil, []string{"tensor<f32>", "rank >= 1"}, nnT(ir.F32), nnT(ir.F32, 3))
	nnInferErr(t, "matmul", nil, []string{"tensor<2x3xf64>", "tensor<2x3xf32>"}, nnT(ir.F32, 2, 3), nnT(ir.F64, 2, 3))
	nnInferErr(t, "matmul", nil, []string{"tensor<2x3xi32>", "f32 or f64"}, nnT(ir.I32, 2, 3), nnT(ir.I32, 3, 2))
	nnInferErr(t, "matmul", ir.A("transpose_x", 1), []string{"transpose_x"}, nnT(ir.F32, 2, 3), nnT(ir.F32, 3, 2))
	nnInferErr(t, "matmul", nil, []string{"2 operands"}, nnT(ir.F32, 2, 3))
}

// A dynamic dim that turns out wrong at run time is a kernel error.
func TestNNMatmulRunTimeMismatch(t *testing.T) {
	a := memory.New(memory.Options{})
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F32, 2, -1)
	y := ops.Data(b, "y", ir.F32, 3, 4)
	op := b.Op("matmul", nil, x, y)
	k, err := ops.Bind(op)
	if err != nil {
		t.Fatal(err)
	}
	xt := randTensor(t, a, rand.New(rand.NewPCG(1, 1)), tensor.F32, 2, 5)
	yt := randTensor(t, a, rand.New(rand.NewPCG(1, 1)), tensor.F32, 3, 4)
	_, err = k(&ops.Ctx{Alloc: a, Threads: 2}, []*tensor.Tensor{xt, yt})
	if err == nil || !strings.Contains(err.Error(), "tensor<2x5xf32>") || !strings.Contains(err.Error(), "tensor<3x4xf32>") {
		t.Fatalf("error %v", err)
	}
	release(xt, yt)
	wantAllocated(t, a, 0)
}

func TestNNMatmulOOMSweep(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	a := memory.New(memory.Options{})
	x := randTensor(t, a, r, tensor.F32, 2, 3, 4)
	y := randTensor(t, a, r, tensor.F32, 4, 5)
	checkOOMSweep(t, "matmul", nil, x, y)
	release(x, y)
}

// BenchmarkNNMatmul runs matmul at the MLP shapes of MNIST (784→256→10,
// batch 64): the forward products and the weight-gradient product.
func BenchmarkNNMatmul(b *testing.B) {
	for _, tc := range []struct {
		name    string
		xs, ys  []int
		tx, ty  bool
		m, n, k int
	}{
		{"fc1_64x784x256", []int{64, 784}, []int{784, 256}, false, false, 64, 256, 784},
		{"fc2_64x256x10", []int{64, 256}, []int{256, 10}, false, false, 64, 10, 256},
		{"fc1_grad_w_784x64x256", []int{64, 784}, []int{64, 256}, true, false, 784, 256, 64},
		{"fc1_grad_x_64x256x784", []int{64, 256}, []int{784, 256}, false, true, 64, 784, 256},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			a := memory.New(memory.Options{})
			x := randTensor(b, a, r, tensor.F32, tc.xs...)
			y := randTensor(b, a, r, tensor.F32, tc.ys...)
			k := bindFor(b, "matmul", ir.A("transpose_x", tc.tx, "transpose_y", tc.ty), x, y)
			c := &ops.Ctx{Alloc: a, Threads: nnBenchThreads()}
			for b.Loop() {
				outs, err := k(c, []*tensor.Tensor{x, y})
				if err != nil {
					b.Fatal(err)
				}
				release(outs...)
			}
			b.ReportMetric(2*float64(tc.m*tc.n*tc.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
