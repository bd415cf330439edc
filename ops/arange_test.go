package ops_test

import (
	"math"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
)

func TestShpArange(t *testing.T) {
	shpDebug(t)
	a := memory.New(memory.Options{})
	cases := []struct {
		attrs ir.Attrs
		dt    ir.DType
		want  []float64
	}{
		{ir.A("end", 5), ir.I64, []float64{0, 1, 2, 3, 4}},
		{ir.A("start", 2, "end", 5), ir.I64, []float64{2, 3, 4}},
		{ir.A("start", 0, "end", 2.0, "step", 0.5), ir.F32, []float64{0, 0.5, 1, 1.5}},
		{ir.A("start", 1.0, "end", 2.0, "step", 0.3, "dtype", ir.F64), ir.F64, []float64{1, 1.3, 1.6, 1.9}},
		{ir.A("start", 5, "end", 0, "step", -2, "dtype", ir.I32), ir.I32, []float64{5, 3, 1}},
		{ir.A("start", 5.0, "end", -1.0, "step", -3.0, "dtype", ir.I64), ir.I64, []float64{5, 2}},
		{ir.A("start", 0, "end", 0), ir.I64, []float64{}},
		{ir.A("start", 0, "end", 5, "step", -1), ir.I64, []float64{}},
		{ir.A("start", 3, "end", 4, "step", 100, "dtype", ir.F32), ir.F32, []float64{3}},
		{ir.A("start", -7, "end", 7, "step", 7, "dtype", ir.F64), ir.F64, []float64{-7, 0}},
		{ir.A("start", 0.1, "end", 0.35, "step", 0.05, "dtype", ir.F32), ir.F32, []float64{0.1, 0.15, 0.2, 0.25, 0.3}},
	}
	for _, c := range cases {
		out := mustRun(t, a, "arange", c.attrs)[0]
		if ir.DType(out.DType()) != c.dt {
			t.Fatalf("arange %s: dtype %v, want %v", c.attrs, out.DType(), c.dt)
		}
		closeEnough(t, "arange "+c.attrs.String(), out, c.want, []int{len(c.want)}, 1e-7)
		out.Release()
	}
	// Large, in parallel; element i is exactly start + i*step.
	out := mustRun(t, a, "arange", ir.A("start", -3.0, "end", 1e5, "step", 0.7, "dtype", ir.F64))[0]
	if n := int(math.Ceil((1e5 + 3) / 0.7)); out.Len() != n {
		t.Fatalf("arange large: %d elements, want %d", out.Len(), n)
	}
	for i, v := range out.F64() {
		if v != -3+float64(i)*0.7 {
			t.Fatalf("arange large: element %d = %v", i, v)
		}
	}
	out.Release()
	out = mustRun(t, a, "arange", ir.A("start", 1<<40, "end", 1<<40+100000, "step", 3))[0]
	for i, v := range out.I64() {
		if v != 1<<40+3*int64(i) {
			t.Fatalf("arange i64: element %d = %v", i, v)
		}
	}
	out.Release()
	wantAllocated(t, a, 0)
	if n := shpOOMSweep(t, "arange", ir.A("start", 0, "end", 100, "dtype", ir.F32)); n < 6 {
		t.Fatalf("arange failed under %d limits", n)
	}
	for _, c := range []struct {
		attrs ir.Attrs
		want  string
	}{
		{ir.A("start", 0, "end", 5, "step", 0), "step is 0"},
		{ir.A("end", 5, "dtype", ir.I1), "i1"},
		{ir.A("end", 5.5, "dtype", ir.I32), "integers"},
		{ir.A("end", 3e9, "dtype", ir.I32), "i32"},
		{ir.A("end", math.Inf(1), "dtype", ir.F32), "not finite"},
		{ir.A("end", 1e15, "dtype", ir.F32), "2^40"},
		{ir.A("start", 0), "end"},
	} {
		shpWantErr(t, "arange", c.attrs, nil, c.want)
	}
	b := ir.NewBuilder(ir.NewProgram())
	v := ops.Arange(b, ir.F64, 0, 1, 0.25)
	if !v.Type().Equal(shpT(ir.F64, 4)) || b.Err() != nil {
		t.Fatalf("Arange: %v %v", v.Type(), b.Err())
	}
}
