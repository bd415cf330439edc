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

// ewCastInput returns a tensor of dt with fractional, negative, zero and
// large values where dt allows.
func ewCastInput(t testing.TB, a *memory.Allocator, r *rand.Rand, dt tensor.DType, shape []int) *tensor.Tensor {
	x := randTensor(t, a, r, dt, shape...)
	special := []float64{-2.75, -1, -0.5, 0, 0.5, 0.999, 1, 3.5, 1e6 + 0.5}
	for i := 0; i < x.Len(); i++ {
		v := special[i%len(special)]
		switch dt {
		case tensor.F32:
			x.F32()[i] = float32(v)
		case tensor.F64:
			x.F64()[i] = v
		case tensor.I32:
			x.I32()[i] = int32(v * 3)
		case tensor.I64:
			x.I64()[i] = int64(v*3) << 20
		}
	}
	return x
}

func TestEwCast(t *testing.T) {
	ewDebug(t)
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(41, 42))
	for _, from := range ewAllDTypes {
		for _, to := range ewAllDTypes {
			for _, shape := range [][]int{{}, {0}, {1}, {3, 0}, {9}, {2, 3, 5}, {70001}} {
				what := fmt.Sprintf("cast %s->%s %v", from, to, shape)
				x := ewCastInput(t, a, r, from, shape)
				out := mustRun(t, a, "cast", ir.A("dtype", ir.DType(to)), x)[0]
				if from == to {
					if out.Storage() != x.Storage() || x.Refs() != 2 {
						t.Fatalf("%s: not shared (refs %d)", what, x.Refs())
					}
				}
				xv := ewVals(x)
				want := make([]float64, len(xv))
				for i, v := range xv {
					want[i] = ewRound(to, math.Trunc(v))
					if to == tensor.F32 || to == tensor.F64 || to == tensor.Bool {
						want[i] = ewRound(to, v)
					}
					if from == tensor.I64 && to == tensor.I32 {
						want[i] = float64(int32(int64(v))) // wraps
					}
				}
				closeEnough(t, what, out, want, shape, 0)
				release(out, x)
				wantAllocated(t, a, 0)
			}
		}
	}
}

func TestEwAssign(t *testing.T) {
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(43, 44))
	for _, dt := range ewAllDTypes {
		x := randTensor(t, a, r, dt, 3, 4)
		before := a.Stats().Allocated.Current
		out := mustRun(t, a, "assign", nil, x)[0]
		if out.Storage() != x.Storage() || x.Refs() != 2 || a.Stats().Allocated.Current != before {
			t.Fatalf("assign %s copied (refs %d)", dt, x.Refs())
		}
		release(out, x)
		wantAllocated(t, a, 0)
	}
}

func TestEwFullLike(t *testing.T) {
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(45, 46))
	for _, from := range ewAllDTypes {
		for _, to := range append([]tensor.DType{tensor.Invalid}, ewAllDTypes...) {
			for _, shape := range [][]int{{}, {0}, {2, 3}, {70001}} {
				want := to
				if to == tensor.Invalid {
					want = from
				}
				// The value must be one the dtype holds exactly; others
				// are refused (TestFullValueMustFit).
				value := map[tensor.DType]float64{tensor.F32: 2.5, tensor.F64: 2.5, tensor.I32: 2, tensor.I64: 2, tensor.Bool: 1}[want]
				attrs := ir.A("value", value)
				if to != tensor.Invalid {
					attrs = attrs.With("dtype", ir.DType(to))
				}
				x := randTensor(t, a, r, from, shape...)
				out := mustRun(t, a, "full_like", attrs, x)[0]
				if out.DType() != want {
					t.Fatalf("full_like %s%s: dtype %s", from, attrs, out.DType())
				}
				vals := make([]float64, x.Len())
				for i := range vals {
					vals[i] = value
				}
				closeEnough(t, fmt.Sprintf("full_like %s%s %v", from, attrs, shape), out, vals, shape, 0)
				release(out, x)
			}
		}
	}
	wantAllocated(t, a, 0)
}

func TestEwCastInferErrors(t *testing.T) {
	ewInferErr(t, "cast", nil, []string{"dtype"}, ir.TensorOf(ir.F32, 2))
	ewInferErr(t, "cast", ir.A("dtype", "f32"), []string{"dtype"}, ir.TensorOf(ir.F32, 2))
	ewInferErr(t, "full_like", nil, []string{"value"}, ir.TensorOf(ir.F32, 2))
	ewInferErr(t, "full_like", ir.A("value", 1, "dtype", 3), []string{"dtype"}, ir.TensorOf(ir.F32, 2))
	ewInferErr(t, "assign", nil, []string{"1 operands"})
	ewInferType(t, "cast", ir.A("dtype", ir.I1), ir.TensorOf(ir.I1, -1, 2), ir.TensorOf(ir.F32, -1, 2))
	ewInferType(t, "full_like", ir.A("value", 1), ir.TensorOf(ir.F32, -1), ir.TensorOf(ir.F32, -1))
	ewInferType(t, "full_like", ir.A("value", 1, "dtype", ir.I64), ir.TensorOf(ir.I64, 3, -1), ir.TensorOf(ir.F32, 3, -1))
	ewInferType(t, "assign", nil, ir.TensorOf(ir.I1, -1), ir.TensorOf(ir.I1, -1))
}

func TestEwCastOOMSweep(t *testing.T) {
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(47, 48))
	x := randTensor(t, a, r, tensor.F32, 4, 9)
	for _, to := range ewAllDTypes {
		checkOOMSweep(t, "cast", ir.A("dtype", ir.DType(to)), x)
		checkOOMSweep(t, "full_like", ir.A("value", 1, "dtype", ir.DType(to)), x)
	}
	checkOOMSweep(t, "assign", nil, x)
	release(x)
	wantAllocated(t, a, 0)
}

func TestEwCastBuilders(t *testing.T) {
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F32, 2, 3)
	c := ops.Cast(b, x, ir.I64)
	s := ops.Assign(b, x)
	f := ops.FullLike(b, x, 1, ir.InvalidDType)
	g := ops.FullLike(b, x, 1, ir.I1)
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		v    *ir.Value
		want ir.Type
	}{{c, ir.TensorOf(ir.I64, 2, 3)}, {s, x.Type()}, {f, x.Type()}, {g, ir.TensorOf(ir.I1, 2, 3)}} {
		if !c.v.Type().Equal(c.want) {
			t.Fatalf("%s: type %s, want %s", c.v.Def().Name(), c.v.Type(), c.want)
		}
	}
	if f.Def().Attrs.Has("dtype") {
		t.Fatal("FullLike with InvalidDType wrote a dtype attribute")
	}
}

func TestFullValueMustFit(t *testing.T) {
	cases := []struct {
		value any
		dt    ir.DType
		want  string // "" means accepted
	}{
		{2.5, ir.I32, "value 2.5 is not an integer i32 can hold"},
		{math.NaN(), ir.I64, "value nan is not an integer i64 can hold"},
		{math.Inf(1), ir.I32, "value inf is not an integer i32 can hold"},
		{int64(math.MaxInt32) + 1, ir.I32, "value 2147483648 overflows i32"},
		{float64(1 << 63), ir.I64, "is not an integer i64 can hold"},
		{int64(2), ir.I1, "value 2 is not a bool (want 0 or 1)"},
		{1e300, ir.F32, "value 1e+300 overflows f32"},
		{int64(math.MaxInt64), ir.I64, ""},
		{int64(math.MinInt32), ir.I32, ""},
		{math.Inf(-1), ir.F32, ""},
		{math.NaN(), ir.F32, ""},
		{1e300, ir.F64, ""},
		{int64(1), ir.I1, ""},
	}
	for _, tc := range cases {
		var attr ir.Attr = ir.Float(0)
		switch v := tc.value.(type) {
		case int64:
			attr = ir.Int(v)
		case float64:
			attr = ir.Float(v)
		}
		for _, op := range []string{"full", "full_like"} {
			attrs := ir.Attrs{{Name: "value", Value: attr}, {Name: "dtype", Value: tc.dt}}
			var in []ir.Type
			if op == "full" {
				attrs = append(attrs, ir.NamedAttr{Name: "shape", Value: ir.List{ir.Int(2)}})
			} else {
				in = []ir.Type{ir.TensorOf(ir.F32, 2)}
			}
			d, _ := ops.Lookup(op)
			_, err := d.Infer(in, attrs)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%s value %v dtype %s: %v", op, tc.value, tc.dt, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%s value %v dtype %s: error %v, want %q", op, tc.value, tc.dt, err, tc.want)
			}
		}
	}
}
