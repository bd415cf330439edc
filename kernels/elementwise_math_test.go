package kernels

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// Tests of the remainders, the rounding, sign, trigonometric and
// hyperbolic functions, erf, and the float classifications.

// floorMod is the remainder of floored division, from the definition.
func floorMod(x, y float64) float64 { return x - y*math.Floor(x/y) }

// truncMod is the remainder of truncated division, from the definition.
func truncMod(x, y float64) float64 { return x - y*math.Trunc(x/y) }

func TestEwMod(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"f32", func(t *testing.T) {
			ewCheckBinary[float32](t, BinMod, floorMod, 1e-5)
			ewCheckBinary[float32](t, BinFmod, truncMod, 1e-5)
		}},
		{"f64", func(t *testing.T) {
			ewCheckBinary[float64](t, BinMod, floorMod, 1e-12)
			ewCheckBinary[float64](t, BinFmod, truncMod, 1e-12)
		}},
		{"i32", func(t *testing.T) {
			ewCheckBinary[int32](t, BinMod, floorMod, 0)
			ewCheckBinary[int32](t, BinFmod, truncMod, 0)
		}},
		{"i64", func(t *testing.T) {
			ewCheckBinary[int64](t, BinMod, floorMod, 0)
			ewCheckBinary[int64](t, BinFmod, truncMod, 0)
		}},
	} {
		t.Run(c.name, c.run)
	}
}

// TestEwModSigns checks the sign conventions and the special values
// against Python's % and math.fmod (numpy's remainder and fmod).
func TestEwModSigns(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	negZero := math.Copysign(0, -1)
	cases := []struct{ x, y, mod, fmod float64 }{
		{5, 3, 2, 2},
		{-5, 3, 1, -2},
		{5, -3, -1, 2},
		{-5, -3, -2, -2},
		{5.5, 2, 1.5, 1.5},
		{-5.5, 2, 0.5, -1.5},
		{5.5, -2, -0.5, 1.5},
		{-4, 2, 0, negZero},
		{4, -2, negZero, 0},
		{3, inf, 3, 3},
		{-3, inf, inf, -3},
		{3, -inf, -inf, 3},
		{inf, 2, nan, nan},
		{2, 0, nan, nan},
		{nan, 2, nan, nan},
		{2, nan, nan, nan},
	}
	same := func(a, b float64) bool {
		return a == b && math.Signbit(a) == math.Signbit(b) || math.IsNaN(a) && math.IsNaN(b)
	}
	for _, c := range cases {
		for _, k := range []struct {
			op   BinaryOp
			want float64
		}{{BinMod, c.mod}, {BinFmod, c.fmod}} {
			o64 := []float64{0}
			if err := Binary(k.op, 1, o64, []int{}, []float64{c.x}, []int{}, []float64{c.y}, []int{}); err != nil {
				t.Fatal(err)
			}
			o32 := []float32{0}
			if err := Binary(k.op, 1, o32, []int{}, []float32{float32(c.x)}, []int{}, []float32{float32(c.y)}, []int{}); err != nil {
				t.Fatal(err)
			}
			if !same(o64[0], k.want) || !same(float64(o32[0]), k.want) {
				t.Errorf("op %d (%v, %v) = %v (f64), %v (f32); want %v", k.op, c.x, c.y, o64[0], o32[0], k.want)
			}
			if math.IsInf(c.x, 0) || math.IsInf(c.y, 0) || math.IsNaN(c.x) || math.IsNaN(c.y) || c.y == 0 || c.x != math.Trunc(c.x) {
				continue
			}
			oi := []int64{0}
			if err := Binary(k.op, 1, oi, []int{}, []int64{int64(c.x)}, []int{}, []int64{int64(c.y)}, []int{}); err != nil {
				t.Fatal(err)
			}
			if float64(oi[0]) != k.want {
				t.Errorf("op %d (%v, %v) on int64 = %v, want %v", k.op, c.x, c.y, oi[0], k.want)
			}
		}
	}
	// The most negative integer: no overflow.
	oi := []int32{7, 7}
	if err := Binary(BinMod, 1, oi, []int{2}, []int32{math.MinInt32, math.MinInt32}, []int{2}, []int32{-1, 3}, []int{2}); err != nil || oi[0] != 0 || oi[1] != 1 {
		t.Errorf("mod(MinInt32, [-1 3]) = %v, %v; want [0 1]", oi, err)
	}
	for _, op := range []BinaryOp{BinMod, BinFmod} {
		err := Binary(op, 1, oi, []int{2}, []int32{1, 2}, []int{2}, []int32{1, 0}, []int{2})
		if !errors.Is(err, ErrDivideByZero) {
			t.Errorf("op %d by zero: %v, want ErrDivideByZero", op, err)
		}
	}
}

// ewUnaryMathRefs are the new unary ops with their float64 references.
var ewUnaryMathRefs = []struct {
	name string
	op   UnaryOp
	ref  func(float64) float64
	ints bool
}{
	{"floor", UnaryFloor, math.Floor, false},
	{"ceil", UnaryCeil, math.Ceil, false},
	{"round", UnaryRound, math.RoundToEven, false},
	{"sign", UnarySign, func(x float64) float64 {
		if x == 0 || math.IsNaN(x) {
			return x
		}
		return math.Copysign(1, x)
	}, true},
	{"sin", UnarySin, math.Sin, false},
	{"cos", UnaryCos, math.Cos, false},
	{"tan", UnaryTan, math.Tan, false},
	{"asin", UnaryAsin, math.Asin, false},
	{"acos", UnaryAcos, math.Acos, false},
	{"atan", UnaryAtan, math.Atan, false},
	{"sinh", UnarySinh, math.Sinh, false},
	{"cosh", UnaryCosh, math.Cosh, false},
	{"asinh", UnaryAsinh, math.Asinh, false},
	{"acosh", UnaryAcosh, math.Acosh, false},
	{"atanh", UnaryAtanh, math.Atanh, false},
	{"erf", UnaryErf, math.Erf, false},
}

// ewMathInputs are random values over several scales and the special
// values, including halves (for round) and the ends of the inverse
// functions' domains.
func ewMathInputs(r *rand.Rand, n int) []float64 {
	xs := []float64{0, math.Copysign(0, -1), 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 1, -1, 1 - 1e-9, -1 + 1e-9,
		1e-300, -1e-300, 700, -700, 1e10, -1e10, math.Inf(1), math.Inf(-1), math.NaN()}
	for range n {
		xs = append(xs, r.Float64()*4-2, r.Float64()*40-20, math.Copysign(math.Exp(r.Float64()*20-10), r.Float64()-0.5))
	}
	return xs
}

// TestEwUnaryMath compares each op with package math: f64 exactly, f32
// with float32(math.F(float64(x))) exactly, over one and several threads.
func TestEwUnaryMath(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	xs := ewMathInputs(r, 30000)
	x32 := make([]float32, len(xs))
	for i, v := range xs {
		x32[i] = float32(v)
	}
	same := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
	for _, c := range ewUnaryMathRefs {
		for _, threads := range []int{1, 3} {
			o := make([]float64, len(xs))
			if err := Unary(c.op, threads, o, xs); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			for i, x := range xs {
				if !same(o[i], c.ref(x)) {
					t.Fatalf("%s(%v) = %v, want %v", c.name, x, o[i], c.ref(x))
				}
			}
			o32 := make([]float32, len(xs))
			if err := Unary(c.op, threads, o32, x32); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			for i, x := range x32 {
				if want := float32(c.ref(float64(x))); !same(float64(o32[i]), float64(want)) {
					t.Fatalf("%s(float32 %v) = %v, want %v", c.name, x, o32[i], want)
				}
			}
		}
		oi := []int64{0, 0, 0, 0}
		err := Unary(c.op, 1, oi, []int64{-7, 0, 3, math.MinInt64})
		switch {
		case !c.ints && err == nil:
			t.Errorf("%s on int64 succeeded", c.name)
		case c.ints && (err != nil || oi[0] != -1 || oi[1] != 0 || oi[2] != 1 || oi[3] != -1):
			t.Errorf("%s on int64 = %v, %v", c.name, oi, err)
		}
	}
	// Signed zeros survive sign and the rounding ops.
	negZero := math.Copysign(0, -1)
	for _, op := range []UnaryOp{UnarySign, UnaryFloor, UnaryCeil, UnaryRound} {
		o := []float64{1}
		if err := Unary(op, 1, o, []float64{negZero}); err != nil || o[0] != 0 || !math.Signbit(o[0]) {
			t.Errorf("op %d(-0) = %v, %v; want -0", op, o[0], err)
		}
	}
}

func TestEwClassify(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	xs := []float64{0, 1, -1, inf, -inf, nan, math.MaxFloat64, -math.MaxFloat64}
	want := map[ClassOp][]bool{
		ClassNaN:    {false, false, false, false, false, true, false, false},
		ClassInf:    {false, false, false, true, true, false, false, false},
		ClassPosInf: {false, false, false, true, false, false, false, false},
		ClassNegInf: {false, false, false, false, true, false, false, false},
	}
	for op, w := range want {
		o := make([]bool, len(xs))
		if err := Classify(op, 1, o, xs); err != nil {
			t.Fatal(err)
		}
		// f32: MaxFloat64 becomes +Inf in float32, so compare from 0 to 5.
		o32 := make([]bool, 6)
		x32 := []float32{0, 1, -1, float32(inf), float32(-inf), float32(nan)}
		if err := Classify(op, 1, o32, x32); err != nil {
			t.Fatal(err)
		}
		for i := range o {
			if o[i] != w[i] || i < 6 && o32[i] != w[i] {
				t.Fatalf("op %d: f64 %v, f32 %v; want %v", op, o, o32, w)
			}
		}
	}
	// Large inputs split over threads.
	big := make([]float32, 100003)
	big[77777] = float32(nan)
	o := make([]bool, len(big))
	if err := Classify(ClassNaN, 4, o, big); err != nil {
		t.Fatal(err)
	}
	for i, v := range o {
		if v != (i == 77777) {
			t.Fatalf("is_nan[%d] = %v", i, v)
		}
	}
	if err := Classify(ClassOp(9), 1, o, big); err == nil {
		t.Error("unknown classification accepted")
	}
	if err := Classify(ClassNaN, 1, o[:3], big); err == nil {
		t.Error("length mismatch accepted")
	}
}
