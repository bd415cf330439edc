package ops_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// TestBatchNormSiluMatchesUnfused: batch_norm_silu gives the bits of
// batch_norm (training) then silu, its saved statistics rounded to x's
// dtype are batch_norm's, and batch_norm_silu_grad gives the bits of
// silu_grad then batch_norm_grad, for any thread count; rows of lengths
// that are and are not multiples of the vector widths and of the fused
// loops' chunks, and empty batches.
func TestBatchNormSiluMatchesUnfused(t *testing.T) {
	nnDebug(t)
	r := rand.New(rand.NewPCG(21, 22))
	shapes := [][]int{{4, 3, 5, 6}, {7, 5}, {3, 2, 17, 19}, {2, 4, 300}, {2, 3, 32, 32}, {2, 1, 1, 1}, {0, 3, 4, 4}, {2, 0, 3, 3}}
	for _, dt := range nnDTypes {
		for _, shape := range shapes {
			t.Run(fmt.Sprintf("%s/%v", dt, shape), func(t *testing.T) {
				a := memory.New(memory.Options{})
				c := shape[1]
				x := randTensor(t, a, r, dt, shape...)
				scale, bias := randTensor(t, a, r, dt, c), randTensor(t, a, r, dt, c)
				rm, rv := randTensor(t, a, r, dt, c), randTensor(t, a, r, dt, c)
				nnAbsPlus(rv, 0.1)
				dz := randTensor(t, a, r, dt, shape...)
				in := []*tensor.Tensor{x, scale, bias, rm, rv}
				attrs := ir.A("epsilon", 1e-3, "momentum", 0.25)
				for _, th := range []int{1, 3} {
					bn := nnRunThreads(t, a, th, "batch_norm", attrs.With("training", ir.Bool(true)), in...)
					z := nnRunThreads(t, a, th, "silu", nil, bn[0])
					g := nnRunThreads(t, a, th, "silu_grad", nil, bn[0], dz)
					grads := nnRunThreads(t, a, th, "batch_norm_grad", nil, g[0], x, scale, bn[3], bn[4])

					f := nnRunThreads(t, a, th, "batch_norm_silu", attrs, in...)
					nnSameBits(t, fmt.Sprintf("z, %d threads", th), f[0], z[0])
					for i := 1; i < 3; i++ {
						nnSameBits(t, fmt.Sprintf("result %d, %d threads", i, th), f[i], bn[i])
					}
					for i := 3; i < 5; i++ {
						if f[i].DType() != tensor.F64 {
							t.Fatalf("result %d is %v, want float64", i, f[i])
						}
						rounded := nnFrom(t, a, dt, nnVals(f[i]), c)
						nnSameBits(t, fmt.Sprintf("result %d rounded, %d threads", i, th), rounded, bn[i])
						release(rounded)
					}
					fg := nnRunThreads(t, a, th, "batch_norm_silu_grad", nil, dz, x, scale, bias, f[3], f[4])
					for i, name := range []string{"dx", "dscale", "dbias"} {
						nnSameBits(t, fmt.Sprintf("%s, %d threads", name, th), fg[i], grads[i])
					}
					release(bn...)
					release(z...)
					release(g...)
					release(grads...)
					release(f...)
					release(fg...)
				}
				release(in...)
				release(dz)
				wantAllocated(t, a, 0)
			})
		}
	}
}

func TestBatchNormSiluGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	attrs := ir.A("epsilon", 1e-3, "momentum", 0.2)
	for _, shape := range [][]int{{4, 3}, {2, 3, 4}, {3, 2, 3, 2}} {
		t.Run(fmt.Sprint(shape), func(t *testing.T) {
			c := shape[1]
			in := nnRandInputs(t, r, shape, []int{c}, []int{c}, []int{c}, []int{c})
			nnAbsPlus(in[4], 0.5)
			for _, dynamic := range []bool{false, true} {
				nnCheckGrad(t, 1e-5, dynamic, in, []int{0, 1, 2}, nnOpOut("batch_norm_silu", attrs, 0))
			}
		})
	}
}

func TestBatchNormSiluOneValuePerChannel(t *testing.T) {
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(1, 2))
	in := []*tensor.Tensor{randTensor(t, a, r, tensor.F32, 1, 3, 1, 1)}
	for range 4 {
		in = append(in, randTensor(t, a, r, tensor.F32, 3))
	}
	_, err := runOp(t, a, "batch_norm_silu", nil, in...)
	if err == nil || !strings.Contains(err.Error(), "more than 1 value per channel") {
		t.Fatalf("error %v", err)
	}
	release(in...)
	wantAllocated(t, a, 0)
}

func TestBatchNormSiluInfer(t *testing.T) {
	c, c64 := nnT(ir.F32, 3), nnT(ir.F64, 3)
	got := nnInferOK(t, "batch_norm_silu", nil, nnT(ir.F32, -1, 3, 8, 8), c, c, c, c)
	want := []string{"tensor<?x3x8x8xf32>", "tensor<3xf32>", "tensor<3xf32>", "tensor<3xf64>", "tensor<3xf64>"}
	for i := range want {
		if got[i].String() != want[i] {
			t.Fatalf("result %d: %s, want %s", i, got[i], want[i])
		}
	}
	got = nnInferOK(t, "batch_norm_silu_grad", nil, nnT(ir.F32, 2, 3, 4), nnT(ir.F32, 2, -1, 4), c, c, c64, nnT(ir.F64, -1))
	if got[0].String() != "tensor<2x?x4xf32>" || got[1].String() != "tensor<3xf32>" {
		t.Fatalf("batch_norm_silu_grad: %v", got)
	}

	x4 := nnT(ir.F32, 2, 3, 4, 4)
	nnInferErr(t, "batch_norm_silu", ir.A("training", false), []string{"training:false", "batch_norm and silu"}, x4, c, c, c, c)
	nnInferErr(t, "batch_norm_silu", ir.A("sync", true), []string{"sync:true"}, x4, c, c, c, c)
	nnInferErr(t, "batch_norm_silu", ir.A("epsilon", -1.0), []string{"epsilon"}, x4, c, c, c, c)
	nnInferErr(t, "batch_norm_silu", nil, []string{"scale", "tensor<4xf32>", "tensor<2x3x4x4xf32>"}, x4, nnT(ir.F32, 4), c, c, c)
	nnInferErr(t, "batch_norm_silu", nil, []string{"bias", "tensor<3xf64>", "dtype"}, x4, c, c64, c, c)
	nnInferErr(t, "batch_norm_silu", nil, []string{"rank >= 2"}, c, c, c, c, c)
	nnInferErr(t, "batch_norm_silu", nil, []string{"tensor<2x3xi32>", "f32 or f64"}, nnT(ir.I32, 2, 3), c, c, c, c)
	nnInferErr(t, "batch_norm_silu", nil, []string{"5 operands"}, x4, c, c, c)

	nnInferErr(t, "batch_norm_silu_grad", nil, []string{"dz", "type of x"}, nnT(ir.F32, 2, 3, 4, 5), x4, c, c, c64, c64)
	nnInferErr(t, "batch_norm_silu_grad", nil, []string{"dz", "type of x"}, nnT(ir.F64, 2, 3, 4, 4), x4, c, c, c64, c64)
	nnInferErr(t, "batch_norm_silu_grad", nil, []string{"saved_mean", "f64"}, x4, x4, c, c, c, c64)
	nnInferErr(t, "batch_norm_silu_grad", nil, []string{"bias", "tensor<4xf32>"}, x4, x4, c, nnT(ir.F32, 4), c64, c64)
	nnInferErr(t, "batch_norm_silu_grad", nil, []string{"scale", "f32"}, x4, x4, c64, c, c64, c64)
	nnInferErr(t, "batch_norm_silu_grad", nil, []string{"rank >= 2"}, c, c, c, c, c64, c64)
	nnInferErr(t, "batch_norm_silu_grad", nil, []string{"6 operands"}, x4, x4, c, c, c64)
}

func TestBatchNormSiluOOMSweep(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	a := memory.New(memory.Options{})
	x := randTensor(t, a, r, tensor.F32, 4, 3, 3, 3)
	dz := randTensor(t, a, r, tensor.F32, 4, 3, 3, 3)
	p := []*tensor.Tensor{randTensor(t, a, r, tensor.F32, 3), randTensor(t, a, r, tensor.F32, 3), randTensor(t, a, r, tensor.F32, 3), randTensor(t, a, r, tensor.F32, 3)}
	in := append([]*tensor.Tensor{x}, p...)
	checkOOMSweep(t, "batch_norm_silu", nil, in...)
	m, s := nnFrom(t, a, tensor.F64, []float64{0.1, -0.2, 0.3}, 3), nnFrom(t, a, tensor.F64, []float64{1, 2, math.Pi}, 3)
	checkOOMSweep(t, "batch_norm_silu_grad", nil, dz, x, p[0], p[1], m, s)
	release(in...)
	release(dz, m, s)
	wantAllocated(t, a, 0)
}

// BenchmarkBatchNormSilu runs a training step's batch norm and SiLU on
// layers of ppyoloe_s at batch 8, forward and backward, as the separate
// ops (batch_norm, silu; silu_grad, batch_norm_grad) and fused
// (batch_norm_silu; batch_norm_silu_grad), GOMAXPROCS threads; cpu-ns/op
// is the process's CPU time, the steadier figure on a loaded machine.
func BenchmarkBatchNormSilu(b *testing.B) {
	for _, shape := range [][]int{{8, 32, 160, 160}, {8, 48, 80, 80}, {8, 96, 40, 40}, {8, 192, 20, 20}} {
		r := rand.New(rand.NewPCG(1, 2))
		a := memory.New(memory.Options{})
		c := shape[1]
		x, dz := randTensor(b, a, r, tensor.F32, shape...), randTensor(b, a, r, tensor.F32, shape...)
		in := []*tensor.Tensor{x}
		for range 4 {
			p := randTensor(b, a, r, tensor.F32, c)
			nnAbsPlus(p, 0.5)
			in = append(in, p)
		}
		ctx := &ops.Ctx{Alloc: a, Threads: nnBenchThreads()}
		run := func(b *testing.B, k ops.Kernel, in ...*tensor.Tensor) []*tensor.Tensor {
			outs, err := k(ctx, in)
			if err != nil {
				b.Fatal(err)
			}
			return outs
		}
		attrs := ir.A("epsilon", 1e-5, "momentum", 0.1)
		b.Run(fmt.Sprintf("%v/separate", shape), func(b *testing.B) {
			bn := bindFor(b, "batch_norm", attrs.With("training", ir.Bool(true)), in...)
			y := run(b, bn, in...)
			silu, siluGrad := bindFor(b, "silu", nil, y[0]), bindFor(b, "silu_grad", nil, y[0], dz)
			g := run(b, siluGrad, y[0], dz)
			bnGrad := bindFor(b, "batch_norm_grad", nil, g[0], x, in[1], y[3], y[4])
			release(y...)
			release(g...)
			cpu0 := nnCPUTime()
			for b.Loop() {
				y := run(b, bn, in...)
				z := run(b, silu, y[0])
				g := run(b, siluGrad, y[0], dz)
				grads := run(b, bnGrad, g[0], x, in[1], y[3], y[4])
				release(y...)
				release(z...)
				release(g...)
				release(grads...)
			}
			b.ReportMetric(float64((nnCPUTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
		b.Run(fmt.Sprintf("%v/fused", shape), func(b *testing.B) {
			f := bindFor(b, "batch_norm_silu", attrs, in...)
			z := run(b, f, in...)
			fGrad := bindFor(b, "batch_norm_silu_grad", nil, dz, x, in[1], in[2], z[3], z[4])
			release(z...)
			cpu0 := nnCPUTime()
			for b.Loop() {
				z := run(b, f, in...)
				grads := run(b, fGrad, dz, x, in[1], in[2], z[3], z[4])
				release(z...)
				release(grads...)
			}
			b.ReportMetric(float64((nnCPUTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
		release(in...)
		release(dz)
	}
}

// nnCPUTime is the process's CPU time.
func nnCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
