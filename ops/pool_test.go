package ops_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

type nnPoolCase struct {
	shape   [4]int
	k, s, p [2]int
}

func (c nnPoolCase) String() string {
	return fmt.Sprintf("%v/k%v/s%v/p%v", c.shape, c.k, c.s, c.p)
}

func (c nnPoolCase) attrs() ir.Attrs {
	return ir.A("kernel_size", c.k[:], "strides", c.s[:], "paddings", c.p[:])
}

// nnRefPool is max (with first-argmax indices) or average pooling,
// excluding padding.
func nnRefPool(x []float64, c nnPoolCase, isMax bool) (out, idx []float64, shape []int) {
	n, ch, h, w := c.shape[0], c.shape[1], c.shape[2], c.shape[3]
	oh := (h+2*c.p[0]-c.k[0])/c.s[0] + 1
	ow := (w+2*c.p[1]-c.k[1])/c.s[1] + 1
	for pl := range n * ch {
		for y := range oh {
			for xo := range ow {
				best, bi, sum, cnt := math.Inf(-1), -1, 0.0, 0
				for i := range c.k[0] {
					for j := range c.k[1] {
						ih, iw := y*c.s[0]-c.p[0]+i, xo*c.s[1]-c.p[1]+j
						if ih < 0 || ih >= h || iw < 0 || iw >= w {
							continue
						}
						v := x[pl*h*w+ih*w+iw]
						sum += v
						cnt++
						if bi < 0 || v > best || math.IsNaN(v) && !math.IsNaN(best) {
							best, bi = v, ih*w+iw
						}
					}
				}
				if isMax {
					out = append(out, best)
					idx = append(idx, float64(bi))
				} else {
					out = append(out, sum/float64(cnt))
				}
			}
		}
	}
	return out, idx, []int{n, ch, oh, ow}
}

var nnPoolCases = []nnPoolCase{
	{[4]int{2, 3, 6, 8}, [2]int{2, 2}, [2]int{2, 2}, [2]int{0, 0}},
	{[4]int{2, 2, 7, 9}, [2]int{3, 3}, [2]int{2, 2}, [2]int{1, 1}},
	{[4]int{1, 3, 8, 7}, [2]int{3, 2}, [2]int{1, 2}, [2]int{1, 0}},
	{[4]int{3, 5, 13, 11}, [2]int{5, 3}, [2]int{3, 1}, [2]int{2, 1}},
	{[4]int{1, 1, 1, 1}, [2]int{1, 1}, [2]int{1, 1}, [2]int{0, 0}},
	{[4]int{1, 1, 1, 1}, [2]int{2, 2}, [2]int{1, 1}, [2]int{1, 1}},
	{[4]int{2, 1, 4, 4}, [2]int{4, 4}, [2]int{4, 4}, [2]int{0, 0}},
	{[4]int{0, 3, 4, 4}, [2]int{2, 2}, [2]int{2, 2}, [2]int{0, 0}},
	{[4]int{2, 0, 4, 4}, [2]int{2, 2}, [2]int{2, 2}, [2]int{0, 0}},
	{[4]int{16, 8, 28, 28}, [2]int{2, 2}, [2]int{2, 2}, [2]int{0, 0}}, // big enough for threads
	{[4]int{1, 2, 5, 6}, [2]int{3, 3}, [2]int{1, 2}, [2]int{2, 2}},    // padding beyond half the window
	{[4]int{2, 1, 5, 5}, [2]int{5, 4}, [2]int{3, 1}, [2]int{4, 3}},
	{[4]int{1, 1, 1, 2}, [2]int{3, 2}, [2]int{1, 1}, [2]int{2, 1}},
}

func TestNNPool2D(t *testing.T) {
	nnDebug(t)
	r := rand.New(rand.NewPCG(9, 10))
	for _, isMax := range []bool{true, false} {
		name := map[bool]string{true: "max_pool2d", false: "avg_pool2d"}[isMax]
		for _, dt := range nnDTypes {
			for _, tc := range nnPoolCases {
				t.Run(name+"/"+dt.String()+"/"+tc.String(), func(t *testing.T) {
					a := memory.New(memory.Options{})
					x := randTensor(t, a, r, dt, tc.shape[:]...)
					want, idx, shape := nnRefPool(nnVals(x), tc, isMax)
					out := mustRun(t, a, name, tc.attrs(), x)
					closeEnough(t, name, out[0], want, shape, nnTol(dt))
					if isMax {
						closeEnough(t, name+" indices", out[1], idx, shape, 0)
						if out[1].DType() != tensor.I64 {
							t.Fatalf("indices are %s", out[1].DType())
						}
					}
					for _, th := range []int{1, 3} {
						o := nnRunThreads(t, a, th, name, tc.attrs(), x)
						for i := range o {
							nnSameBits(t, fmt.Sprintf("%s result %d with %d threads", name, i, th), o[i], out[i])
						}
						release(o...)
					}
					release(out...)
					release(x)
					wantAllocated(t, a, 0)
				})
			}
		}
	}
}

// Ties go to the first element in row-major window order; NaN wins and
// propagates; -Inf windows still give a valid index.
func TestNNMaxPoolTiesNaN(t *testing.T) {
	a := memory.New(memory.Options{})
	x := nnFrom(t, a, tensor.F64, []float64{
		1, 3, 3, math.Inf(-1),
		3, 0, math.NaN(), math.Inf(-1),
		2, 2, math.Inf(-1), math.Inf(-1),
		2, 2, math.Inf(-1), math.Inf(-1),
	}, 1, 1, 4, 4)
	out := mustRun(t, a, "max_pool2d", ir.A("kernel_size", 2), x)
	closeEnough(t, "max", out[0], []float64{3, math.NaN(), 2, math.Inf(-1)}, []int{1, 1, 2, 2}, 0)
	closeEnough(t, "indices", out[1], []float64{1, 6, 8, 10}, []int{1, 1, 2, 2}, 0)
	release(out...)
	release(x)
	wantAllocated(t, a, 0)
}

func TestNNPoolDefaultsAndInfer(t *testing.T) {
	// strides default to kernel_size
	got := nnInferOK(t, "max_pool2d", ir.A("kernel_size", []int{2, 3}), nnT(ir.F32, 2, 3, 8, 9))
	if got[0].String() != "tensor<2x3x4x3xf32>" || got[1].String() != "tensor<2x3x4x3xi64>" {
		t.Fatalf("types %v", got)
	}
	got = nnInferOK(t, "avg_pool2d", ir.A("kernel_size", 3, "strides", 1, "paddings", 1), nnT(ir.F64, -1, 3, -1, 9))
	if len(got) != 1 || got[0].String() != "tensor<?x3x?x9xf64>" {
		t.Fatalf("types %v", got)
	}
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F32, 4, 6, 28, 28)
	y, idx := ops.MaxPool2D(b, x, []int{2, 2}, nil, nil)
	z := ops.AvgPool2D(b, x, []int{3, 3}, []int{1, 1}, []int{1, 1})
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	if y.Type().String() != "tensor<4x6x14x14xf32>" || idx.Type().String() != "tensor<4x6x14x14xi64>" || z.Type().String() != "tensor<4x6x28x28xf32>" {
		t.Fatalf("types %s %s %s", y.Type(), idx.Type(), z.Type())
	}

	x4 := nnT(ir.F32, 2, 3, 8, 8)
	for _, name := range []string{"max_pool2d", "avg_pool2d"} {
		nnInferErr(t, name, nil, []string{"kernel_size"}, x4)
		nnInferErr(t, name, ir.A("kernel_size", 2, "paddings", 2), []string{"paddings [2 2]", "smaller than kernel_size", "[2 2]"}, x4)
		nnInferErr(t, name, ir.A("kernel_size", 9), []string{"tensor<2x3x8x8xf32>", "smaller than kernel_size [9 9]"}, x4)
		nnInferErr(t, name, ir.A("kernel_size", 2), []string{"tensor<3x8x8xf32>", "rank 4"}, nnT(ir.F32, 3, 8, 8))
		nnInferErr(t, name, ir.A("kernel_size", 2), []string{"tensor<2x3x8x8xi64>", "f32 or f64"}, nnT(ir.I64, 2, 3, 8, 8))
		nnInferErr(t, name, ir.A("kernel_size", 0), []string{"kernel_size", ">= 1"}, x4)
		nnInferErr(t, name, ir.A("kernel_size", 2, "paddings", 1), []string{"tensor<2x3x0x8xf32>", "empty spatial dim"}, nnT(ir.F32, 2, 3, 0, 8))
		nnInferErr(t, name, ir.A("kernel_size", 2, "strides", []int{1, 0}), []string{"strides", ">= 1"}, x4)
	}
}

func TestNNPoolOOMSweep(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	a := memory.New(memory.Options{})
	x := randTensor(t, a, r, tensor.F32, 2, 3, 6, 6)
	checkOOMSweep(t, "max_pool2d", ir.A("kernel_size", 2), x)
	checkOOMSweep(t, "avg_pool2d", ir.A("kernel_size", 3, "strides", 1, "paddings", 1), x)
	release(x)
}
