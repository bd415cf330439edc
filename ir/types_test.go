package ir_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gopir/gopir/ir"
)

func TestTypes(t *testing.T) {
	cases := []struct {
		typ               ir.Type
		str               string
		valid, static     bool
		rank, numElements int
	}{
		{ir.Scalar(ir.F32), "tensor<f32>", true, true, 0, 1},
		{ir.TensorOf(ir.I64, 2, 3), "tensor<2x3xi64>", true, true, 2, 6},
		{ir.TensorOf(ir.F64, ir.Dynamic, 4), "tensor<?x4xf64>", true, false, 2, -1},
		{ir.TensorOf(ir.I1, 0, 5), "tensor<0x5xi1>", true, true, 2, 0},
		{ir.TensorOf(ir.I32, 7), "tensor<7xi32>", true, true, 1, 7},
		{ir.Type{}, "tensor<invalid>", false, true, 0, 1},
		{ir.TensorOf(ir.F32, -2), "tensor<-2xf32>", false, true, 1, -2},
		{ir.TensorOf(ir.DType(99)), "tensor<dtype(99)>", false, true, 0, 1},
	}
	for _, tc := range cases {
		if got := tc.typ.String(); got != tc.str {
			t.Errorf("String() = %s, want %s", got, tc.str)
		}
		if got := tc.typ.IsValid(); got != tc.valid {
			t.Errorf("%s: IsValid() = %v", tc.str, got)
		}
		if got := tc.typ.IsStatic(); got != tc.static {
			t.Errorf("%s: IsStatic() = %v", tc.str, got)
		}
		if got := tc.typ.Rank(); got != tc.rank {
			t.Errorf("%s: Rank() = %d", tc.str, got)
		}
		if got := tc.typ.NumElements(); got != tc.numElements {
			t.Errorf("%s: NumElements() = %d", tc.str, got)
		}
	}
	dims := []int{2, 3}
	typ := ir.TensorOf(ir.F32, dims...)
	dims[0] = 9
	if typ.Dims[0] != 2 {
		t.Error("TensorOf does not copy its dims")
	}
}

func TestTypeRelations(t *testing.T) {
	f := func(dims ...int) ir.Type { return ir.TensorOf(ir.F32, dims...) }
	d := ir.Dynamic
	cases := []struct {
		a, b                  ir.Type
		equal, refines, joins bool
		join                  string
	}{
		{f(2, 3), f(2, 3), true, true, true, "tensor<2x3xf32>"},
		{f(2, 3), f(d, 3), false, true, true, "tensor<?x3xf32>"},
		{f(d, 3), f(2, 3), false, false, true, "tensor<?x3xf32>"},
		{f(2, 3), f(3, 3), false, false, true, "tensor<?x3xf32>"},
		{f(2), f(2, 1), false, false, false, ""},
		{f(2), ir.TensorOf(ir.F64, 2), false, false, false, ""},
		{f(), f(), true, true, true, "tensor<f32>"},
		{f(d), f(d), true, true, true, "tensor<?xf32>"},
		{f(2), ir.UnrankedOf(ir.F32), false, true, false, ""},
		{ir.UnrankedOf(ir.F32), f(2), false, false, false, ""},
		{ir.UnrankedOf(ir.F32), ir.UnrankedOf(ir.F32), true, true, true, "tensor<*xf32>"},
		{ir.StackOf(f(2)), ir.StackOf(f(2, 1)), false, false, true, "stack<tensor<*xf32>>"},
		{ir.StackOf(f(2)), ir.StackOf(ir.UnrankedOf(ir.F32)), false, true, true, "stack<tensor<*xf32>>"},
		{ir.StackOf(f(2)), ir.StackOf(ir.UnrankedOf(ir.F64)), false, false, false, ""},
	}
	for _, tc := range cases {
		if got := tc.a.Equal(tc.b); got != tc.equal {
			t.Errorf("%s.Equal(%s) = %v", tc.a, tc.b, got)
		}
		if got := tc.a.Refines(tc.b); got != tc.refines {
			t.Errorf("%s.Refines(%s) = %v", tc.a, tc.b, got)
		}
		j, ok := ir.Join(tc.a, tc.b)
		if ok != tc.joins || ok && j.String() != tc.join {
			t.Errorf("Join(%s, %s) = %s, %v; want %s, %v", tc.a, tc.b, j, ok, tc.join, tc.joins)
		}
		if ok && (!tc.a.Refines(j) || !tc.b.Refines(j)) {
			t.Errorf("Join(%s, %s) = %s is not refined by both", tc.a, tc.b, j)
		}
	}
	if j, ok := ir.JoinAnyRank(f(2), f(2, 1)); !ok || j.String() != "tensor<*xf32>" {
		t.Errorf("JoinAnyRank of ranks 1 and 2 = %s, %v; want tensor<*xf32>", j, ok)
	}
	a := f(2, 3)
	if j, _ := ir.Join(a, f(d, 3)); &j.Dims[0] == &a.Dims[0] {
		t.Error("Join shares its argument's dims")
	}
}

func TestDTypes(t *testing.T) {
	for _, tc := range []struct {
		name        string
		dt          ir.DType
		size        int
		float, intg bool
	}{
		{"f32", ir.F32, 4, true, false},
		{"f64", ir.F64, 8, true, false},
		{"i32", ir.I32, 4, false, true},
		{"i64", ir.I64, 8, false, true},
		{"i1", ir.I1, 1, false, false},
	} {
		dt, ok := ir.ParseDType(tc.name)
		if !ok || dt != tc.dt || dt.String() != tc.name || dt.Size() != tc.size || dt.IsFloat() != tc.float || dt.IsInt() != tc.intg {
			t.Errorf("%s: ParseDType = %v, %v; Size %d, IsFloat %v, IsInt %v", tc.name, dt, ok, dt.Size(), dt.IsFloat(), dt.IsInt())
		}
	}
	for _, bad := range []string{"invalid", "", "f16", "F32", "dtype(1)"} {
		if dt, ok := ir.ParseDType(bad); ok {
			t.Errorf("ParseDType(%q) = %v, true", bad, dt)
		}
	}
	if ir.InvalidDType.Size() != 0 || ir.DType(200).String() != "dtype(200)" {
		t.Error("invalid dtypes misbehave")
	}
}

func TestAttrStrings(t *testing.T) {
	cases := []struct {
		a    ir.Attr
		want string
	}{
		{ir.Int(-3), "-3"},
		{ir.Float(0), "0.0"},
		{ir.Float(math.Copysign(0, -1)), "-0.0"},
		{ir.Float(1e-05), "1e-05"},
		{ir.Float(2.5), "2.5"},
		{ir.Float(1e21), "1e+21"},
		{ir.Float(100), "100.0"},
		{ir.Float(math.Inf(1)), "inf"},
		{ir.Float(math.Inf(-1)), "-inf"},
		{ir.Float(math.NaN()), "nan"},
		{ir.Str("a\"b\n"), `"a\"b\n"`},
		{ir.Bool(true), "true"},
		{ir.I64, "i64"},
		{ir.List{}, "[]"},
		{ir.List{ir.List{ir.Int(1), ir.Int(2)}, ir.List{ir.Float(3)}}, "[[1,2],[3.0]]"},
		{ir.List{ir.Int(1), nil}, "[1,<nil>]"},
	}
	for _, tc := range cases {
		if got := tc.a.String(); got != tc.want {
			t.Errorf("String() = %s, want %s", got, tc.want)
		}
	}
	if got := (ir.Attrs{}).String(); got != "" {
		t.Errorf("empty Attrs print as %q", got)
	}
	if got := ir.A("a", 1, "b", "x").String(); got != `{a:1, b:"x"}` {
		t.Errorf("Attrs print as %s", got)
	}
}

func TestA(t *testing.T) {
	got := ir.A(
		"int", 1, "int64", int64(2), "f64", 0.5, "f32", float32(0.25), "str", "s", "bool", true,
		"dt", ir.F64, "ints", []int{1, 2}, "int64s", []int64{3}, "floats", []float64{1.5},
		"strs", []string{"a"}, "bools", []bool{false}, "dts", []ir.DType{ir.I1}, "attr", ir.List{ir.Int(7)},
	).String()
	want := `{int:1, int64:2, f64:0.5, f32:0.25, str:"s", bool:true, dt:f64, ints:[1,2], int64s:[3], floats:[1.5], strs:["a"], bools:[false], dts:[i1], attr:[7]}`
	if got != want {
		t.Errorf("A(...) = %s\nwant     %s", got, want)
	}
	if got := ir.A("a", 1, "a", 2).String(); got != "{a:2}" {
		t.Errorf("A with a repeated name = %s, want {a:2}", got)
	}
	for _, tc := range []struct {
		args []any
		msg  string
	}{
		{[]any{"a"}, "ir.A: odd number of arguments"},
		{[]any{1, 2}, "ir.A: argument 0 is a int, want a string name"},
		{[]any{"a", struct{}{}}, `ir.A: attribute "a": unsupported attribute value of type struct {}`},
	} {
		func() {
			defer func() {
				if r := recover(); r != tc.msg {
					t.Errorf("A(%v) panicked with %v, want %q", tc.args, r, tc.msg)
				}
			}()
			ir.A(tc.args...)
		}()
	}
}

func TestAttrsGetters(t *testing.T) {
	as := ir.A("i", 3, "f", 1.5, "s", "x", "b", true, "d", ir.I32, "l", []int{1, 2}, "mixed", ir.List{ir.Int(1), ir.Str("no")})
	orig := as.String()
	if v, err := as.Int("i"); v != 3 || err != nil {
		t.Errorf("Int = %v, %v", v, err)
	}
	if v, err := as.Float("f"); v != 1.5 || err != nil {
		t.Errorf("Float = %v, %v", v, err)
	}
	if v, err := as.Float("i"); v != 3 || err != nil {
		t.Errorf("Float of an int = %v, %v", v, err)
	}
	if v, err := as.Str("s"); v != "x" || err != nil {
		t.Errorf("Str = %v, %v", v, err)
	}
	if v, err := as.Bool("b"); !v || err != nil {
		t.Errorf("Bool = %v, %v", v, err)
	}
	if v, err := as.DType("d"); v != ir.I32 || err != nil {
		t.Errorf("DType = %v, %v", v, err)
	}
	if v, err := as.Ints("l"); len(v) != 2 || v[1] != 2 || err != nil {
		t.Errorf("Ints = %v, %v", v, err)
	}
	if !as.Has("b") || as.Has("zz") {
		t.Error("Has is wrong")
	}
	errs := []struct {
		err error
		msg string
	}{
		{second(as.Int("f")), "attribute f:1.5 is not an int"},
		{second(as.Int("zz")), `missing attribute "zz" (an int)`},
		{second(as.Float("s")), `attribute s:"x" is not a number`},
		{second(as.Str("i")), "attribute i:3 is not a string"},
		{second(as.Bool("i")), "attribute i:3 is not a bool"},
		{second(as.DType("s")), `attribute s:"x" is not a dtype`},
		{second(as.Ints("i")), "attribute i:3 is not a list of ints"},
		{second(as.Ints("mixed")), `attribute mixed:[1,"no"] is not a list of ints`},
	}
	for _, e := range errs {
		var ae *ir.AttrError
		if !errors.As(e.err, &ae) || e.err.Error() != e.msg {
			t.Errorf("error %v, want AttrError %q", e.err, e.msg)
		}
	}
	with := as.With("i", ir.Int(4)).With("new", ir.Bool(false))
	if as.String() != orig {
		t.Error("With modified its receiver")
	}
	if v, _ := with.Int("i"); v != 4 || !strings.HasSuffix(with.String(), ", new:false}") {
		t.Errorf("With gave %s", with)
	}
}

func second[T any](_ T, err error) error { return err }

func TestErrorList(t *testing.T) {
	e1 := &ir.Error{Pos: ir.Pos{File: "a.pir", Line: 1, Col: 2}, Op: "add", Msg: "bad"}
	inner := errors.New("inner")
	e2 := &ir.Error{Pos: ir.Pos{Line: 3}, Msg: "worse", Err: inner}
	cases := []struct {
		l    ir.ErrorList
		want string
	}{
		{nil, "no errors"},
		{ir.ErrorList{e1}, `a.pir:1:2: "add": bad`},
		{ir.ErrorList{e1, e2}, `a.pir:1:2: "add": bad (and 1 more errors)`},
	}
	for _, tc := range cases {
		if got := tc.l.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
	if (ir.ErrorList{}).Err() != nil {
		t.Error("empty list's Err is not nil")
	}
	if err := (ir.ErrorList{e1, e2}).Err(); !errors.Is(err, inner) {
		t.Error("ErrorList does not unwrap to its errors' causes")
	}
	for _, tc := range []struct {
		pos  ir.Pos
		want string
	}{
		{ir.Pos{}, "<input>"},
		{ir.Pos{File: "f"}, "f"},
		{ir.Pos{File: "f", Line: 2}, "f:2"},
		{ir.Pos{File: "f", Line: 2, Col: 5}, "f:2:5"},
		{ir.Pos{Line: 2, Col: 5}, "<input>:2:5"},
	} {
		if got := tc.pos.String(); got != tc.want {
			t.Errorf("Pos.String() = %q, want %q", got, tc.want)
		}
	}
}
