package ops_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

type nnConvCase struct {
	n, c, h, w, o, kh, kw int
	s, p, d               [2]int
	g                     int
}

func (c nnConvCase) String() string {
	return fmt.Sprintf("x%dx%dx%dx%d/w%dx%dx%d/s%v/p%v/d%v/g%d", c.n, c.c, c.h, c.w, c.o, c.kh, c.kw, c.s, c.p, c.d, c.g)
}

func (c nnConvCase) attrs() ir.Attrs {
	return ir.A("strides", c.s[:], "paddings", c.p[:], "dilations", c.d[:], "groups", c.g)
}

// nnRefConv is a direct 7-loop convolution.
func nnRefConv(x, w []float64, c nnConvCase) ([]float64, []int) {
	oh := (c.h+2*c.p[0]-c.d[0]*(c.kh-1)-1)/c.s[0] + 1
	ow := (c.w+2*c.p[1]-c.d[1]*(c.kw-1)-1)/c.s[1] + 1
	cg, og := c.c/c.g, c.o/c.g
	out := make([]float64, c.n*c.o*oh*ow)
	for n := range c.n {
		for o := range c.o {
			g := o / og
			for y := range oh {
				for xo := range ow {
					var s float64
					for ci := range cg {
						for i := range c.kh {
							for j := range c.kw {
								ih := y*c.s[0] - c.p[0] + i*c.d[0]
								iw := xo*c.s[1] - c.p[1] + j*c.d[1]
								if ih < 0 || ih >= c.h || iw < 0 || iw >= c.w {
									continue
								}
								s += x[((n*c.c+g*cg+ci)*c.h+ih)*c.w+iw] * w[((o*cg+ci)*c.kh+i)*c.kw+j]
							}
						}
					}
					out[((n*c.o+o)*oh+y)*ow+xo] = s
				}
			}
		}
	}
	return out, []int{c.n, c.o, oh, ow}
}

var nnConvCases = []nnConvCase{
	{2, 3, 7, 6, 4, 3, 3, [2]int{1, 1}, [2]int{0, 0}, [2]int{1, 1}, 1},
	{2, 3, 9, 8, 5, 3, 2, [2]int{2, 1}, [2]int{1, 2}, [2]int{1, 1}, 1},
	{1, 2, 11, 10, 3, 3, 3, [2]int{1, 2}, [2]int{2, 1}, [2]int{2, 3}, 1},
	{2, 4, 6, 7, 6, 3, 3, [2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1}, 2},
	{3, 3, 5, 5, 6, 3, 3, [2]int{2, 2}, [2]int{1, 1}, [2]int{1, 1}, 3},   // depthwise ×2
	{3, 5, 4, 3, 7, 1, 1, [2]int{1, 1}, [2]int{0, 0}, [2]int{1, 1}, 1},   // 1×1, no workspace
	{2, 6, 5, 3, 4, 1, 1, [2]int{1, 1}, [2]int{0, 0}, [2]int{1, 1}, 2},   // grouped 1×1
	{2, 3, 5, 7, 2, 1, 1, [2]int{2, 3}, [2]int{0, 0}, [2]int{1, 1}, 1},   // strided 1×1
	{1, 1, 1, 1, 1, 1, 1, [2]int{1, 1}, [2]int{0, 0}, [2]int{1, 1}, 1},   // all ones
	{1, 1, 1, 1, 1, 3, 3, [2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1}, 1},   // 1×1 input, padded
	{5, 1, 13, 11, 6, 5, 5, [2]int{1, 1}, [2]int{2, 2}, [2]int{1, 1}, 1}, // LeNet-like, primes
	{7, 6, 7, 7, 16, 5, 5, [2]int{1, 1}, [2]int{0, 0}, [2]int{1, 1}, 1},
	{3, 2, 17, 13, 3, 7, 4, [2]int{3, 2}, [2]int{3, 1}, [2]int{1, 2}, 1},
	{0, 3, 5, 5, 4, 3, 3, [2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1}, 1}, // empty batch
	{2, 3, 5, 5, 0, 3, 3, [2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1}, 1}, // no output channels
	{2, 0, 5, 5, 3, 3, 3, [2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1}, 1}, // no input channels: zeros
	{2, 3, 0, 5, 3, 1, 3, [2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1}, 1}, // zero height: all padding
	{4, 8, 12, 12, 8, 3, 3, [2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1}, 4},
	{3, 6, 9, 11, 6, 3, 3, [2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1}, 6},   // depthwise
	{2, 5, 12, 19, 5, 3, 3, [2]int{2, 2}, [2]int{1, 1}, [2]int{1, 2}, 5},  // depthwise, strided, dilated
	{1, 30, 2, 2, 48, 3, 3, [2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1}, 1},  // 2×2 map, batch 1: transposed GEMM
	{9, 20, 3, 3, 24, 3, 3, [2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1}, 1},  // small maps over the batch
	{3, 7, 10, 10, 40, 3, 3, [2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1}, 1}, // tiles spanning images
}

func TestNNConv2D(t *testing.T) {
	nnDebug(t)
	r := rand.New(rand.NewPCG(5, 6))
	for _, dt := range nnDTypes {
		for _, tc := range nnConvCases {
			t.Run(dt.String()+"/"+tc.String(), func(t *testing.T) {
				a := memory.New(memory.Options{})
				x := randTensor(t, a, r, dt, tc.n, tc.c, tc.h, tc.w)
				w := randTensor(t, a, r, dt, tc.o, tc.c/max(tc.g, 1), tc.kh, tc.kw)
				want, shape := nnRefConv(nnVals(x), nnVals(w), tc)
				out := mustRun(t, a, "conv2d", tc.attrs(), x, w)
				closeEnough(t, "conv2d", out[0], want, shape, nnTol(dt))
				for _, th := range []int{1, 3, 8} {
					o := nnRunThreads(t, a, th, "conv2d", tc.attrs(), x, w)
					nnSameBits(t, fmt.Sprintf("conv2d with %d threads", th), o[0], out[0])
					release(o...)
				}
				release(out...)
				release(x, w)
				wantAllocated(t, a, 0)
			})
		}
	}
}

func TestNNConv2DDefaults(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	a := memory.New(memory.Options{})
	x := randTensor(t, a, r, tensor.F64, 2, 3, 6, 5)
	w := randTensor(t, a, r, tensor.F64, 4, 3, 3, 2)
	tc := nnConvCase{2, 3, 6, 5, 4, 3, 2, [2]int{1, 1}, [2]int{0, 0}, [2]int{1, 1}, 1}
	want, shape := nnRefConv(nnVals(x), nnVals(w), tc)
	out := mustRun(t, a, "conv2d", nil, x, w)
	closeEnough(t, "conv2d defaults", out[0], want, shape, 1e-12)
	release(out...)
	// single ints stand for both dims
	tc.s, tc.p = [2]int{2, 2}, [2]int{1, 1}
	want, shape = nnRefConv(nnVals(x), nnVals(w), tc)
	out = mustRun(t, a, "conv2d", ir.A("strides", 2, "paddings", 1), x, w)
	closeEnough(t, "conv2d int attrs", out[0], want, shape, 1e-12)
	release(out...)
	release(x, w)
	wantAllocated(t, a, 0)

	b := ir.NewBuilder(ir.NewProgram())
	xv := ops.Data(b, "x", ir.F32, -1, 3, 28, 28)
	wv := ops.Parameter(b, "w", ir.F32, 6, 3, 5, 5)
	y := ops.Conv2D(b, xv, wv, nil, []int{2, 2}, nil, 0)
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	if got := y.Type().String(); got != "tensor<?x6x28x28xf32>" {
		t.Fatalf("type %s", got)
	}
	got := nnInferOK(t, "conv2d", ir.A("strides", []int{2, 3}), nnT(ir.F32, 1, 3, -1, 10), nnT(ir.F32, 2, 3, 3, 3))
	if got[0].String() != "tensor<1x2x?x3xf32>" {
		t.Fatalf("type %s", got[0])
	}
}

func TestNNConv2DInferErrors(t *testing.T) {
	x := nnT(ir.F32, 2, 4, 8, 8)
	nnInferErr(t, "conv2d", nil, []string{"tensor<2x4x8x8xf32>", "tensor<6x3x3x3xf32>", "4 channels"}, x, nnT(ir.F32, 6, 3, 3, 3))
	nnInferErr(t, "conv2d", ir.A("groups", 2), []string{"tensor<5x2x3x3xf32>", "groups=2"}, x, nnT(ir.F32, 5, 2, 3, 3))
	nnInferErr(t, "conv2d", nil, []string{"tensor<2x4x8x8xf32>", "tensor<6x4x9x3xf32>", "larger than the padded input"}, x, nnT(ir.F32, 6, 4, 9, 3))
	nnInferErr(t, "conv2d", ir.A("dilations", []int{4, 1}), []string{"larger", "[4 1]"}, x, nnT(ir.F32, 6, 4, 3, 3))
	nnInferErr(t, "conv2d", nil, []string{"tensor<4x8x8xf32>", "rank 4"}, nnT(ir.F32, 4, 8, 8), nnT(ir.F32, 6, 4, 3, 3))
	nnInferErr(t, "conv2d", nil, []string{"tensor<6x4x3x3xf64>", "dtype"}, x, nnT(ir.F64, 6, 4, 3, 3))
	nnInferErr(t, "conv2d", nil, []string{"tensor<2x4x8x8xi32>", "f32 or f64"}, nnT(ir.I32, 2, 4, 8, 8), nnT(ir.I32, 6, 4, 3, 3))
	nnInferErr(t, "conv2d", ir.A("strides", []int{0, 1}), []string{"strides", ">= 1"}, x, nnT(ir.F32, 6, 4, 3, 3))
	nnInferErr(t, "conv2d", ir.A("paddings", []int{1, 1, 1}), []string{"paddings", "2 entries"}, x, nnT(ir.F32, 6, 4, 3, 3))
	nnInferErr(t, "conv2d", ir.A("paddings", -1), []string{"paddings", ">= 0"}, x, nnT(ir.F32, 6, 4, 3, 3))
	nnInferErr(t, "conv2d", ir.A("groups", 0), []string{"groups", ">= 1"}, x, nnT(ir.F32, 6, 4, 3, 3))
	nnInferErr(t, "conv2d", ir.A("strides", "x"), []string{"strides"}, x, nnT(ir.F32, 6, 4, 3, 3))
}

// TestNNConv2DRepeatMemory runs conv2d on the shapes of each float32
// kernel (the batched GEMM plain and transposed, depthwise, the direct
// rows kernel, im2col for float64) many times, with one and two threads:
// allocated bytes must come back to the baseline after every run, and
// after every failure of an out-of-memory sweep.
func TestNNConv2DRepeatMemory(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	a := memory.New(memory.Options{})
	for _, tc := range []nnConvCase{
		{4, 24, 4, 4, 40, 3, 3, [2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1}, 1},
		{1, 30, 2, 2, 48, 3, 3, [2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1}, 1},
		{2, 8, 9, 9, 8, 3, 3, [2]int{2, 2}, [2]int{1, 1}, [2]int{1, 1}, 8},
		{3, 2, 8, 8, 6, 3, 3, [2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1}, 1},
	} {
		for _, dt := range nnDTypes {
			x := randTensor(t, a, r, dt, tc.n, tc.c, tc.h, tc.w)
			w := randTensor(t, a, r, dt, tc.o, tc.c/tc.g, tc.kh, tc.kw)
			base := a.Stats().Allocated.Current
			for i := range 40 {
				o := nnRunThreads(t, a, 1+i%2, "conv2d", tc.attrs(), x, w)
				release(o...)
				if got := a.Stats().Allocated.Current; got != base {
					t.Fatalf("%s %v run %d: %d bytes allocated, want %d", tc, dt, i, got, base)
				}
			}
			checkOOMSweep(t, "conv2d", tc.attrs(), x, w)
			release(x, w)
			wantAllocated(t, a, 0)
		}
	}
}

func TestNNConv2DOOMSweep(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	a := memory.New(memory.Options{})
	for _, attrs := range []ir.Attrs{ir.A("paddings", 1), nil} {
		x := randTensor(t, a, r, tensor.F32, 3, 2, 5, 5)
		w := randTensor(t, a, r, tensor.F32, 4, 2, 3, 3)
		checkOOMSweep(t, "conv2d", attrs, x, w)
		release(x, w)
	}
}

// BenchmarkNNConv2D runs conv2d (f32, GOMAXPROCS threads) on the LeNet
// shapes and a ResNet-like shape. GFLOP/s counts 2 flops per
// multiply-add of the direct convolution.
func BenchmarkNNConv2D(b *testing.B) {
	for _, tc := range []struct {
		name string
		c    nnConvCase
	}{
		{"lenet1_b64_1to6_k5p2_28", nnConvCase{64, 1, 28, 28, 6, 5, 5, [2]int{1, 1}, [2]int{2, 2}, [2]int{1, 1}, 1}},
		{"lenet2_b64_6to16_k5_14", nnConvCase{64, 6, 14, 14, 16, 5, 5, [2]int{1, 1}, [2]int{0, 0}, [2]int{1, 1}, 1}},
		{"resnet_b8_64to64_k3p1_56", nnConvCase{8, 64, 56, 56, 64, 3, 3, [2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1}, 1}},
		{"resnet_b1_64to64_k3p1_56", nnConvCase{1, 64, 56, 56, 64, 3, 3, [2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1}, 1}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c := tc.c
			r := rand.New(rand.NewPCG(1, 2))
			a := memory.New(memory.Options{})
			x := randTensor(b, a, r, tensor.F32, c.n, c.c, c.h, c.w)
			w := randTensor(b, a, r, tensor.F32, c.o, c.c/c.g, c.kh, c.kw)
			k := bindFor(b, "conv2d", c.attrs(), x, w)
			ctx := &ops.Ctx{Alloc: a, Threads: nnBenchThreads()}
			oh := (c.h+2*c.p[0]-c.d[0]*(c.kh-1)-1)/c.s[0] + 1
			ow := (c.w+2*c.p[1]-c.d[1]*(c.kw-1)-1)/c.s[1] + 1
			flops := 2 * float64(c.n*c.o*oh*ow) * float64(c.c/c.g*c.kh*c.kw)
			for b.Loop() {
				outs, err := k(ctx, []*tensor.Tensor{x, w})
				if err != nil {
					b.Fatal(err)
				}
				release(outs...)
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
