package kernels

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// ewRefIndex maps the flat output index i of outShape to the flat index of
// an operand of shape s broadcast to it.
func ewRefIndex(outShape, s []int, i int) int {
	idx, stride := 0, 1
	for d := len(outShape) - 1; d >= 0; d-- {
		c := i % outShape[d]
		i /= outShape[d]
		j := d - (len(outShape) - len(s))
		if j < 0 {
			continue
		}
		if s[j] != 1 {
			idx += c * stride
		}
		stride *= s[j]
	}
	return idx
}

// ewShapePairs are broadcasting cases, including size-0, size-1, scalar
// and prime dims, and shapes that exercise every inner-loop layout.
var ewShapePairs = [][2][]int{
	{{}, {}},
	{{5}, {}},
	{{}, {7}},
	{{3, 5}, {3, 5}},
	{{3, 5}, {5}},
	{{5}, {3, 5}},
	{{3, 5}, {3, 1}},
	{{3, 1}, {1, 5}},
	{{2, 3, 1, 7}, {3, 5, 1}},
	{{1, 1}, {1}},
	{{0, 3}, {3}},
	{{4, 0}, {1}},
	{{2, 1, 3}, {2, 4, 1}},
	{{13, 1, 11}, {1, 7, 11}},
	{{1, 17, 1}, {19, 1, 1}},
	{{257, 300}, {300}},
	{{300, 257}, {300, 1}},
	{{3, 40000}, {3, 1}},
	{{70001}, {70001}},
	{{1}, {70001}},
}

func ewRandF64(r *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = r.Float64()*8 - 4
	}
	return x
}

func ewConv[T Numeric](x []float64) []T {
	out := make([]T, len(x))
	for i, v := range x {
		out[i] = T(v)
	}
	return out
}

func ewCheckBinary[T Numeric](t *testing.T, op BinaryOp, ref func(x, y float64) float64, tol float64) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, sh := range ewShapePairs {
		out, err := BroadcastShapes(sh[0], sh[1])
		if err != nil {
			t.Fatal(err)
		}
		a := ewConv[T](ewRandF64(r, ewNumel(sh[0])))
		b := ewConv[T](ewRandF64(r, ewNumel(sh[1])))
		if ewIsInt[T]() && (op == BinDiv || op == BinMod || op == BinFmod) {
			for i := range b {
				if b[i] == 0 {
					b[i] = 3
				}
			}
		}
		var first []T
		for _, threads := range []int{1, 2, 3} {
			o := make([]T, ewNumel(out))
			if err := Binary(op, threads, o, out, a, sh[0], b, sh[1]); err != nil {
				t.Fatalf("%v %v: %v", sh[0], sh[1], err)
			}
			for i := range o {
				x, y := float64(a[ewRefIndex(out, sh[0], i)]), float64(b[ewRefIndex(out, sh[1], i)])
				want := float64(T(ref(x, y)))
				got := float64(o[i])
				if math.IsNaN(got) != math.IsNaN(want) || math.Abs(got-want) > tol*(1+math.Abs(want)) {
					t.Fatalf("op %d %T %v %v threads %d: out[%d] = %v, want %v (x=%v y=%v)", op, a, sh[0], sh[1], threads, i, got, want, x, y)
				}
			}
			if first == nil {
				first = o
			} else {
				for i := range o {
					if o[i] != first[i] && !(o[i] != o[i] && first[i] != first[i]) {
						t.Fatalf("result depends on the thread count at %d", i)
					}
				}
			}
		}
	}
}

func TestEwBinary(t *testing.T) {
	trunc := func(x, y float64) float64 { return math.Trunc(x / y) }
	t.Run("f32", func(t *testing.T) {
		ewCheckBinary[float32](t, BinAdd, func(x, y float64) float64 { return x + y }, 1e-6)
		ewCheckBinary[float32](t, BinSub, func(x, y float64) float64 { return x - y }, 1e-6)
		ewCheckBinary[float32](t, BinMul, func(x, y float64) float64 { return x * y }, 1e-6)
		ewCheckBinary[float32](t, BinDiv, func(x, y float64) float64 { return x / y }, 1e-6)
		ewCheckBinary[float32](t, BinMax, math.Max, 0)
		ewCheckBinary[float32](t, BinMin, math.Min, 0)
		ewCheckBinary[float32](t, BinPow, func(x, y float64) float64 { return math.Pow(x, y) }, 1e-5)
	})
	t.Run("f64", func(t *testing.T) {
		ewCheckBinary[float64](t, BinAdd, func(x, y float64) float64 { return x + y }, 0)
		ewCheckBinary[float64](t, BinDiv, func(x, y float64) float64 { return x / y }, 0)
		ewCheckBinary[float64](t, BinMax, math.Max, 0)
	})
	t.Run("i32", func(t *testing.T) {
		ewCheckBinary[int32](t, BinAdd, func(x, y float64) float64 { return x + y }, 0)
		ewCheckBinary[int32](t, BinDiv, trunc, 0)
		ewCheckBinary[int32](t, BinMin, math.Min, 0)
	})
	t.Run("i64", func(t *testing.T) {
		ewCheckBinary[int64](t, BinMul, func(x, y float64) float64 { return x * y }, 0)
		ewCheckBinary[int64](t, BinDiv, trunc, 0)
	})
}

func TestEwBinaryErrors(t *testing.T) {
	o := make([]int32, 3)
	err := Binary(BinDiv, 1, o, []int{3}, []int32{1, 2, 3}, []int{3}, []int32{1, 0, 1}, []int{3})
	if !errors.Is(err, ErrDivideByZero) {
		t.Fatalf("division by zero: %v", err)
	}
	if err := Binary(BinDiv, 1, []int32{}, []int{0}, []int32{}, []int{0}, []int32{0}, []int{1}); err != nil {
		t.Fatalf("empty division: %v", err)
	}
	if err := Binary(BinPow, 1, o, []int{3}, o, []int{3}, o, []int{3}); err == nil {
		t.Fatal("pow on int32 succeeded")
	}
	if _, err := BroadcastShapes([]int{2, 3}, []int{4}); err == nil || err.Error() != "shapes [2 3] and [4] are not broadcastable" {
		t.Fatalf("BroadcastShapes: %v", err)
	}
	if err := Binary(BinAdd, 1, o, []int{3}, o, []int{3}, o, []int{2}); err == nil {
		t.Fatal("mismatched shapes accepted")
	}
}

// TestEwWalkSplits runs the broadcast driver with a grain of one element
// over many goroutines, so that ranges start and end inside rows.
func TestEwWalkSplits(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, sh := range ewShapePairs[:15] {
		out, _ := BroadcastShapes(sh[0], sh[1])
		a := ewRandF64(r, ewNumel(sh[0]))
		b := ewRandF64(r, ewNumel(sh[1]))
		for _, threads := range []int{1, 5, 64} {
			o := make([]float64, ewNumel(out))
			ewBroadcast(ewArithF64[BinSub], threads, 1, o, out, a, sh[0], b, sh[1])
			for i := range o {
				if want := a[ewRefIndex(out, sh[0], i)] - b[ewRefIndex(out, sh[1], i)]; o[i] != want {
					t.Fatalf("%v - %v threads %d: out[%d] = %v, want %v", sh[0], sh[1], threads, i, o[i], want)
				}
			}
		}
	}
}

func TestEwCompareLogicalWhere(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, sh := range ewShapePairs {
		out, _ := BroadcastShapes(sh[0], sh[1])
		a := ewConv[int32](ewRandF64(r, ewNumel(sh[0])))
		b := ewConv[int32](ewRandF64(r, ewNumel(sh[1])))
		o := make([]bool, ewNumel(out))
		if err := Compare(CmpLE, 3, o, out, a, sh[0], b, sh[1]); err != nil {
			t.Fatal(err)
		}
		for i := range o {
			if want := a[ewRefIndex(out, sh[0], i)] <= b[ewRefIndex(out, sh[1], i)]; o[i] != want {
				t.Fatalf("less_equal %v %v: out[%d] = %v", sh[0], sh[1], i, o[i])
			}
		}
		ba, bb := make([]bool, len(a)), make([]bool, len(b))
		for i := range ba {
			ba[i] = a[i] > 0
		}
		for i := range bb {
			bb[i] = b[i] > 0
		}
		if err := Logical(LogicalOr, 3, o, out, ba, sh[0], bb, sh[1]); err != nil {
			t.Fatal(err)
		}
		for i := range o {
			if want := ba[ewRefIndex(out, sh[0], i)] || bb[ewRefIndex(out, sh[1], i)]; o[i] != want {
				t.Fatalf("logical_or %v %v: out[%d] = %v", sh[0], sh[1], i, o[i])
			}
		}
		// where(a > 0, b, a*10) with three-way broadcasting: cond has a's
		// shape, x has b's shape, y is a scalar.
		ys := []int32{-7}
		wo := make([]int32, len(o))
		if err := Where(3, wo, out, ba, sh[0], b, sh[1], ys, []int{}); err != nil {
			t.Fatal(err)
		}
		for i := range wo {
			want := int32(-7)
			if ba[ewRefIndex(out, sh[0], i)] {
				want = b[ewRefIndex(out, sh[1], i)]
			}
			if wo[i] != want {
				t.Fatalf("where %v %v: out[%d] = %v, want %v", sh[0], sh[1], i, wo[i], want)
			}
		}
	}
}

func TestEwUnaryCast(t *testing.T) {
	x := []float64{-3.7, -1, -0.5, 0, 0.25, 1, 2.5, 40, math.Inf(1), math.NaN()}
	o := make([]float64, len(x))
	if err := Unary(UnarySoftplus, 1, o, x); err != nil {
		t.Fatal(err)
	}
	for i, v := range x {
		want := math.Log1p(math.Exp(v))
		if math.IsInf(v, 1) {
			want = v
		}
		if !(o[i] == want || math.Abs(o[i]-want) < 1e-15*(1+math.Abs(want)) || math.IsNaN(want) && math.IsNaN(o[i])) {
			t.Fatalf("softplus(%v) = %v, want %v", v, o[i], want)
		}
	}
	if err := Unary(UnaryExp, 1, []int32{0}, []int32{1}); err == nil {
		t.Fatal("exp on int32 succeeded")
	}
	ci := make([]int32, len(x)-2)
	if err := Cast(2, ci, x[:len(x)-2]); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int32{-3, -1, 0, 0, 0, 1, 2, 40} {
		if ci[i] != want {
			t.Fatalf("cast f64->i32 = %v, want %v at %d", ci, want, i)
		}
	}
	cb := make([]bool, len(x))
	if err := Cast(2, cb, x); err != nil {
		t.Fatal(err)
	}
	if cb[3] || !cb[4] || !cb[9] {
		t.Fatalf("cast f64->bool = %v", cb)
	}
	cf := make([]float32, 2)
	if err := Cast(1, cf, []bool{true, false}); err != nil || cf[0] != 1 || cf[1] != 0 {
		t.Fatalf("cast bool->f32 = %v, %v", cf, err)
	}
}

// TestEwGenerated checks that the committed elementwise_gen.go is what the
// generator writes.
func TestEwGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go tool")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool:", err)
	}
	out := filepath.Join(t.TempDir(), "gen.go")
	cmd := exec.Command(goTool, "run", "./internal/elemgen", "-o", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("elemgen: %v\n%s", err, b)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("elementwise_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("elementwise_gen.go is stale: run go generate ./kernels/")
	}
}

// ewULPs is the distance in float32 units in the last place between a and
// b (0 for two NaNs, large for NaN against a number).
func ewULPs(a, b float32) int64 {
	if a != a || b != b {
		if a != a && b != b {
			return 0
		}
		return math.MaxInt64
	}
	if a == b {
		return 0
	}
	ord := func(f float32) int64 {
		u := int64(math.Float32bits(f))
		if u&(1<<31) != 0 {
			return -(u &^ (1 << 31))
		}
		return u
	}
	d := ord(a) - ord(b)
	if d < 0 {
		d = -d
	}
	return d
}

// TestEwFastF32 compares the fast float32 paths with float64 package math
// rounded to float32, over random and special values.
func TestEwFastF32(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	var xs []float32
	for _, v := range []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(),
		88.72, 88.73, -87.33, -103.97, -104.5, 1e-45, -1e-45, 1e-38, 0.0625, -0.0625, 20, -20, 200, -200} {
		xs = append(xs, float32(v))
	}
	for range 200000 {
		xs = append(xs,
			float32(r.Float64()*240-120),
			float32(r.Float64()*4-2),
			float32(math.Copysign(math.Exp(-r.Float64()*80), r.Float64()-0.5)))
	}
	sigmoid := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	cases := []struct {
		name string
		loop func(o, a []float32)
		ref  func(float64) float64
		ulps int64 // the bound; 1 if 0
	}{
		{"exp", ewExpF32, math.Exp, 0},
		{"sigmoid", ewSigmoidF32, sigmoid, 0},
		{"silu", ewSiluF32, ewSilu, 2}, // float32 arithmetic (ewSiluF32At)
		{"tanh", ewTanhF32, math.Tanh, 0},
		{"gelu_tanh", ewGeluTanhF32, func(x float64) float64 {
			u := 0.7978845608028654 * (x + 0.044715*x*x*x)
			if u < -10 || math.IsInf(x, 0) { // the textbook form cancels or is NaN
				return ewGeluTanh(x)
			}
			return 0.5 * x * (1 + math.Tanh(u))
		}, 0},
		{"log", ewLogF32, math.Log, 0},
		{"gelu", ewGeluF32, ewGelu, 0},
		{"softplus", ewSoftplusF32, ewSoftplus, 0},
	}
	got := make([]float32, len(xs))
	for _, c := range cases {
		c.loop(got, xs)
		worst, at := int64(0), 0
		for i, x := range xs {
			if d := ewULPs(got[i], float32(c.ref(float64(x)))); d > worst {
				worst, at = d, i
			}
		}
		if worst > max(c.ulps, 1) {
			t.Errorf("%s: %d ulps at x=%v: got %v, want %v", c.name, worst, xs[at], got[at], float32(c.ref(float64(xs[at]))))
		}
	}
}

// TestEwFastLayout checks the plan-free layouts: each accepted case is a
// genuine broadcast whose output has the full operand's shape, and every
// inconsistent call goes to the general path, which reports it.
func TestEwFastLayout(t *testing.T) {
	for _, c := range []struct {
		out, a, b []int
		la, lb    int
		want      int
	}{
		{[]int{}, []int{}, []int{}, 1, 1, ewVV},
		{[]int{2, 3}, []int{2, 3}, []int{2, 3}, 6, 6, ewVV},
		{[]int{2, 3}, []int{2, 3}, []int{}, 6, 1, ewVS},
		{[]int{2, 3}, []int{2, 3}, []int{1, 1}, 6, 1, ewVS},
		{[]int{2, 3}, []int{1}, []int{2, 3}, 1, 6, ewSV},
		{[]int{0}, []int{0}, []int{}, 0, 1, ewVS},
		{[]int{1}, []int{1}, []int{}, 1, 1, ewVS},
		{[]int{3}, []int{3}, []int{1, 1}, 3, 1, ewNoFast}, // the broadcast is [1 3]
		{[]int{1, 3}, []int{3}, []int{3}, 3, 3, ewNoFast}, // the broadcast is [3]
		{[]int{2, 3}, []int{2, 3}, []int{3}, 6, 3, ewRowB},
		{[]int{2, 3}, []int{1, 3}, []int{2, 3}, 3, 6, ewRowA},
		{[]int{4, 2, 3}, []int{4, 2, 3}, []int{1, 2, 3}, 24, 6, ewRowB},
		{[]int{2, 3}, []int{2, 3}, []int{2, 1}, 6, 2, ewNoFast},    // a column
		{[]int{2, 3}, []int{2, 3}, []int{1, 1, 3}, 6, 3, ewNoFast}, // the broadcast is [1 2 3]
		{[]int{0, 3}, []int{0, 3}, []int{3}, 0, 3, ewRowB},
		{[]int{2, 0}, []int{2, 0}, []int{0}, 0, 0, ewNoFast},
		{[]int{2, 3}, []int{2, 3}, []int{3}, 6, 2, ewNoFast}, // short row
		{[]int{3}, []int{3}, []int{3}, 3, 2, ewNoFast},       // short operand
		{[]int{3}, []int{3}, []int{3}, 4, 3, ewNoFast},
	} {
		if got := ewFastLayout(c.out, ewNumel(c.out), c.a, c.la, c.b, c.lb); got != c.want {
			t.Errorf("out %v a %v (%d) b %v (%d): layout %d, want %d", c.out, c.a, c.la, c.b, c.lb, got, c.want)
		}
	}
	if ewFastLayout([]int{3}, 2, []int{3}, 3, []int{3}, 3) != ewNoFast {
		t.Error("short output accepted")
	}
	o := make([]float32, 3)
	if err := Binary(BinAdd, 1, o, []int{3}, o, []int{3}, o[:2], []int{3}); err == nil {
		t.Error("short operand accepted by Binary")
	}
	if err := Binary(BinAdd, 1, o, []int{1, 3}, o, []int{3}, o, []int{3}); err == nil {
		t.Error("wrong output shape accepted by Binary")
	}
	if err := Compare(CmpLT, 1, make([]bool, 3), []int{3}, o, []int{3}, o[:1], []int{1, 1}); err == nil {
		t.Error("wrong output shape accepted by Compare")
	}
}

// TestEwInPlace runs the drivers with the output aliasing an operand, as
// the elementwise ops do when they reuse a dying operand's buffer.
func TestEwInPlace(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, sh := range ewShapePairs {
		out, _ := BroadcastShapes(sh[0], sh[1])
		for k, s := range sh {
			if !ewSameShape(s, out) {
				continue
			}
			for _, threads := range []int{1, 3} {
				a := ewRandF64(r, ewNumel(sh[0]))
				b := ewRandF64(r, ewNumel(sh[1]))
				want := make([]float64, ewNumel(out))
				if err := Binary(BinSub, threads, want, out, a, sh[0], b, sh[1]); err != nil {
					t.Fatal(err)
				}
				o := a
				if k == 1 {
					o = b
				}
				if err := Binary(BinSub, threads, o, out, a, sh[0], b, sh[1]); err != nil {
					t.Fatal(err)
				}
				for i := range o {
					if o[i] != want[i] {
						t.Fatalf("%v - %v into operand %d, threads %d: out[%d] = %v, want %v", sh[0], sh[1], k, threads, i, o[i], want[i])
					}
				}
			}
		}
	}
}
