package ops_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

// TestMaxPool2DValues checks max_pool2d_values against the naive
// reference and bit for bit against max_pool2d's maxima, for the cases of
// TestNNPool2D, the windows of the models (3×3 stride 2 with padding 1,
// SPP's 5, 9 and 13 with stride 1) and inputs with ties, ±0 and NaN, on 1
// and 3 threads, with memory back to baseline after each case, repeated.
func TestMaxPool2DValues(t *testing.T) {
	nnDebug(t)
	r := rand.New(rand.NewPCG(41, 42))
	cases := append([]nnPoolCase{
		{[4]int{2, 4, 32, 32}, [2]int{3, 3}, [2]int{2, 2}, [2]int{1, 1}},
		{[4]int{1, 3, 20, 21}, [2]int{5, 5}, [2]int{1, 1}, [2]int{2, 2}},
		{[4]int{1, 3, 20, 21}, [2]int{9, 9}, [2]int{1, 1}, [2]int{4, 4}},
		{[4]int{1, 3, 20, 21}, [2]int{13, 13}, [2]int{1, 1}, [2]int{6, 6}},
	}, nnPoolCases...)
	for _, dt := range nnDTypes {
		for _, tc := range cases {
			t.Run(dt.String()+"/"+tc.String(), func(t *testing.T) {
				a := memory.New(memory.Options{})
				x := randTensor(t, a, r, dt, tc.shape[:]...)
				for i := 0; i < x.Len(); i++ {
					var v float64
					switch r.IntN(8) {
					case 0:
						v = math.NaN()
					case 1:
						v = math.Copysign(0, -1)
					case 2:
						v = 0
					case 3:
						v = 1 // ties
					default:
						continue
					}
					if dt == tensor.F32 {
						x.F32()[i] = float32(v)
					} else {
						x.F64()[i] = v
					}
				}
				want, _, shape := nnRefPool(nnVals(x), tc, true)
				full := mustRun(t, a, "max_pool2d", tc.attrs(), x)
				for range 3 {
					for _, th := range []int{1, 3} {
						out := nnRunThreads(t, a, th, "max_pool2d_values", tc.attrs(), x)
						if len(out) != 1 {
							t.Fatalf("%d results, want 1", len(out))
						}
						closeEnough(t, "max_pool2d_values", out[0], want, shape, 0)
						nnSameBits(t, fmt.Sprintf("max_pool2d_values with %d threads", th), out[0], full[0])
						release(out...)
					}
				}
				release(full...)
				release(x)
				wantAllocated(t, a, 0)
			})
		}
	}
	got := nnInferOK(t, "max_pool2d_values", ir.A("kernel_size", 3, "strides", 2, "paddings", 1), nnT(ir.F32, -1, 3, 9, 8))
	if len(got) != 1 || got[0].String() != "tensor<?x3x5x4xf32>" {
		t.Fatalf("types %v", got)
	}
	x4 := nnT(ir.F32, 2, 3, 8, 8)
	nnInferErr(t, "max_pool2d_values", nil, []string{"kernel_size"}, x4)
	nnInferErr(t, "max_pool2d_values", ir.A("kernel_size", 9), []string{"smaller than kernel_size [9 9]"}, x4)
	nnInferErr(t, "max_pool2d_values", ir.A("kernel_size", 2), []string{"f32 or f64"}, nnT(ir.I64, 2, 3, 8, 8))
	a := memory.New(memory.Options{})
	x := randTensor(t, a, r, tensor.F32, 2, 3, 6, 6)
	checkOOMSweep(t, "max_pool2d_values", ir.A("kernel_size", 3, "strides", 2, "paddings", 1), x)
	release(x)
}
