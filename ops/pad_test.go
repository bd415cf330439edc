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

// padRef is a naive pad: for every output element, each axis crops first
// and then maps the position into what is left, reflecting step by step
// (not by the period) or clamping; ok is false in the constant padding.
func padRef(x []float64, shape, pads []int, mode string, value float64) ([]float64, []int) {
	r := len(shape)
	out := make([]int, r)
	for i, d := range shape {
		out[i] = d + pads[i] + pads[r+i]
	}
	n := nnSize(out)
	y := make([]float64, n)
	idx := make([]int, r)
	for k := range n {
		rem := k
		for i := r - 1; i >= 0; i-- {
			idx[i] = rem % out[i]
			rem /= out[i]
		}
		off, ok := 0, true
		for i := range r {
			lo := max(0, -pads[i])
			m := shape[i] - lo - max(0, -pads[r+i])
			p := idx[i] - max(0, pads[i])
			if p < 0 || p >= m {
				switch mode {
				case "constant":
					ok = false
				case "edge":
					p = min(max(p, 0), m-1)
				case "reflect":
					for m > 1 && (p < 0 || p >= m) {
						if p < 0 {
							p = -p
						}
						if p >= m {
							p = 2*(m-1) - p
						}
					}
					if m == 1 {
						p = 0
					}
				}
			}
			off = off*shape[i] + lo + p
		}
		if ok {
			y[k] = x[off]
		} else {
			y[k] = value
		}
	}
	return y, out
}

type padCase struct {
	shape []int
	pads  []int
	mode  string
	value float64
}

func (c padCase) attrs() ir.Attrs {
	a := ir.A("pads", c.pads)
	if c.mode != "" {
		a = a.With("mode", ir.Str(c.mode))
	}
	if c.value != 0 {
		a = a.With("value", ir.Float(c.value))
	}
	return a
}

func (c padCase) modeName() string {
	if c.mode == "" {
		return "constant"
	}
	return c.mode
}

var padCases = []padCase{
	{[]int{2, 3}, []int{1, 2, 0, 1}, "", 0},
	{[]int{2, 3}, []int{1, 2, 0, 1}, "constant", -3},
	{[]int{1, 3, 4, 5}, []int{0, 0, 1, 2, 0, 0, 3, 1}, "reflect", 0},
	{[]int{1, 3, 4, 5}, []int{0, 0, 1, 2, 0, 0, 3, 1}, "edge", 0},
	{[]int{3}, []int{7, 7}, "reflect", 0},          // wider than the axis: periodic
	{[]int{1, 2}, []int{0, 5, 0, 4}, "reflect", 0}, // period 2
	{[]int{2, 1}, []int{1, 3, 2, 2}, "reflect", 0}, // one element repeats
	{[]int{4, 6}, []int{-1, 2, -2, -3}, "constant", -1},
	{[]int{4, 6}, []int{-1, 2, 2, -3}, "reflect", 0}, // crop, then reflect what is left
	{[]int{4, 6}, []int{2, -2, -3, 3}, "edge", 0},
	{[]int{3, 4}, []int{-3, 0, 0, 0}, "constant", 0}, // crop everything
	{[]int{0, 4}, []int{1, 1, 1, 1}, "constant", 7},  // pad an empty axis
	{[]int{}, []int{}, "reflect", 0},                 // scalar
	{[]int{2, 3, 4}, []int{0, 0, 0, 0, 0, 0}, "edge", 0},
	{[]int{8, 16, 40}, []int{1, 0, 3, 2, 0, 5}, "reflect", 0}, // big enough for threads
}

func TestPad(t *testing.T) {
	nnDebug(t)
	r := rand.New(rand.NewPCG(1, 2))
	for _, dt := range []tensor.DType{tensor.F32, tensor.F64, tensor.I32, tensor.I64} {
		for _, c := range padCases {
			t.Run(fmt.Sprintf("%s/%v/%v/%s", dt, c.shape, c.pads, c.modeName()), func(t *testing.T) {
				a := memory.New(memory.Options{})
				x := randTensor(t, a, r, dt, c.shape...)
				want, shape := padRef(nnVals(x), c.shape, c.pads, c.modeName(), c.value)
				out := mustRun(t, a, "pad", c.attrs(), x)
				closeEnough(t, "pad", out[0], want, shape, 0)
				for _, th := range []int{1, 3} {
					o := nnRunThreads(t, a, th, "pad", c.attrs(), x)
					nnSameBits(t, fmt.Sprintf("pad with %d threads", th), o[0], out[0])
					release(o...)
				}
				release(out...)
				release(x)
				wantAllocated(t, a, 0)
			})
		}
	}
}

// Values numpy gives: np.pad(x, ..., mode) after slicing off the crops.
func TestPadNumpy(t *testing.T) {
	a := memory.New(memory.Options{})
	x := nnFrom(t, a, tensor.F64, []float64{1, 2, 3}, 3)
	for _, c := range []struct {
		pads []int
		mode string
		want []float64
	}{
		{[]int{7, 7}, "reflect", []float64{2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2}},
		{[]int{2, 1}, "edge", []float64{1, 1, 1, 2, 3, 3}},
		{[]int{-1, 2}, "reflect", []float64{2, 3, 2, 3}},
		{[]int{1, -1}, "constant", []float64{0, 1, 2}},
	} {
		out := mustRun(t, a, "pad", ir.A("pads", c.pads, "mode", c.mode), x)
		closeEnough(t, fmt.Sprintf("%v %s", c.pads, c.mode), out[0], c.want, []int{len(c.want)}, 0)
		release(out...)
	}
	bx, err := tensor.FromBool(a, []bool{true, false, true}, 3)
	if err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, a, "pad", ir.A("pads", []int{1, 2}, "value", 1), bx)
	if got := out[0].Bool(); fmt.Sprint(got) != "[true true false true true true]" {
		t.Fatalf("bool pad: %v", got)
	}
	release(out...)
	release(x, bx)
	wantAllocated(t, a, 0)
}

func TestPadInfer(t *testing.T) {
	got := nnInferOK(t, "pad", ir.A("pads", []int{1, -1, 2, 3}), nnT(ir.F32, -1, 5))
	if got[0].String() != "tensor<?x7xf32>" {
		t.Fatalf("type %s", got[0])
	}
	got = nnInferOK(t, "pad_grad", ir.A("pads", []int{1, -1, 2, 3}, "mode", "reflect"), nnT(ir.F32, -1, 7))
	if got[0].String() != "tensor<?x5xf32>" {
		t.Fatalf("type %s", got[0])
	}
	x := nnT(ir.F32, 2, 3)
	nnInferErr(t, "pad", nil, []string{"pads"}, x)
	nnInferErr(t, "pad", ir.A("pads", []int{1, 1}), []string{"pads [1 1]", "4 entries"}, x)
	nnInferErr(t, "pad", ir.A("pads", []int{0, 0, 0, 0}, "mode", "wrap"), []string{`"wrap"`}, x)
	nnInferErr(t, "pad", ir.A("pads", []int{-2, 0, -1, 0}), []string{"crop 3 elements from axis 0 of size 2"}, x)
	nnInferErr(t, "pad", ir.A("pads", []int{-2, 0, 1, 0}, "mode", "edge"), []string{"axis 0 is empty", "edge"}, x)
	nnInferErr(t, "pad", ir.A("pads", []int{0, 0, 0, 0}, "value", 1.5), []string{"value 1.5", "i64"}, nnT(ir.I64, 2, 3))
	nnInferErr(t, "pad", ir.A("pads", []int{0, 0, 0, 0}, "value", 2), []string{"value 2", "bool"}, nnT(ir.I1, 2, 3))
	nnInferErr(t, "pad_grad", ir.A("pads", []int{0, 0, 0, 0}), []string{"f32 or f64"}, nnT(ir.I64, 2, 3))
	nnInferErr(t, "pad_grad", ir.A("pads", []int{2, 0, 1, 0}, "mode", "reflect"), []string{"axis 0 of size 2", "smaller than its padding"}, x)
}

func TestPadErrorsAtRunTime(t *testing.T) {
	a := memory.New(memory.Options{})
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F32, ir.Dynamic, 3)
	op := b.Op("pad", ir.A("pads", []int{-2, 0, -1, 0}), x)
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	k, err := ops.Bind(op)
	if err != nil {
		t.Fatal(err)
	}
	xt := nnFrom(t, a, tensor.F32, make([]float64, 6), 2, 3)
	for range 3 {
		if _, err := k(&ops.Ctx{Alloc: a, Threads: 2}, []*tensor.Tensor{xt}); err == nil {
			t.Fatal("no error cropping 3 rows of 2")
		}
	}
	release(xt)
	wantAllocated(t, a, 0)
}

func TestPadGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range []padCase{
		{[]int{3, 4}, []int{1, 2, 2, 1}, "constant", 1.5},
		{[]int{3, 4}, []int{-1, 2, 1, -2}, "constant", 0},
		{[]int{1, 2, 3, 4}, []int{0, 1, 2, 3, 0, 0, 2, 1}, "reflect", 0},
		{[]int{3, 4}, []int{5, -1, 4, 6}, "reflect", 0},
		{[]int{2, 1}, []int{1, 2, 0, 3}, "reflect", 0},
		{[]int{3, 4}, []int{2, -1, 3, 2}, "edge", 0},
		{[]int{2, 3, 5}, []int{1, 0, 2, 0, 1, 3}, "edge", 0},
	} {
		x := f64Rand(t, r, -1, 1, c.shape...)
		checkOpGrad(t, "pad", c.attrs(), x)
		for _, mode := range []int{shpTop, shpInIf, shpInLoop} {
			shpCheckGrad(t, mode, shpGradCase{name: "pad", attrs: c.attrs(), in: []*tensor.Tensor{x}, dyn: [][]int{{0}}})
		}
		if c.modeName() != "constant" {
			var out []int
			for i, d := range c.shape {
				out = append(out, d+c.pads[i]+c.pads[len(c.shape)+i])
			}
			dy := f64Rand(t, r, -1, 1, out...)
			attrs := ir.A("pads", c.pads, "mode", c.mode)
			checkOpGrad(t, "pad_grad", attrs, dy)
			// pad_grad with threads gives the same bits.
			a := memory.New(memory.Options{})
			one := nnRunThreads(t, a, 1, "pad_grad", attrs, dy)
			three := nnRunThreads(t, a, 3, "pad_grad", attrs, dy)
			nnSameBits(t, "pad_grad threads", three[0], one[0])
			release(one...)
			release(three...)
			wantAllocated(t, a, 0)
			dy.Release()
		}
		x.Release()
	}
}

func TestPadMemory(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	a := memory.New(memory.Options{})
	x := randTensor(t, a, r, tensor.F32, 2, 3, 9, 7)
	base := a.Stats().Allocated.Current
	for range 50 {
		for _, c := range padCases[2:4] {
			out := mustRun(t, a, "pad", ir.A("pads", c.pads, "mode", c.mode), x)
			dx := mustRun(t, a, "pad_grad", ir.A("pads", c.pads, "mode", c.mode), out[0])
			release(out...)
			release(dx...)
		}
		if _, err := runOp(t, a, "pad", ir.A("pads", []int{0, 0, -5, -5, 0, 0, -5, 0}), x); err == nil {
			t.Fatal("no error")
		}
		wantAllocated(t, a, base)
	}
	checkOOMSweep(t, "pad", ir.A("pads", []int{0, 1, 2, 3, 0, 1, 2, 3}, "mode", "reflect"), x)
	checkOOMSweep(t, "pad_grad", ir.A("pads", []int{0, 0, -1, 1, 0, 0, 1, -2}, "mode", "edge"), x)
	release(x)
	wantAllocated(t, a, 0)
}
