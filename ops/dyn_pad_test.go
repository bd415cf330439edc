package ops_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

// Tests of pad_dyn and pad_dyn_grad (dyn_pad.go): against the naive
// reference of pad_test.go with the amounts (and the constant) given at
// run time, for every axis or some, their errors, gradients and memory.

// padDynOperands makes pad_dyn's operands after x for case c, padding
// only the axes listed (nil: every axis; the others must have 0 amounts).
func padDynOperands(t testing.TB, a *memory.Allocator, c padCase, axes []int, dt tensor.DType, withValue bool) []*tensor.Tensor {
	t.Helper()
	r := len(c.shape)
	if axes == nil {
		for i := range r {
			axes = append(axes, i)
		}
	}
	ps := make([]int64, 2*len(axes))
	for i, ax := range axes {
		ps[i], ps[len(axes)+i] = int64(c.pads[ax]), int64(c.pads[r+ax])
	}
	out := []*tensor.Tensor{dynVec(t, tensor.I64, ps...)}
	if withValue {
		v, err := tensor.Scalar(a, dt, c.value)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func TestPadDyn(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, dt := range []tensor.DType{tensor.F32, tensor.F64, tensor.I32, tensor.I64} {
		for _, c := range padCases {
			t.Run(fmt.Sprintf("%s/%v/%v/%s", dt, c.shape, c.pads, c.modeName()), func(t *testing.T) {
				a := memory.New(memory.Options{})
				x := randTensor(t, a, r, dt, c.shape...)
				want, shape := padRef(nnVals(x), c.shape, c.pads, c.modeName(), c.value)
				attrs := ir.A("mode", c.modeName())
				// Every axis; and only the axes with amounts (negative
				// ones counted from the end) plus the value operand.
				var axes []int
				for i := range c.shape {
					if c.pads[i] != 0 || c.pads[len(c.shape)+i] != 0 {
						axes = append(axes, i-len(c.shape))
					}
				}
				if axes == nil {
					axes = []int{}
				}
				for k, as := range [][]int{nil, axes} {
					withValue := c.modeName() == "constant" && (k == 1 || c.value != 0)
					ps := padDynOperands(t, a, c, normAxes(as, len(c.shape)), dt, withValue)
					at := attrs
					if as != nil {
						at = at.With("axes", nnIntList(as))
					}
					in := append([]*tensor.Tensor{x}, ps...)
					out := mustRun(t, a, "pad_dyn", at, in...)
					closeEnough(t, fmt.Sprintf("pad_dyn axes %v", as), out[0], want, shape, 0)
					// With dynamic types.
					o, err := shpRunTyped(t, a, "pad_dyn", at, shpTypes(true, in...), in...)
					if err != nil {
						t.Fatal(err)
					}
					nnSameBits(t, "pad_dyn with dynamic types", o[0], out[0])
					release(o...)
					if dt == tensor.F32 || dt == tensor.F64 {
						// pad_dyn_grad matches pad_grad.
						static := mustRun(t, a, "pad_grad", ir.A("pads", c.pads, "mode", c.modeName()), out[0])
						dyn := mustRun(t, a, "pad_dyn_grad", at, out[0], ps[0])
						nnSameBits(t, "pad_dyn_grad", dyn[0], static[0])
						release(static[0], dyn[0])
					}
					release(out...)
					release(ps...)
				}
				release(x)
				wantAllocated(t, a, 0)
			})
		}
	}
}

// normAxes maps negative axes to their positions, keeping nil.
func normAxes(axes []int, rank int) []int {
	if axes == nil {
		return nil
	}
	out := make([]int, len(axes))
	for i, a := range axes {
		if a < 0 {
			a += rank
		}
		out[i] = a
	}
	return out
}

func TestPadDynErrors(t *testing.T) {
	f64, i64 := ir.F64, ir.I64
	for _, c := range []struct {
		attrs ir.Attrs
		in    []ir.Type
		want  string
	}{
		{nil, []ir.Type{shpT(f64, 2, 3)}, "takes x, pads"},
		{nil, []ir.Type{shpT(f64, 2, 3), shpT(f64, 4)}, "pads tensor<4xf64> must be a 1-D i32 or i64 tensor"},
		{nil, []ir.Type{shpT(f64, 2, 3), shpT(i64, 3)}, "2·2 entries"},
		{ir.A("axes", []int{1}), []ir.Type{shpT(f64, 2, 3), shpT(i64, 4)}, "2·1 entries"},
		{ir.A("axes", []int{2}), []ir.Type{shpT(f64, 2, 3), shpT(i64, 2)}, "out of range"},
		{ir.A("axes", []int{1, -1}), []ir.Type{shpT(f64, 2, 3), shpT(i64, 4)}, "twice"},
		{ir.A("mode", "wrap"), []ir.Type{shpT(f64, 2, 3), shpT(i64, 4)}, `mode "wrap"`},
		{ir.A("mode", "edge"), []ir.Type{shpT(f64, 2, 3), shpT(i64, 4), shpT(f64)}, "value applies to mode constant"},
		{nil, []ir.Type{shpT(f64, 2, 3), shpT(i64, 4), shpT(ir.F32)}, "one element of x's dtype f64"},
		{nil, []ir.Type{shpT(f64, 2, 3), shpT(i64, 4), shpT(f64, 2)}, "one element"},
	} {
		shpWantErr(t, "pad_dyn", c.attrs, c.in, c.want)
	}
	shpWantErr(t, "pad_dyn_grad", nil, []ir.Type{shpT(ir.I32, 2, 3), shpT(i64, 4)}, "dy")

	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(3, 3))
	x := randTensor(t, a, r, tensor.F64, 2, 3)
	empty := randTensor(t, a, r, tensor.F64, 2, 0)
	v := func(vs ...int64) *tensor.Tensor { return dynVec(t, tensor.I64, vs...) }
	two, err := tensor.New(a, tensor.F64, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		attrs ir.Attrs
		in    []*tensor.Tensor
		want  string
	}{
		{nil, []*tensor.Tensor{x, v(0, -4, 0, 0)}, "crop 4 elements from axis 1 of size 3"},
		{nil, []*tensor.Tensor{x, v(0, 1, 0)}, "2·2 entries"},
		{nil, []*tensor.Tensor{x, v(0, 1<<50, 0, 0)}, "too large"},
		{ir.A("mode", "reflect"), []*tensor.Tensor{empty, v(0, 1, 0, 0)}, "nothing to pad from"},
		{nil, []*tensor.Tensor{x, v(0, 1, 0, 0), two}, "one element"},
	} {
		shpWantKernelErr(t, a, "pad_dyn", c.attrs, shpTypes(true, c.in...), c.in, c.want)
		release(c.in[1])
	}
	dy := randTensor(t, a, r, tensor.F64, 2, 3)
	p := v(0, 2, 0, 2)
	shpWantKernelErr(t, a, "pad_dyn_grad", ir.A("mode", "edge"), shpTypes(true, dy, p), []*tensor.Tensor{dy, p}, "smaller than its padding")
	release(x, empty, two, dy, p)
	wantAllocated(t, a, 0)
}

func TestPadDynGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 14))
	x := func(shape ...int) *tensor.Tensor { return f64Rand(t, r, -1, 1, shape...) }
	v := func(vals ...int64) *tensor.Tensor { return dynVec(t, tensor.I64, vals...) }
	s := func(val float64) *tensor.Tensor {
		y, err := tensor.Scalar(host, tensor.F64, val)
		if err != nil {
			t.Fatal(err)
		}
		return y
	}
	in := func(ts ...*tensor.Tensor) []*tensor.Tensor { return ts }
	cases := []shpGradCase{
		{name: "pad_dyn", in: in(x(3, 4), v(1, -1, 2, 3))},
		{name: "pad_dyn", in: in(x(3, 4), v(1, -1, 2, 3), s(0.5))},
		{name: "pad_dyn", attrs: ir.A("axes", []int{-1}), in: in(x(3, 4), v(-2, 3), s(-1.5)), dyn: [][]int{{0, 1}}},
		{name: "pad_dyn", attrs: ir.A("mode", "reflect"), in: in(x(3, 4), v(2, -1, 1, 5))},
		{name: "pad_dyn", attrs: ir.A("mode", "edge", "axes", []int{0}), in: in(x(3, 4), v(2, 4)), dyn: [][]int{{0}}},
		{name: "pad_dyn_grad", attrs: ir.A("mode", "reflect"), in: in(x(6, 9), v(2, -1, 1, 5))},
		{name: "pad_dyn_grad", attrs: ir.A("mode", "edge", "axes", []int{1}), in: in(x(3, 6), v(1, 2)), dyn: [][]int{{0, 1}}},
	}
	for _, c := range cases {
		for mode := range shpModeNames {
			t.Run(fmt.Sprintf("%s%s/%s/%v", c.name, c.attrs, shpModeNames[mode], c.dyn), func(t *testing.T) {
				shpCheckGrad(t, mode, c)
			})
		}
	}
	for _, c := range cases {
		release(c.in...)
	}
}

func TestPadDynMemory(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 7))
	a := memory.New(memory.Options{})
	x := randTensor(t, a, r, tensor.F32, 2, 3, 9, 7)
	good, bad := dynVec(t, tensor.I64, 1, 2, 3, 1), dynVec(t, tensor.I64, -10, 0, 0, 0)
	val, err := tensor.Scalar(a, tensor.F32, 2)
	if err != nil {
		t.Fatal(err)
	}
	attrs := ir.A("axes", []int{2, 3}, "mode", "reflect")
	base := a.Stats().Allocated.Current
	for range 50 {
		out := mustRun(t, a, "pad_dyn", attrs, x, good)
		dx := mustRun(t, a, "pad_dyn_grad", attrs, out[0], good)
		c := mustRun(t, a, "pad_dyn", ir.A("axes", []int{2, 3}), x, good, val)
		release(out[0], dx[0], c[0])
		if _, err := runOp(t, a, "pad_dyn", attrs, x, bad); err == nil {
			t.Fatal("no error")
		}
		wantAllocated(t, a, base)
	}
	checkOOMSweep(t, "pad_dyn", attrs, x, good)
	checkOOMSweep(t, "pad_dyn", ir.A("axes", []int{2, 3}), x, good, val)
	checkOOMSweep(t, "pad_dyn_grad", attrs, x, good)
	release(x, good, bad, val)
	wantAllocated(t, a, 0)
}
