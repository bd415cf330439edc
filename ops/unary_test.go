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

func ewSigmoidRef(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

var ewUnaryRefs = []struct {
	name  string
	attrs ir.Attrs
	ints  bool // also on i32/i64
	ref   func(x float64) float64
}{
	{"relu", nil, true, func(x float64) float64 { return math.Max(x, 0) }},
	{"sigmoid", nil, false, ewSigmoidRef},
	{"tanh", nil, false, math.Tanh},
	{"exp", nil, false, math.Exp},
	{"log", nil, false, math.Log},
	{"sqrt", nil, false, math.Sqrt},
	{"rsqrt", nil, false, func(x float64) float64 { return 1 / math.Sqrt(x) }},
	{"abs", nil, true, math.Abs},
	{"neg", nil, true, func(x float64) float64 { return -x }},
	{"square", nil, true, func(x float64) float64 { return x * x }},
	{"gelu", nil, false, func(x float64) float64 { return x * 0.5 * (1 + math.Erf(x/math.Sqrt2)) }},
	{"gelu", ir.A("approximate", false), false, func(x float64) float64 { return x * 0.5 * (1 + math.Erf(x/math.Sqrt2)) }},
	{"gelu", ir.A("approximate", true), false, func(x float64) float64 {
		return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
	}},
	{"silu", nil, false, func(x float64) float64 { return x * ewSigmoidRef(x) }},
	{"softplus", nil, false, func(x float64) float64 { return math.Log(1 + math.Exp(x)) }},
	{"clip", ir.A("min", -1.5, "max", 0.5), true, func(x float64) float64 { return math.Min(math.Max(x, -1.5), 0.5) }},
	{"clip", ir.A("min", -3, "max", 2), true, func(x float64) float64 { return math.Min(math.Max(x, -3), 2) }},
}

var ewUnaryShapes = [][]int{{}, {0}, {1}, {3, 0}, {1, 1}, {7}, {7, 13}, {2, 3, 5}, {70001}}

func TestEwUnary(t *testing.T) {
	ewDebug(t)
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(21, 22))
	for _, op := range ewUnaryRefs {
		for _, dt := range ewNumDTypes {
			isInt := dt == tensor.I32 || dt == tensor.I64
			if isInt && !op.ints {
				continue
			}
			for _, shape := range ewUnaryShapes {
				what := fmt.Sprintf("%s%s %s %v", op.name, op.attrs, dt, shape)
				x := randTensor(t, a, r, dt, shape...)
				out := mustRun(t, a, op.name, op.attrs, x)[0]
				xv := ewVals(x)
				want := make([]float64, len(xv))
				for i, v := range xv {
					// Integer clip keeps the integers inside [min, max].
					w := op.ref(v)
					if isInt && op.name == "clip" {
						lo, _ := op.attrs.Float("min")
						hi, _ := op.attrs.Float("max")
						w = math.Min(math.Max(v, math.Ceil(lo)), math.Floor(hi))
					}
					want[i] = ewRound(dt, w)
				}
				tol := ewTol(dt)
				if dt == tensor.F64 {
					tol = 1e-12
				}
				closeEnough(t, what, out, want, shape, tol)
				release(out, x)
				wantAllocated(t, a, 0)
			}
		}
	}
}

// TestEwUnaryExtremes checks the numerically delicate ops far out.
func TestEwUnaryExtremes(t *testing.T) {
	a := memory.New(memory.Options{})
	xs := []float64{-1000, -40, -1e-8, 0, 1e-8, 40, 1000, math.Inf(-1), math.Inf(1), math.NaN()}
	x, _ := tensor.FromF64(a, xs)
	check := func(name string, attrs ir.Attrs, want []float64) {
		t.Helper()
		out := mustRun(t, a, name, attrs, x)[0]
		for i, w := range want {
			g := out.F64()[i]
			if !(g == w || math.IsNaN(g) && math.IsNaN(w) || math.Abs(g-w) <= 1e-14*math.Abs(w)) {
				t.Fatalf("%s(%v) = %v, want %v", name, xs[i], g, w)
			}
		}
		release(out)
	}
	check("sigmoid", nil, []float64{0, 4.248354255291589e-18, 0.4999999975, 0.5, 0.5000000025, 1, 1, 0, 1, math.NaN()})
	check("softplus", nil, []float64{0, 4.248354255291589e-18, 0.6931471755599453, math.Ln2, 0.6931471855599453, 40, 1000, 0, math.Inf(1), math.NaN()})
	check("gelu", nil, []float64{0, -0, -4.999999960105772e-09, 0, 5.000000039894228e-09, 40, 1000, 0, math.Inf(1), math.NaN()})
	check("relu", nil, []float64{0, 0, 0, 0, 1e-8, 40, 1000, 0, math.Inf(1), math.NaN()})
	release(x)
	// f32 far tails stay finite.
	f, _ := tensor.FromF32(a, []float32{-200, 200})
	out := mustRun(t, a, "sigmoid", nil, f)[0]
	if v := out.F32(); v[0] != 0 || v[1] != 1 {
		t.Fatalf("f32 sigmoid tails = %v", v)
	}
	release(f, out)
	wantAllocated(t, a, 0)
}

func TestEwUnaryInferErrors(t *testing.T) {
	for _, op := range []string{"sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "silu", "softplus", "gelu"} {
		ewInferErr(t, op, nil, []string{"tensor<2x?xi32>", "f32 or f64"}, ir.TensorOf(ir.I32, 2, -1))
	}
	for _, op := range []string{"relu", "abs", "neg", "square"} {
		ewInferErr(t, op, nil, []string{"tensor<3xi1>"}, ir.TensorOf(ir.I1, 3))
		ewInferType(t, op, nil, ir.TensorOf(ir.I64, -1, 2), ir.TensorOf(ir.I64, -1, 2))
	}
	ewInferErr(t, "clip", ir.A("max", 1.0), []string{"min"}, ir.TensorOf(ir.F32, 2))
	ewInferErr(t, "clip", ir.A("min", 1.0), []string{"max"}, ir.TensorOf(ir.F32, 2))
	ewInferErr(t, "gelu", ir.A("approximate", 1), []string{"approximate"}, ir.TensorOf(ir.F32, 2))
	ewInferErr(t, "relu", nil, []string{"1 operands"}, ir.TensorOf(ir.F32, 2), ir.TensorOf(ir.F32, 2))
	ewInferType(t, "gelu", ir.A("approximate", true), ir.TensorOf(ir.F64, -1), ir.TensorOf(ir.F64, -1))
}

func TestEwUnaryOOMSweep(t *testing.T) {
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(23, 24))
	x := randTensor(t, a, r, tensor.F32, 5, 7)
	for _, op := range ewUnaryRefs {
		checkOOMSweep(t, op.name, op.attrs, x)
	}
	release(x)
	wantAllocated(t, a, 0)
}

func TestEwUnaryBuilders(t *testing.T) {
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F64, 4)
	vals := []*ir.Value{
		ops.Relu(b, x), ops.Sigmoid(b, x), ops.Tanh(b, x), ops.Exp(b, x), ops.Log(b, x),
		ops.Sqrt(b, x), ops.Rsqrt(b, x), ops.Abs(b, x), ops.Neg(b, x), ops.Square(b, x),
		ops.Gelu(b, x, true), ops.Silu(b, x), ops.Softplus(b, x), ops.Clip(b, x, -1, 1),
	}
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	names := "relu sigmoid tanh exp log sqrt rsqrt abs neg square gelu silu softplus clip"
	got := ""
	for i, v := range vals {
		if i > 0 {
			got += " "
		}
		got += v.Def().Name()
		if !v.Type().Equal(x.Type()) {
			t.Fatalf("%s: type %s", v.Def().Name(), v.Type())
		}
	}
	if got != names {
		t.Fatalf("builders made %q", got)
	}
}
