package ops_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Tests of the rounding, sign, trigonometric and hyperbolic ops, erf,
// is_nan and is_inf (unary_math.go), and of the gradients of mod, fmod and
// reduce_prod.

func ewSignRef(x float64) float64 {
	if x == 0 || math.IsNaN(x) {
		return x
	}
	return math.Copysign(1, x)
}

// ewMathRefs pairs each op with package math and a map from the test's
// random values in [-2, 2) into the interesting part of its domain.
var ewMathRefs = []struct {
	name   string
	ref    func(float64) float64
	ints   bool
	domain func(float64) float64
}{
	{"floor", math.Floor, false, func(x float64) float64 { return 3 * x }},
	{"ceil", math.Ceil, false, func(x float64) float64 { return 3 * x }},
	{"round", math.RoundToEven, false, func(x float64) float64 { return math.Round(8*x) / 4 }}, // many halves
	{"sign", ewSignRef, true, nil},
	{"sin", math.Sin, false, func(x float64) float64 { return 5 * x }},
	{"cos", math.Cos, false, func(x float64) float64 { return 5 * x }},
	{"tan", math.Tan, false, nil},
	{"asin", math.Asin, false, func(x float64) float64 { return x / 1.9 }},
	{"acos", math.Acos, false, func(x float64) float64 { return x / 1.9 }},
	{"atan", math.Atan, false, func(x float64) float64 { return 10 * x }},
	{"sinh", math.Sinh, false, func(x float64) float64 { return 10 * x }},
	{"cosh", math.Cosh, false, func(x float64) float64 { return 10 * x }},
	{"asinh", math.Asinh, false, func(x float64) float64 { return 10 * x }},
	{"acosh", math.Acosh, false, func(x float64) float64 { return 1 + 5*math.Abs(x) }},
	{"atanh", math.Atanh, false, func(x float64) float64 { return x / 2.01 }},
	{"erf", math.Erf, false, func(x float64) float64 { return 2 * x }},
}

// TestEwMath compares every op with package math on each dtype and shape:
// exactly, since the f32 kernels round the float64 result once.
func TestEwMath(t *testing.T) {
	ewDebug(t)
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(61, 62))
	for _, op := range ewMathRefs {
		for _, dt := range ewNumDTypes {
			isInt := dt == tensor.I32 || dt == tensor.I64
			if isInt && !op.ints {
				continue
			}
			for _, shape := range ewUnaryShapes {
				what := fmt.Sprintf("%s %s %v", op.name, dt, shape)
				x := randTensor(t, a, r, dt, shape...)
				if op.domain != nil {
					for i := range x.Len() {
						v := op.domain(x.Float64At(i))
						if dt == tensor.F32 {
							x.F32()[i] = float32(v)
						} else {
							x.F64()[i] = v
						}
					}
				}
				xv := ewVals(x)
				out := mustRun(t, a, op.name, nil, x)[0]
				want := make([]float64, len(xv))
				for i, v := range xv {
					want[i] = ewRound(dt, op.ref(v))
				}
				closeEnough(t, what, out, want, shape, 0)
				release(out, x)
				wantAllocated(t, a, 0)
			}
		}
	}
}

// TestEwMathSpecial covers halves, signed zeros, infinities, NaN and the
// ends of the inverse functions' domains.
func TestEwMathSpecial(t *testing.T) {
	a := memory.New(memory.Options{})
	inf, nan, nz := math.Inf(1), math.NaN(), math.Copysign(0, -1)
	xs := []float64{0.5, 1.5, 2.5, -0.5, -2.5, nz, inf, -inf, nan, 2, 1, -1}
	x, _ := tensor.FromF64(a, xs)
	for _, c := range []struct {
		name string
		want []float64
	}{
		{"round", []float64{0, 2, 2, nz, -2, nz, inf, -inf, nan, 2, 1, -1}},
		{"floor", []float64{0, 1, 2, -1, -3, nz, inf, -inf, nan, 2, 1, -1}},
		{"ceil", []float64{1, 2, 3, nz, -2, nz, inf, -inf, nan, 2, 1, -1}},
		{"sign", []float64{1, 1, 1, -1, -1, nz, 1, -1, nan, 1, 1, -1}},
		{"asin", []float64{math.Asin(0.5), nan, nan, math.Asin(-0.5), nan, nz, nan, nan, nan, nan, math.Pi / 2, -math.Pi / 2}},
		{"atanh", []float64{math.Atanh(0.5), nan, nan, math.Atanh(-0.5), nan, nz, nan, nan, nan, nan, inf, -inf}},
		{"acosh", []float64{nan, math.Acosh(1.5), math.Acosh(2.5), nan, nan, nan, inf, nan, nan, math.Acosh(2), 0, nan}},
		{"erf", []float64{math.Erf(0.5), math.Erf(1.5), math.Erf(2.5), math.Erf(-0.5), math.Erf(-2.5), nz, 1, -1, nan, math.Erf(2), math.Erf(1), math.Erf(-1)}},
		{"cosh", []float64{math.Cosh(0.5), math.Cosh(1.5), math.Cosh(2.5), math.Cosh(0.5), math.Cosh(2.5), 1, inf, inf, nan, math.Cosh(2), math.Cosh(1), math.Cosh(1)}},
	} {
		out := mustRun(t, a, c.name, nil, x)[0]
		for i, w := range c.want {
			g := out.F64()[i]
			if !(g == w && math.Signbit(g) == math.Signbit(w) || math.IsNaN(g) && math.IsNaN(w)) {
				t.Errorf("%s(%v) = %v, want %v", c.name, xs[i], g, w)
			}
		}
		release(out)
	}
	i, _ := tensor.FromI32(a, []int32{-5, 0, 7, math.MinInt32, math.MaxInt32})
	s := mustRun(t, a, "sign", nil, i)[0]
	for k, w := range []int32{-1, 0, 1, -1, 1} {
		if s.I32()[k] != w {
			t.Fatalf("sign on i32 = %v", s.I32())
		}
	}
	release(x, i, s)
	wantAllocated(t, a, 0)
}

func TestEwClassify(t *testing.T) {
	ewDebug(t)
	a := memory.New(memory.Options{})
	inf, nan := math.Inf(1), math.NaN()
	xs := []float64{0, -1, inf, -inf, nan, math.MaxFloat32, 3}
	for _, c := range []struct {
		name  string
		attrs ir.Attrs
		want  []bool
	}{
		{"is_nan", nil, []bool{false, false, false, false, true, false, false}},
		{"is_inf", nil, []bool{false, false, true, true, false, false, false}},
		{"is_inf", ir.A("positive", true, "negative", true), []bool{false, false, true, true, false, false, false}},
		{"is_inf", ir.A("negative", false), []bool{false, false, true, false, false, false, false}},
		{"is_inf", ir.A("positive", false), []bool{false, false, false, true, false, false, false}},
		{"is_inf", ir.A("positive", false, "negative", false), []bool{false, false, false, false, false, false, false}},
	} {
		for _, dt := range ewFloatDTypes {
			x, _ := tensor.New(a, dt, 7, 1)
			for i, v := range xs {
				if dt == tensor.F32 {
					x.F32()[i] = float32(v)
				} else {
					x.F64()[i] = v
				}
			}
			out := mustRun(t, a, c.name, c.attrs, x)[0]
			if out.DType() != tensor.Bool || !equalInts(out.Shape(), []int{7, 1}) {
				t.Fatalf("%s%s %s: result %v", c.name, c.attrs, dt, out)
			}
			for i, w := range c.want {
				if out.Bool()[i] != w {
					t.Fatalf("%s%s %s = %v, want %v", c.name, c.attrs, dt, out.Bool(), c.want)
				}
			}
			release(out, x)
			wantAllocated(t, a, 0)
		}
	}
	// Large and empty operands.
	r := rand.New(rand.NewPCG(63, 64))
	for _, shape := range [][]int{{70001}, {0, 3}, {}} {
		x := randTensor(t, a, r, tensor.F32, shape...)
		out := mustRun(t, a, "is_nan", nil, x)[0]
		for _, v := range out.Bool() {
			if v {
				t.Fatalf("is_nan of finite values %v: %v", shape, out.Bool())
			}
		}
		release(out, x)
	}
	wantAllocated(t, a, 0)
}

func TestEwMathInferErrors(t *testing.T) {
	for _, op := range ewMathRefs {
		if !op.ints {
			ewInferErr(t, op.name, nil, []string{"tensor<2xi32>", "f32 or f64"}, ir.TensorOf(ir.I32, 2))
		}
		ewInferErr(t, op.name, nil, []string{"tensor<2xi1>"}, ir.TensorOf(ir.I1, 2))
		ewInferErr(t, op.name, nil, []string{"1 operands"}, ir.TensorOf(ir.F32, 2), ir.TensorOf(ir.F32, 2))
		ewInferType(t, op.name, nil, ir.TensorOf(ir.F64, -1, 3), ir.TensorOf(ir.F64, -1, 3))
	}
	ewInferType(t, "sign", nil, ir.TensorOf(ir.I64, 4), ir.TensorOf(ir.I64, 4))
	for _, op := range []string{"is_nan", "is_inf"} {
		ewInferErr(t, op, nil, []string{"tensor<3xi64>", "f32 or f64"}, ir.TensorOf(ir.I64, 3))
		ewInferType(t, op, nil, ir.TensorOf(ir.I1, -1, 2), ir.TensorOf(ir.F32, -1, 2))
	}
	ewInferErr(t, "is_inf", ir.A("positive", 1), []string{"positive"}, ir.TensorOf(ir.F32, 2))
	ewInferErr(t, "is_inf", ir.A("negative", "no"), []string{"negative"}, ir.TensorOf(ir.F32, 2))
}

func TestEwMathOOMSweep(t *testing.T) {
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(65, 66))
	x := randTensor(t, a, r, tensor.F32, 5, 7)
	for _, op := range ewMathRefs {
		checkOOMSweep(t, op.name, nil, x)
	}
	checkOOMSweep(t, "is_nan", nil, x)
	checkOOMSweep(t, "is_inf", ir.A("positive", false), x)
	checkOOMSweep(t, "is_inf", ir.A("positive", false, "negative", false), x)
	release(x)
	wantAllocated(t, a, 0)
}

// TestEwMathMemory runs the ops many times, including failing runs
// (integer mod by zero, an operand of the wrong dtype), and checks that the
// allocator returns to its baseline.
func TestEwMathMemory(t *testing.T) {
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(67, 68))
	x := randTensor(t, a, r, tensor.F64, 4, 9)
	xi := randTensor(t, a, r, tensor.I64, 4, 9)
	zero, _ := tensor.Zeros(a, tensor.I64, 9)
	base := a.Stats().Allocated.Current
	f32 := ir.TensorOf(ir.F32, 4, 9)
	for range 50 {
		for _, op := range ewMathRefs {
			release(mustRun(t, a, op.name, nil, x)...)
		}
		release(mustRun(t, a, "is_inf", ir.A("negative", false), x)...)
		release(mustRun(t, a, "mod", nil, x, x)...)
		release(mustRun(t, a, "reduce_prod", ir.A("axes", []int{0}), xi)...)
		for _, op := range []string{"mod", "fmod"} {
			if _, err := runOp(t, a, op, nil, xi, zero); err == nil {
				t.Fatalf("%s by zero succeeded", op)
			}
		}
		if _, err := ewRunDynamic(t, a, "sin", nil, []ir.Type{f32}, x); err == nil {
			t.Fatal("sin compiled for f32 accepted f64")
		}
		if got := a.Stats().Allocated.Current; got != base {
			t.Fatalf("allocated %d bytes, baseline %d", got, base)
		}
	}
	release(x, xi, zero)
	wantAllocated(t, a, 0)
}

func TestEwMathBuilders(t *testing.T) {
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F64, 4)
	vals := []*ir.Value{
		ops.Floor(b, x), ops.Ceil(b, x), ops.Round(b, x), ops.Sign(b, x),
		ops.Sin(b, x), ops.Cos(b, x), ops.Tan(b, x), ops.Asin(b, x), ops.Acos(b, x), ops.Atan(b, x),
		ops.Sinh(b, x), ops.Cosh(b, x), ops.Asinh(b, x), ops.Acosh(b, x), ops.Atanh(b, x), ops.Erf(b, x),
	}
	nan, inf := ops.IsNaN(b, x), ops.IsInf(b, x, true, false)
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		if v.Def().Name() != ewMathRefs[i].name || !v.Type().Equal(x.Type()) {
			t.Fatalf("builder %d made %s of type %s", i, v.Def().Name(), v.Type())
		}
	}
	if nan.Def().Name() != "is_nan" || inf.Def().Name() != "is_inf" || !inf.Type().Equal(ir.TensorOf(ir.I1, 4)) {
		t.Fatalf("builders made %s, %s %s", nan.Def().Name(), inf.Def().Name(), inf.Type())
	}
	if pos, _ := inf.Def().Attrs.Bool("positive"); !pos {
		t.Fatal("IsInf lost positive")
	}
}

func TestEwMathGrad(t *testing.T) {
	var cases []ewgCase
	for _, s := range [][]int{{5, 3}, {}, {2, 3, 4}} {
		cases = append(cases,
			ewgCase{name: "sin", in: []ewgIn{ewgR(-4, 4, s...)}},
			ewgCase{name: "cos", in: []ewgIn{ewgR(-4, 4, s...)}},
			ewgCase{name: "tan", in: []ewgIn{ewgR(-1.2, 1.2, s...)}},
			ewgCase{name: "asin", in: []ewgIn{ewgR(-0.9, 0.9, s...)}},
			ewgCase{name: "acos", in: []ewgIn{ewgR(-0.9, 0.9, s...)}},
			ewgCase{name: "atan", in: []ewgIn{ewgR(-3, 3, s...)}},
			ewgCase{name: "sinh", in: []ewgIn{ewgR(-3, 3, s...)}},
			ewgCase{name: "cosh", in: []ewgIn{ewgR(-3, 3, s...)}},
			ewgCase{name: "asinh", in: []ewgIn{ewgR(-3, 3, s...)}},
			ewgCase{name: "acosh", in: []ewgIn{ewgR(1.1, 4, s...)}},
			ewgCase{name: "atanh", in: []ewgIn{ewgR(-0.9, 0.9, s...)}},
			ewgCase{name: "erf", in: []ewgIn{ewgR(-2.5, 2.5, s...)}},
		)
	}
	for _, p := range ewgPairs {
		// Divisors away from 0 and quotients of moderate size: the
		// quotient's jumps are far from most samples.
		cases = append(cases,
			ewgCase{name: "mod", in: []ewgIn{ewgR(-5, 5, p[0]...), ewgR(0.7, 1.9, p[1]...)}},
			ewgCase{name: "mod", in: []ewgIn{ewgR(-5, 5, p[0]...), ewgR(-1.9, -0.7, p[1]...)}},
			ewgCase{name: "fmod", in: []ewgIn{ewgR(-5, 5, p[0]...), ewgR(0.7, 1.9, p[1]...)}},
			ewgCase{name: "fmod", in: []ewgIn{ewgR(-5, 5, p[0]...), ewgR(-1.9, -0.7, p[1]...)}},
		)
	}
	for _, c := range ewgAxes {
		for _, keep := range []bool{false, true} {
			attrs := ir.A("keepdim", keep)
			if c.axes != nil {
				attrs = ir.A("axes", c.axes, "keepdim", keep)
			}
			cases = append(cases, ewgCase{name: "reduce_prod", attrs: attrs, in: []ewgIn{ewgR(-1.5, 1.5, c.shape...)}})
		}
	}
	ewgRunTable(t, cases)
}

// TestEwProdGradZeros checks reduce_prod's gradient where groups hold no,
// one and two zeros (the product is linear in each element, so finite
// differences are exact there too).
func TestEwProdGradZeros(t *testing.T) {
	x := ewgF64(t, []float64{
		1.5, -2, 0.5, 3,
		1.5, 0, 0.5, 3,
		0, -2, 0, 3,
	}, 3, 4)
	defer x.Release()
	for _, attrs := range []ir.Attrs{
		ir.A("axes", []int{1}),
		ir.A("axes", []int{-1}, "keepdim", true),
		ir.A("axes", []int{0}),
		ir.A(),
	} {
		checkOpGrad(t, "reduce_prod", attrs, x)
	}
	g := ewgGradsOf(t, "reduce_prod", ir.A("axes", []int{1}), x)
	ewgSame(t, "reduce_prod grad", g[0], []float64{
		-3, 2.25, -9, -1.5,
		0, 2.25, 0, 0,
		0, 0, 0, 0,
	})
}

// TestEwMathGradF32 runs the rules on f32 operands and compares with f64.
func TestEwMathGradF32(t *testing.T) {
	r := rand.New(rand.NewPCG(69, 70))
	for _, tc := range []ewgCase{
		{name: "sin", in: []ewgIn{ewgU(5)}},
		{name: "tan", in: []ewgIn{ewgU(5)}},
		{name: "acos", in: []ewgIn{ewgR(-0.9, 0.9, 5)}},
		{name: "acosh", in: []ewgIn{ewgR(1.1, 3, 5)}},
		{name: "erf", in: []ewgIn{ewgU(5)}},
		{name: "fmod", in: []ewgIn{ewgR(-5, 5, 3, 4), ewgR(0.7, 1.9, 4)}},
		{name: "reduce_prod", attrs: ir.A("axes", []int{1}), in: []ewgIn{ewgU(3, 4)}},
	} {
		t.Run(tc.String(), func(t *testing.T) {
			var in64, in32 []*tensor.Tensor
			for _, spec := range tc.in {
				x := spec.make(t, r)
				for i, v := range x.F64() {
					x.F64()[i] = float64(float32(v))
				}
				x32 := ewgToF32(t, x)
				defer x.Release()
				defer x32.Release()
				in64, in32 = append(in64, x), append(in32, x32)
			}
			want := ewgGradsOf(t, tc.name, tc.attrs, in64...)
			got := ewgGradsOf(t, tc.name, tc.attrs, in32...)
			for k := range want {
				for i := range want[k] {
					if math.Abs(got[k][i]-want[k][i]) > 1e-5*(1+math.Abs(want[k][i])) {
						t.Errorf("operand %d [%d]: f32 %g, f64 %g", k, i, got[k][i], want[k][i])
					}
				}
			}
		})
	}
}

// TestEwMathMarked checks how each op differentiates, and that a loss
// through the NoGrad ops differentiates to zeros without error.
func TestEwMathMarked(t *testing.T) {
	noGrad := map[string]bool{"floor": true, "ceil": true, "round": true, "sign": true, "is_nan": true, "is_inf": true}
	names := []string{"is_nan", "is_inf", "mod", "fmod", "reduce_prod"}
	for _, op := range ewMathRefs {
		names = append(names, op.name)
	}
	for _, n := range names {
		d, ok := ops.Lookup(n)
		if !ok {
			t.Fatalf("%s is not registered", n)
		}
		if d.NoGrad != noGrad[n] || (d.Grad == nil) != noGrad[n] {
			t.Errorf("%s: NoGrad %v, Grad set %v", n, d.NoGrad, d.Grad != nil)
		}
	}
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F64, 2, 3)
	y := ops.Add(b, ops.Floor(b, x), ops.Sign(b, ops.Round(b, ops.Ceil(b, x))))
	y = ops.Where(b, ops.LogicalOr(b, ops.IsNaN(b, x), ops.IsInf(b, x, true, true)), x, y)
	g, err := autodiff.Backward(b, ops.ReduceSum(b, y, nil, false), []*ir.Value{x})
	if err != nil || g[0] == nil {
		t.Fatalf("backward through the NoGrad ops: %v", err)
	}
}
