package ops_test

import (
	"errors"
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

var ewArithRefs = []struct {
	name   string
	floats bool // floats only
	ref    func(x, y float64, isInt bool) float64
}{
	{"add", false, func(x, y float64, _ bool) float64 { return x + y }},
	{"subtract", false, func(x, y float64, _ bool) float64 { return x - y }},
	{"multiply", false, func(x, y float64, _ bool) float64 { return x * y }},
	{"divide", false, func(x, y float64, isInt bool) float64 {
		if isInt {
			return math.Trunc(x / y)
		}
		return x / y
	}},
	{"maximum", false, func(x, y float64, _ bool) float64 { return math.Max(x, y) }},
	{"minimum", false, func(x, y float64, _ bool) float64 { return math.Min(x, y) }},
	{"pow", true, func(x, y float64, _ bool) float64 { return math.Pow(x, y) }},
	{"mod", false, func(x, y float64, _ bool) float64 { return x - y*math.Floor(x/y) }},
	{"fmod", false, func(x, y float64, _ bool) float64 { return x - y*math.Trunc(x/y) }},
}

func TestEwArith(t *testing.T) {
	ewDebug(t)
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(11, 12))
	for _, op := range ewArithRefs {
		for _, dt := range ewNumDTypes {
			if op.floats && (dt == tensor.I32 || dt == tensor.I64) {
				continue
			}
			isInt := dt == tensor.I32 || dt == tensor.I64
			for _, sh := range ewPairs {
				what := fmt.Sprintf("%s %s %v %v", op.name, dt, sh[0], sh[1])
				x := ewNew(t, a, r, dt, false, sh[0])
				y := ewNew(t, a, r, dt, op.name == "divide" || op.name == "mod" || op.name == "fmod", sh[1])
				out := mustRun(t, a, op.name, nil, x, y)[0]
				shape := ewOut(sh[0], sh[1])
				xv, yv := ewVals(x), ewVals(y)
				want := make([]float64, ewNumel(shape))
				for i := range want {
					want[i] = ewRound(dt, op.ref(xv[ewIndex(shape, sh[0], i)], yv[ewIndex(shape, sh[1], i)], isInt))
				}
				closeEnough(t, what, out, want, shape, ewTol(dt))
				release(out, x, y)
				wantAllocated(t, a, 0)
			}
		}
	}
}

// TestEwArithSpecial covers NaN, infinities and integer edge cases.
func TestEwArithSpecial(t *testing.T) {
	a := memory.New(memory.Options{})
	nan := math.NaN()
	x, _ := tensor.FromF64(a, []float64{nan, 1, math.Inf(1), math.Copysign(0, -1)})
	y, _ := tensor.FromF64(a, []float64{1, nan, 2, 0})
	mx := mustRun(t, a, "maximum", nil, x, y)[0]
	mn := mustRun(t, a, "minimum", nil, x, y)[0]
	if v := mx.F64(); !math.IsNaN(v[0]) || !math.IsNaN(v[1]) || v[2] != math.Inf(1) || math.Signbit(v[3]) {
		t.Fatalf("maximum = %v", v)
	}
	if v := mn.F64(); !math.IsNaN(v[0]) || !math.IsNaN(v[1]) || v[2] != 2 || !math.Signbit(v[3]) {
		t.Fatalf("minimum = %v", v)
	}
	p, _ := tensor.FromI32(a, []int32{7, -7, 7, -7, math.MinInt32})
	q, _ := tensor.FromI32(a, []int32{2, 2, -2, -2, -1})
	d := mustRun(t, a, "divide", nil, p, q)[0]
	for i, w := range []int32{3, -3, -3, 3, math.MinInt32} {
		if d.I32()[i] != w {
			t.Fatalf("int32 divide = %v", d.I32())
		}
	}
	release(x, y, mx, mn, p, q, d)
	wantAllocated(t, a, 0)
}

func TestEwDivideByZero(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.I32, tensor.I64} {
		a := memory.New(memory.Options{})
		x, _ := tensor.Scalar(a, dt, 1)
		y, _ := tensor.Zeros(a, dt, 3)
		for _, op := range []string{"divide", "mod", "fmod"} {
			_, err := runOp(t, a, op, nil, x, y)
			if err == nil || !strings.Contains(err.Error(), op) || !strings.Contains(err.Error(), "division by zero") {
				t.Fatalf("%s %s by zero: %v", dt, op, err)
			}
		}
		release(x, y)
		wantAllocated(t, a, 0)
		// Floats divide by zero to Inf.
		f, _ := tensor.Zeros(a, tensor.F32, 2)
		g := mustRun(t, a, "divide", nil, f, f)[0]
		if !math.IsNaN(float64(g.F32()[0])) {
			t.Fatalf("0/0 = %v", g.F32())
		}
		release(f, g)
		wantAllocated(t, a, 0)
	}
}

func TestEwScale(t *testing.T) {
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(13, 14))
	for _, dt := range ewNumDTypes {
		for _, shape := range [][]int{{}, {0}, {1}, {7, 13}, {70001}} {
			attrs := ir.A("scale", 3.0, "bias", -2.0)
			if dt == tensor.F32 || dt == tensor.F64 {
				attrs = ir.A("scale", 0.5, "bias", 1.25)
			}
			s, _ := attrs.Float("scale")
			b, _ := attrs.Float("bias")
			x := randTensor(t, a, r, dt, shape...)
			out := mustRun(t, a, "scale", attrs, x)[0]
			xv := ewVals(x)
			want := make([]float64, len(xv))
			for i, v := range xv {
				want[i] = ewRound(dt, v*s+b)
			}
			closeEnough(t, fmt.Sprintf("scale %s %v", dt, shape), out, want, shape, ewTol(dt))
			release(x, out)
		}
	}
	// Defaults: scale 1, bias 0.
	x, _ := tensor.FromI64(a, []int64{4, -5})
	out := mustRun(t, a, "scale", nil, x)[0]
	if v := out.I64(); v[0] != 4 || v[1] != -5 {
		t.Fatalf("scale with defaults = %v", v)
	}
	release(x, out)
	wantAllocated(t, a, 0)
}

func TestEwArithInferErrors(t *testing.T) {
	f32 := func(d ...int) ir.Type { return ir.TensorOf(ir.F32, d...) }
	ewInferErr(t, "add", nil, []string{"tensor<2x3xf32>", "tensor<3xi32>"}, f32(2, 3), ir.TensorOf(ir.I32, 3))
	ewInferErr(t, "multiply", nil, []string{"[2 3]", "[4]", "broadcastable"}, f32(2, 3), f32(4))
	ewInferErr(t, "subtract", nil, []string{"[? 3]", "[2 4]"}, f32(-1, 3), f32(2, 4))
	ewInferErr(t, "pow", nil, []string{"tensor<2xi64>"}, ir.TensorOf(ir.I64, 2), ir.TensorOf(ir.I64, 2))
	ewInferErr(t, "add", nil, []string{"tensor<2xi1>"}, ir.TensorOf(ir.I1, 2), ir.TensorOf(ir.I1, 2))
	ewInferErr(t, "add", nil, []string{"2 operands"}, f32(2))
	ewInferErr(t, "scale", ir.A("scale", 0.5), []string{"scale:0.5", "i32"}, ir.TensorOf(ir.I32, 2))
	ewInferErr(t, "scale", ir.A("bias", "x"), []string{"bias"}, f32(2))
	ewInferErr(t, "scale", nil, []string{"tensor<i1>"}, ir.Scalar(ir.I1))
	// Dynamic dims.
	ewInferType(t, "add", nil, f32(-1, 3), f32(-1, 3), f32(3))
	ewInferType(t, "add", nil, f32(4, 3), f32(-1, 3), f32(4, 1))
	ewInferType(t, "maximum", nil, f32(-1, 5), f32(-1, 1), f32(1, 5))
	ewInferType(t, "scale", ir.A("scale", 2, "bias", 1), ir.TensorOf(ir.I64, -1), ir.TensorOf(ir.I64, -1))
}

// TestEwRunTimeShapes runs ops compiled for dynamic dims on tensors whose
// shapes do not broadcast.
func TestEwRunTimeShapes(t *testing.T) {
	a := memory.New(memory.Options{})
	x, _ := tensor.Zeros(a, tensor.F32, 2, 3)
	y, _ := tensor.Zeros(a, tensor.F32, 4, 3)
	dyn := ir.TensorOf(ir.F32, -1, 3)
	_, err := ewRunDynamic(t, a, "add", nil, []ir.Type{dyn, dyn}, x, y)
	if err == nil || !strings.Contains(err.Error(), "add") || !strings.Contains(err.Error(), "[2 3] and [4 3]") {
		t.Fatalf("add on [2 3] and [4 3]: %v", err)
	}
	z, _ := tensor.Zeros(a, tensor.I32, 2, 3)
	if _, err = ewRunDynamic(t, a, "add", nil, []ir.Type{dyn, dyn}, x, z); err == nil {
		t.Fatal("add accepted an i32 tensor compiled for f32")
	}
	release(x, y, z)
	wantAllocated(t, a, 0)
}

func TestEwArithOOMSweep(t *testing.T) {
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(15, 16))
	for _, op := range ewArithRefs {
		x := randTensor(t, a, r, tensor.F32, 3, 1, 7)
		y := randTensor(t, a, r, tensor.F32, 5, 1)
		checkOOMSweep(t, op.name, nil, x, y)
		release(x, y)
	}
	x := randTensor(t, a, r, tensor.F64, 33)
	checkOOMSweep(t, "scale", ir.A("scale", 2.0, "bias", 1.0), x)
	release(x)
	// A failing kernel releases its result.
	p, _ := tensor.FromI64(a, []int64{1, 2, 3})
	q, _ := tensor.FromI64(a, []int64{1, 0, 3})
	var oom *memory.ResourceExhausted
	if _, err := runOp(t, a, "divide", nil, p, q); err == nil || errors.As(err, &oom) {
		t.Fatalf("divide by zero: %v", err)
	}
	release(p, q)
	wantAllocated(t, a, 0)
}

func TestEwArithBuilders(t *testing.T) {
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F32, 2, 3)
	y := ops.Data(b, "y", ir.F32, 3)
	vals := map[string]*ir.Value{
		"add":      ops.Add(b, x, y),
		"subtract": ops.Subtract(b, x, y),
		"multiply": ops.Multiply(b, x, y),
		"divide":   ops.Divide(b, x, y),
		"maximum":  ops.Maximum(b, x, y),
		"minimum":  ops.Minimum(b, x, y),
		"pow":      ops.Pow(b, x, y),
		"mod":      ops.Mod(b, x, y),
		"fmod":     ops.Fmod(b, x, y),
		"scale":    ops.Scale(b, x, 2, 1),
	}
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	for name, v := range vals {
		if v.Def().Name() != name || !v.Type().Equal(ir.TensorOf(ir.F32, 2, 3)) {
			t.Fatalf("%s builder made %s of type %s", name, v.Def().Name(), v.Type())
		}
	}
}

func BenchmarkEwAdd(b *testing.B) {
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(1, 1))
	x := randTensor(b, a, r, tensor.F32, 1024, 1024)
	y := randTensor(b, a, r, tensor.F32, 1024)
	b.SetBytes(3 * 4 << 20)
	for b.Loop() {
		out := mustRun(b, a, "add", nil, x, y)
		release(out...)
	}
}

// TestEwTextRoundTrip prints and parses a program using the builders of
// this family, including dynamic dims and optional attributes.
func TestEwTextRoundTrip(t *testing.T) {
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F32, -1, 4)
	s := ops.ReduceSum(b, x, nil, false)
	c := ops.Cast(b, s, ir.I64)
	f := ops.FullLike(b, c, 2, ir.InvalidDType)
	g := ops.Gelu(b, x, true)
	w := ops.Where(b, ops.GreaterThan(b, g, x), g, ops.Clip(b, x, -1, 1))
	ops.Fetch(b, "out", f)
	ops.Fetch(b, "w", ops.Argmax(b, w, -1, true))
	p, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	text := p.String()
	q, err := ir.Parse("t.pir", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if q.String() != text {
		t.Fatalf("round trip differs:\n%s", q.String())
	}
}
