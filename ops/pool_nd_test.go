package ops_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

type poolNDCase struct {
	shape                            []int
	kernel, strides, pads, dilations []int
	ceil, countPad                   bool
}

func (c poolNDCase) String() string {
	return fmt.Sprintf("%v/k%v/s%v/p%v/d%v/ceil=%v/incl=%v", c.shape, c.kernel, c.strides, c.pads, c.dilations, c.ceil, c.countPad)
}

func (c poolNDCase) attrs(isMax bool) ir.Attrs {
	a := ir.A("kernel_size", c.kernel, "strides", c.strides, "pads", c.pads, "dilations", c.dilations, "ceil_mode", c.ceil)
	if !isMax {
		a = a.With("count_include_pad", ir.Bool(c.countPad))
	}
	return a
}

// poolNDRef is a naive N-d pooling: every tap of every window, in
// row-major window order, with the output size from floating-point
// division.
func poolNDRef(x []float64, c poolNDCase, isMax bool) (out, idx []float64, shape []int) {
	k := len(c.kernel)
	in := c.shape[2:]
	shape = slices.Clone(c.shape[:2])
	for i := range k {
		span := c.dilations[i]*(c.kernel[i]-1) + 1
		q := float64(in[i]+c.pads[i]+c.pads[k+i]-span) / float64(c.strides[i])
		o := int(math.Floor(q)) + 1
		if c.ceil {
			o = int(math.Ceil(q)) + 1
			if (o-1)*c.strides[i] >= in[i]+c.pads[i] {
				o--
			}
		}
		shape = append(shape, o)
	}
	vol := nnSize(in)
	taps := nnSize(c.kernel)
	for pl := range c.shape[0] * c.shape[1] {
		for o := range nnSize(shape[2:]) {
			pos := make([]int, k)
			for i, r := k-1, o; i >= 0; i-- {
				pos[i], r = r%shape[2+i], r/shape[2+i]
			}
			best, bi, sum, cnt, padded := math.Inf(-1), -1, 0.0, 0, 0
			for t := range taps {
				flat, inside, inPad := 0, true, true
				for i, r := k-1, t; i >= 0; i-- {
					j := r % c.kernel[i]
					r /= c.kernel[i]
					p := pos[i]*c.strides[i] - c.pads[i] + j*c.dilations[i]
					inside = inside && p >= 0 && p < in[i]
					inPad = inPad && p < in[i]+c.pads[k+i]
					stride := nnSize(in[i+1:])
					flat += p * stride
				}
				if inPad {
					padded++
				}
				if !inside {
					continue
				}
				v := x[pl*vol+flat]
				sum += v
				cnt++
				if bi < 0 || v > best || math.IsNaN(v) && !math.IsNaN(best) {
					best, bi = v, flat
				}
			}
			switch {
			case isMax:
				out = append(out, best)
				idx = append(idx, float64(bi))
			case c.countPad:
				out = append(out, sum/float64(padded))
			default:
				out = append(out, sum/float64(cnt))
			}
		}
	}
	return out, idx, shape
}

var poolNDCases = []poolNDCase{
	{[]int{2, 3, 11}, []int{3}, []int{2}, []int{1, 2}, []int{1}, false, false},
	{[]int{1, 2, 10}, []int{2}, []int{3}, []int{0, 1}, []int{3}, true, true},
	{[]int{1, 1, 1}, []int{3}, []int{1}, []int{2, 2}, []int{1}, false, true},
	{[]int{2, 2, 7, 9}, []int{3, 3}, []int{2, 2}, []int{1, 1, 1, 1}, []int{1, 1}, false, false},
	{[]int{1, 3, 6, 7}, []int{3, 2}, []int{2, 2}, []int{2, 0, 0, 1}, []int{1, 1}, true, true},
	{[]int{1, 1, 4, 4}, []int{2, 2}, []int{1, 1}, []int{0, 0, 0, 0}, []int{2, 2}, false, false},
	{[]int{2, 1, 5, 5}, []int{5, 5}, []int{1, 1}, []int{2, 4, 2, 4}, []int{1, 1}, false, true},
	{[]int{1, 2, 5, 6, 4}, []int{2, 3, 2}, []int{2, 1, 2}, []int{1, 1, 0, 0, 1, 1}, []int{1, 1, 2}, true, false},
	{[]int{2, 1, 6, 5, 7}, []int{3, 2, 2}, []int{2, 2, 3}, []int{1, 0, 1, 1, 0, 1}, []int{1, 2, 1}, true, true},
	{[]int{0, 2, 5}, []int{2}, []int{2}, []int{0, 0}, []int{1}, false, false},
	{[]int{8, 16, 12, 12}, []int{3, 3}, []int{1, 1}, []int{1, 1, 1, 1}, []int{1, 1}, false, false}, // threads
}

func TestPoolND(t *testing.T) {
	nnDebug(t)
	r := rand.New(rand.NewPCG(7, 8))
	for _, isMax := range []bool{true, false} {
		name := map[bool]string{true: "max_pool", false: "avg_pool"}[isMax]
		for _, dt := range nnDTypes {
			for _, c := range poolNDCases {
				t.Run(name+"/"+dt.String()+"/"+c.String(), func(t *testing.T) {
					a := memory.New(memory.Options{})
					x := randTensor(t, a, r, dt, c.shape...)
					want, idx, shape := poolNDRef(nnVals(x), c, isMax)
					out := mustRun(t, a, name, c.attrs(isMax), x)
					closeEnough(t, name, out[0], want, shape, nnTol(dt))
					if isMax {
						closeEnough(t, name+" indices", out[1], idx, shape, 0)
					}
					for _, th := range []int{1, 3} {
						o := nnRunThreads(t, a, th, name, c.attrs(isMax), x)
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

// On what the 2-D ops can do, the N-d ops give their bits.
func TestPoolNDMatches2D(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	a := memory.New(memory.Options{})
	for _, tc := range nnPoolCases {
		if tc.shape[2] == 1 && tc.k[0] > 1 {
			continue
		}
		x := randTensor(t, a, r, tensor.F32, tc.shape[:]...)
		nd := ir.A("kernel_size", tc.k[:], "strides", tc.s[:], "pads", []int{tc.p[0], tc.p[1], tc.p[0], tc.p[1]})
		for _, pair := range [][2]string{{"max_pool2d", "max_pool"}, {"avg_pool2d", "avg_pool"}} {
			want := mustRun(t, a, pair[0], tc.attrs(), x)
			got := mustRun(t, a, pair[1], nd, x)
			for i := range want {
				nnSameBits(t, fmt.Sprintf("%s vs %s on %v", pair[1], pair[0], tc), got[i], want[i])
			}
			release(want...)
			release(got...)
		}
		release(x)
	}
	wantAllocated(t, a, 0)
}

func TestPoolNDNaN(t *testing.T) {
	a := memory.New(memory.Options{})
	x := nnFrom(t, a, tensor.F64, []float64{1, 3, 3, math.NaN(), 2, math.Inf(-1), math.Inf(-1)}, 1, 1, 7)
	out := mustRun(t, a, "max_pool", ir.A("kernel_size", []int{2}, "strides", []int{2}, "ceil_mode", true), x)
	closeEnough(t, "max", out[0], []float64{3, math.NaN(), 2, math.Inf(-1)}, []int{1, 1, 4}, 0)
	closeEnough(t, "indices", out[1], []float64{1, 3, 4, 6}, []int{1, 1, 4}, 0)
	release(out...)
	release(x)
	wantAllocated(t, a, 0)
}

func TestPoolNDInfer(t *testing.T) {
	got := nnInferOK(t, "max_pool", ir.A("kernel_size", []int{3, 2, 2}, "pads", []int{1, 0, 0, 1, 1, 0}), nnT(ir.F32, -1, 3, 8, -1, 5))
	if got[0].String() != "tensor<?x3x3x?x2xf32>" || got[1].String() != "tensor<?x3x3x?x2xi64>" {
		t.Fatalf("types %v", got)
	}
	// Ceil mode drops a last window that would start in the padding after.
	got = nnInferOK(t, "avg_pool", ir.A("kernel_size", []int{2}, "strides", []int{2}, "pads", []int{1, 1}, "ceil_mode", true), nnT(ir.F64, 1, 1, 4))
	if got[0].String() != "tensor<1x1x3xf64>" {
		t.Fatalf("type %s", got[0])
	}
	x := nnT(ir.F32, 2, 3, 8, 8)
	for _, name := range []string{"max_pool", "avg_pool"} {
		nnInferErr(t, name, nil, []string{"kernel_size"}, x)
		nnInferErr(t, name, ir.A("kernel_size", []int{}), []string{"empty"}, x)
		nnInferErr(t, name, ir.A("kernel_size", []int{2}), []string{"rank 3"}, x)
		nnInferErr(t, name, ir.A("kernel_size", []int{2, 0}), []string{"kernel_size", ">= 1"}, x)
		nnInferErr(t, name, ir.A("kernel_size", []int{2, 2}, "strides", []int{1}), []string{"strides", "2 entries"}, x)
		nnInferErr(t, name, ir.A("kernel_size", []int{2, 2}, "pads", []int{1, 1}), []string{"pads", "4 entries"}, x)
		nnInferErr(t, name, ir.A("kernel_size", []int{2, 2}, "pads", []int{0, 0, -1, 0}), []string{"pads", ">= 0"}, x)
		nnInferErr(t, name, ir.A("kernel_size", []int{2, 2}, "dilations", []int{0, 1}), []string{"dilations", ">= 1"}, x)
		nnInferErr(t, name, ir.A("kernel_size", []int{5, 2}, "dilations", []int{2, 1}), []string{"smaller than the window", "dilated by 2"}, x)
		nnInferErr(t, name, ir.A("kernel_size", []int{2, 2}, "pads", []int{2, 0, 0, 0}), []string{"window 0", "only padding"}, x)
		nnInferErr(t, name, ir.A("kernel_size", []int{2, 2}, "pads", []int{1, 1, 1, 1}, "dilations", []int{3, 1}), []string{"only padding"}, nnT(ir.F32, 1, 1, 2, 4))
		nnInferErr(t, name, ir.A("kernel_size", []int{2}), []string{"f32 or f64"}, nnT(ir.I64, 1, 1, 4))
		nnInferErr(t, name, ir.A("kernel_size", []int{2}, "ceil_mode", 1), []string{"ceil_mode"}, nnT(ir.F32, 1, 1, 4))
	}
	dy, idx := nnT(ir.F64, 2, 3, 4), nnT(ir.I64, 2, 3, 4)
	nnInferErr(t, "max_pool_grad", nil, []string{"input_size"}, dy, idx)
	nnInferErr(t, "max_pool_grad", ir.A("input_size", []int{8}), []string{"indices", "i64"}, dy, nnT(ir.I32, 2, 3, 4))
	nnInferErr(t, "max_pool_grad", ir.A("input_size", []int{8, 8}), []string{"input_size [8 8]", "1 sizes"}, dy, idx)
	nnInferErr(t, "max_pool_grad", ir.A("input_size", []int{8}), []string{"not both"}, dy, idx, nnT(ir.F64, 2, 3, 8))
	nnInferErr(t, "max_pool_grad", nil, []string{"differ in dim 1"}, dy, idx, nnT(ir.F64, 2, 4, 8))
	nnInferErr(t, "avg_pool_grad", ir.A("kernel_size", []int{2}, "input_size", []int{7}), []string{"avg_pool's output"}, dy)
	if got := nnInferOK(t, "avg_pool_grad", ir.A("kernel_size", []int{2}), dy, nnT(ir.F64, 2, 3, 9)); got[0].String() != "tensor<2x3x9xf64>" {
		t.Fatalf("avg_pool_grad type %s", got[0])
	}
}

func TestPoolNDGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, c := range []poolNDCase{
		{[]int{2, 2, 9}, []int{3}, []int{2}, []int{1, 2}, []int{1}, true, false},
		{[]int{1, 2, 5, 6}, []int{3, 2}, []int{1, 2}, []int{2, 0, 1, 1}, []int{1, 2}, false, true},
		{[]int{1, 1, 6, 5}, []int{3, 3}, []int{2, 2}, []int{1, 1, 1, 1}, []int{1, 1}, true, true},
		{[]int{1, 1, 4, 3, 5}, []int{2, 2, 3}, []int{1, 2, 2}, []int{1, 0, 1, 0, 1, 1}, []int{1, 1, 1}, true, false},
	} {
		t.Run(c.String(), func(t *testing.T) {
			x := f64Rand(t, r, -1, 1, c.shape...)
			defer x.Release()
			for _, isMax := range []bool{true, false} {
				name := map[bool]string{true: "max_pool", false: "avg_pool"}[isMax]
				checkOpGrad(t, name, c.attrs(isMax), x)
				for _, mode := range []int{shpTop, shpInIf, shpInLoop} {
					shpCheckGrad(t, mode, shpGradCase{name: name, attrs: c.attrs(isMax), in: []*tensor.Tensor{x}, dyn: [][]int{{0, 2}}, only: []int{0}})
				}
			}
		})
	}
}

func TestPoolNDGradHelpers(t *testing.T) {
	a := memory.New(memory.Options{})
	dy := nnFrom(t, a, tensor.F64, []float64{1, 2, 3, 4}, 1, 2, 2)
	idx := nnFrom(t, a, tensor.I64, []float64{0, 0, 2, 5}, 1, 2, 2)
	out := mustRun(t, a, "max_pool_grad", ir.A("input_size", []int{6}), dy, idx)
	closeEnough(t, "max_pool_grad", out[0], []float64{3, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 4}, []int{1, 2, 6}, 0)
	release(out...)
	bad := nnFrom(t, a, tensor.I64, []float64{0, 6, 2, 5}, 1, 2, 2)
	for range 3 {
		if _, err := runOp(t, a, "max_pool_grad", ir.A("input_size", []int{6}), dy, bad); err == nil {
			t.Fatal("no error for index 6 of 6")
		}
	}
	ag := mustRun(t, a, "avg_pool_grad", ir.A("kernel_size", []int{3}, "strides", []int{2}, "pads", []int{1, 1}, "count_include_pad", true, "input_size", []int{4}), dy)
	closeEnough(t, "avg_pool_grad", ag[0], []float64{1. / 3, 1./3 + 2./3, 2. / 3, 2. / 3, 1, 1 + 4./3, 4. / 3, 4. / 3}, []int{1, 2, 4}, 1e-12)
	release(ag...)
	release(dy, idx, bad)
	wantAllocated(t, a, 0)
}

func TestPoolNDMemory(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	a := memory.New(memory.Options{})
	x := randTensor(t, a, r, tensor.F32, 2, 3, 5, 6, 4)
	c := poolNDCase{nil, []int{2, 3, 2}, []int{2, 1, 2}, []int{1, 1, 0, 0, 1, 1}, []int{1, 1, 2}, true, true}
	base := a.Stats().Allocated.Current
	for range 30 {
		for _, isMax := range []bool{true, false} {
			name := map[bool]string{true: "max_pool", false: "avg_pool"}[isMax]
			out := mustRun(t, a, name, c.attrs(isMax), x)
			var g []*tensor.Tensor
			if isMax {
				g = mustRun(t, a, "max_pool_grad", ir.A("input_size", []int{5, 6, 4}), out[0], out[1])
			} else {
				g = mustRun(t, a, "avg_pool_grad", c.attrs(false).With("input_size", ir.List{ir.Int(5), ir.Int(6), ir.Int(4)}), out[0])
			}
			release(out...)
			release(g...)
		}
		wantAllocated(t, a, base)
	}
	checkOOMSweep(t, "max_pool", c.attrs(true), x)
	checkOOMSweep(t, "avg_pool", c.attrs(false), x)
	release(x)
	wantAllocated(t, a, 0)
}

func TestPoolNDBuilders(t *testing.T) {
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F32, 4, 6, 9)
	y, idx := ops.MaxPool(b, x, []int{3}, ops.PoolOptions{Strides: []int{2}, Pads: []int{1, 1}, Dilations: []int{2}, CeilMode: true})
	z := ops.AvgPool(b, x, []int{2}, ops.PoolOptions{CountIncludePad: true, Pads: []int{1, 0}})
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	if y.Type().String() != "tensor<4x6x4xf32>" || idx.Type().String() != "tensor<4x6x4xi64>" || z.Type().String() != "tensor<4x6x5xf32>" {
		t.Fatalf("types %s %s %s", y.Type(), idx.Type(), z.Type())
	}
}
