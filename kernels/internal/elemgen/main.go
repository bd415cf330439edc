// Command elemgen writes kernels/elementwise_gen.go: the typed inner loops
// of the elementwise kernels, one function per (op, dtype, operand layout),
// and the tables that the drivers in elementwise.go dispatch through. Each
// loop is a plain for loop over slices, so the compiler sees the element
// type and the operation and no function value is called per element.
//
// Run it with go generate ./kernels/ (see the go:generate line in
// kernels/elementwise.go). The output is gofmt-formatted and depends only
// on this program, so reruns reproduce the committed file byte for byte.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"log"
	"os"
	"strings"
)

// dtype is one element type of the kernels.
type dtype struct {
	suffix string // name suffix: F32, F64, I32, I64, B
	goType string
	float  bool
	isInt  bool
}

var (
	f32 = dtype{"F32", "float32", true, false}
	f64 = dtype{"F64", "float64", true, false}
	i32 = dtype{"I32", "int32", false, true}
	i64 = dtype{"I64", "int64", false, true}
	b1  = dtype{"B", "bool", false, false}

	numeric = []dtype{f32, f64, i32, i64}
	floats  = []dtype{f32, f64}
	all     = []dtype{f32, f64, i32, i64, b1}
)

// binOp is a binary op. Templates are Go expressions in x and y (both of
// the element type T); "T" in a template stands for the element type.
type binOp struct {
	name   string // function name stem
	konst  string // the kernels constant that indexes its table
	float  string // template for float dtypes ("" = unsupported)
	int    string // template for integer dtypes ("" = unsupported)
	bool   string // template for bool ("" = unsupported)
	result string // "" = same as operands; else the Go result type
}

var arith = []binOp{
	{name: "Add", konst: "BinAdd", float: "x + y", int: "x + y"},
	{name: "Sub", konst: "BinSub", float: "x - y", int: "x - y"},
	{name: "Mul", konst: "BinMul", float: "x * y", int: "x * y"},
	{name: "Div", konst: "BinDiv", float: "x / y", int: "x / y"},
	{name: "Max", konst: "BinMax", float: "max(x, y)", int: "max(x, y)"},
	{name: "Min", konst: "BinMin", float: "min(x, y)", int: "min(x, y)"},
	{name: "Pow", konst: "BinPow", float: "T(math.Pow(float64(x), float64(y)))"},
	{name: "Mod", konst: "BinMod", float: "ewModFloat(x, y)", int: "ewModInt(x, y)"},
	{name: "Fmod", konst: "BinFmod", float: "T(math.Mod(float64(x), float64(y)))", int: "x % y"},
}

var compare = []binOp{
	{name: "EQ", konst: "CmpEQ", float: "x == y", int: "x == y", bool: "x == y", result: "bool"},
	{name: "NE", konst: "CmpNE", float: "x != y", int: "x != y", bool: "x != y", result: "bool"},
	{name: "LT", konst: "CmpLT", float: "x < y", int: "x < y", result: "bool"},
	{name: "LE", konst: "CmpLE", float: "x <= y", int: "x <= y", result: "bool"},
	{name: "GT", konst: "CmpGT", float: "x > y", int: "x > y", result: "bool"},
	{name: "GE", konst: "CmpGE", float: "x >= y", int: "x >= y", result: "bool"},
}

var logical = []binOp{
	{name: "And", konst: "LogicalAnd", bool: "x && y", result: "bool"},
	{name: "Or", konst: "LogicalOr", bool: "x || y", result: "bool"},
}

// unOp is a unary op; templates are expressions in x. For float32, an op
// with f32Block calls that hand-written block function (o, a []float32,
// scratch []float64) on blocks of ewBlock elements; an op with f32Via64 (a
// func(float64) float64) converts each block to float64, applies the
// function there and rounds back.
type unOp struct {
	name     string
	konst    string
	float    string
	int      string
	f32Block string
	f32Via64 string
}

var unary = []unOp{
	{name: "Relu", konst: "UnaryRelu", float: "max(x, 0)", int: "max(x, 0)"},
	{name: "Sigmoid", konst: "UnarySigmoid", float: "T(ewSigmoid(float64(x)))", f32Block: "ewSigmoidBlock32"},
	{name: "Tanh", konst: "UnaryTanh", float: "T(math.Tanh(float64(x)))", f32Block: "ewTanhBlock32"},
	{name: "Exp", konst: "UnaryExp", float: "T(math.Exp(float64(x)))", f32Block: "ewExpBlock32"},
	{name: "Log", konst: "UnaryLog", float: "T(math.Log(float64(x)))", f32Via64: "math.Log"},
	{name: "Sqrt", konst: "UnarySqrt", float: "T(math.Sqrt(float64(x)))"},
	{name: "Rsqrt", konst: "UnaryRsqrt", float: "T(1 / math.Sqrt(float64(x)))"},
	{name: "Abs", konst: "UnaryAbs", float: "T(math.Abs(float64(x)))", int: "ewAbsInt(x)"},
	{name: "Neg", konst: "UnaryNeg", float: "-x", int: "-x"},
	{name: "Square", konst: "UnarySquare", float: "x * x", int: "x * x"},
	{name: "Gelu", konst: "UnaryGelu", float: "T(ewGelu(float64(x)))", f32Via64: "ewGelu"},
	{name: "GeluTanh", konst: "UnaryGeluTanh", float: "T(ewGeluTanh(float64(x)))", f32Block: "ewGeluTanhBlock32"},
	{name: "Silu", konst: "UnarySilu", float: "T(ewSilu(float64(x)))", f32Block: "ewSiluBlock32"},
	{name: "Softplus", konst: "UnarySoftplus", float: "T(ewSoftplus(float64(x)))", f32Via64: "ewSoftplus"},
	{name: "Floor", konst: "UnaryFloor", float: "T(math.Floor(float64(x)))"},
	{name: "Ceil", konst: "UnaryCeil", float: "T(math.Ceil(float64(x)))"},
	{name: "Round", konst: "UnaryRound", float: "T(math.RoundToEven(float64(x)))"},
	{name: "Sign", konst: "UnarySign", float: "ewSign(x)", int: "ewSign(x)"},
	{name: "Sin", konst: "UnarySin", float: "T(math.Sin(float64(x)))", f32Via64: "math.Sin"},
	{name: "Cos", konst: "UnaryCos", float: "T(math.Cos(float64(x)))", f32Via64: "math.Cos"},
	{name: "Tan", konst: "UnaryTan", float: "T(math.Tan(float64(x)))", f32Via64: "math.Tan"},
	{name: "Asin", konst: "UnaryAsin", float: "T(math.Asin(float64(x)))", f32Via64: "math.Asin"},
	{name: "Acos", konst: "UnaryAcos", float: "T(math.Acos(float64(x)))", f32Via64: "math.Acos"},
	{name: "Atan", konst: "UnaryAtan", float: "T(math.Atan(float64(x)))", f32Via64: "math.Atan"},
	{name: "Sinh", konst: "UnarySinh", float: "T(math.Sinh(float64(x)))", f32Via64: "math.Sinh"},
	{name: "Cosh", konst: "UnaryCosh", float: "T(math.Cosh(float64(x)))", f32Via64: "math.Cosh"},
	{name: "Asinh", konst: "UnaryAsinh", float: "T(math.Asinh(float64(x)))", f32Via64: "math.Asinh"},
	{name: "Acosh", konst: "UnaryAcosh", float: "T(math.Acosh(float64(x)))", f32Via64: "math.Acosh"},
	{name: "Atanh", konst: "UnaryAtanh", float: "T(math.Atanh(float64(x)))", f32Via64: "math.Atanh"},
	{name: "Erf", konst: "UnaryErf", float: "T(math.Erf(float64(x)))", f32Via64: "math.Erf"},
}

// classOp is a float classification: a template in x of type T giving a
// bool.
type classOp struct {
	name  string
	konst string
	tmpl  string
}

var classes = []classOp{
	{name: "IsNaN", konst: "ClassNaN", tmpl: "x != x"},
	{name: "IsInf", konst: "ClassInf", tmpl: "math.IsInf(float64(x), 0)"},
	{name: "IsPosInf", konst: "ClassPosInf", tmpl: "math.IsInf(float64(x), 1)"},
	{name: "IsNegInf", konst: "ClassNegInf", tmpl: "math.IsInf(float64(x), -1)"},
}

type gen struct{ bytes.Buffer }

func (g *gen) p(format string, args ...any) { fmt.Fprintf(&g.Buffer, format, args...) }

func subst(tmpl string, d dtype) string { return strings.ReplaceAll(tmpl, "T(", d.goType+"(") }

func (op binOp) template(d dtype) string {
	switch {
	case d.float:
		return op.float
	case d.isInt:
		return op.int
	}
	return op.bool
}

func (op binOp) resultType(d dtype) string {
	if op.result != "" {
		return op.result
	}
	return d.goType
}

// binaryLoops writes the three layouts of op on d: both operands
// contiguous (VV), the second a scalar (VS), the first a scalar (SV).
func (g *gen) binaryLoops(op binOp, d dtype) {
	expr := subst(op.template(d), d)
	t, r := d.goType, op.resultType(d)
	fn := "ew" + op.name + "%s" + d.suffix
	g.p("func "+fn+"(o []%s, a, b []%s) {\n", "VV", r, t)
	g.p("\ta = a[:len(o)]\n\tb = b[:len(o)]\n\tfor i := range o {\n\t\tx, y := a[i], b[i]\n\t\to[i] = %s\n\t}\n}\n\n", expr)
	g.p("func "+fn+"(o []%s, a []%s, y %s) {\n", "VS", r, t, t)
	g.p("\ta = a[:len(o)]\n\tfor i := range o {\n\t\tx := a[i]\n\t\to[i] = %s\n\t}\n}\n\n", expr)
	g.p("func "+fn+"(o []%s, x %s, b []%s) {\n", "SV", r, t, t)
	g.p("\tb = b[:len(o)]\n\tfor i := range o {\n\t\ty := b[i]\n\t\to[i] = %s\n\t}\n}\n\n", expr)
}

// binaryFamily writes the loops of ops on each dtype in types and one
// table per dtype, indexed by the ops' constants.
func (g *gen) binaryFamily(title, table string, ops []binOp, types []dtype) {
	g.p("// %s\n\n", title)
	for _, d := range types {
		for _, op := range ops {
			if op.template(d) != "" {
				g.binaryLoops(op, d)
			}
		}
	}
	for _, d := range types {
		r := d.goType
		if ops[0].result != "" {
			r = ops[0].result
		}
		g.p("var %s%s = [...]ewLoops[%s, %s]{\n", table, d.suffix, d.goType, r)
		for _, op := range ops {
			if op.template(d) == "" {
				continue
			}
			f := "ew" + op.name + "%s" + d.suffix
			g.p("\t%s: {"+f+", "+f+", "+f+"},\n", op.konst, "VV", "VS", "SV")
		}
		g.p("}\n\n")
	}
}

func (op unOp) template(d dtype) string {
	if d.float {
		return op.float
	}
	return op.int
}

func (g *gen) unaryFamily() {
	g.p("// Unary ops.\n\n")
	types := numeric
	for _, d := range types {
		for _, op := range unary {
			tmpl := op.template(d)
			if tmpl == "" {
				continue
			}
			g.p("func ew%s%s(o, a []%s) {\n", op.name, d.suffix, d.goType)
			if d == f32 && op.f32Block != "" {
				g.p("\tvar buf [ewBlock]float64\n\ta = a[:len(o)]\n\tfor len(o) > 0 {\n")
				g.p("\t\tn := min(len(o), ewBlock)\n\t\t%s(o[:n], a[:n], buf[:n])\n", op.f32Block)
				g.p("\t\to, a = o[n:], a[n:]\n\t}\n}\n\n")
				continue
			}
			if d == f32 && op.f32Via64 != "" {
				g.p("\tvar buf [ewBlock]float64\n\ta = a[:len(o)]\n\tfor len(o) > 0 {\n")
				g.p("\t\tn := min(len(o), ewBlock)\n\t\tb := buf[:n]\n")
				g.p("\t\tfor i, x := range a[:n] {\n\t\t\tb[i] = float64(x)\n\t\t}\n")
				g.p("\t\tfor i, x := range b {\n\t\t\tb[i] = %s(x)\n\t\t}\n", op.f32Via64)
				g.p("\t\tfor i, x := range b {\n\t\t\to[i] = float32(x)\n\t\t}\n")
				g.p("\t\to, a = o[n:], a[n:]\n\t}\n}\n\n")
				continue
			}
			g.p("\ta = a[:len(o)]\n\tfor i := range o {\n\t\tx := a[i]\n\t\to[i] = %s\n\t}\n}\n\n", subst(tmpl, d))
		}
		// clip and scale take two parameters.
		g.p("func ewClip%s(o, a []%s, lo, hi %s) {\n", d.suffix, d.goType, d.goType)
		g.p("\ta = a[:len(o)]\n\tfor i := range o {\n\t\to[i] = min(max(a[i], lo), hi)\n\t}\n}\n\n")
		g.p("func ewScale%s(o, a []%s, s, b %s) {\n", d.suffix, d.goType, d.goType)
		g.p("\ta = a[:len(o)]\n\tfor i := range o {\n\t\to[i] = a[i]*s + b\n\t}\n}\n\n")
	}
	for _, d := range types {
		g.p("var ewUnary%s = [...]func(o, a []%s){\n", d.suffix, d.goType)
		for _, op := range unary {
			if op.template(d) != "" {
				g.p("\t%s: ew%s%s,\n", op.konst, op.name, d.suffix)
			}
		}
		g.p("}\n\n")
	}
	g.p("func ewNotB(o, a []bool) {\n\ta = a[:len(o)]\n\tfor i := range o {\n\t\to[i] = !a[i]\n\t}\n}\n\n")
}

// classFamily writes the float classifications: one loop per op and
// float dtype, and a table per dtype indexed by the ops' constants.
func (g *gen) classFamily() {
	g.p("// Float classifications.\n\n")
	for _, d := range floats {
		for _, op := range classes {
			g.p("func ew%s%s(o []bool, a []%s) {\n", op.name, d.suffix, d.goType)
			g.p("\ta = a[:len(o)]\n\tfor i := range o {\n\t\tx := a[i]\n\t\to[i] = %s\n\t}\n}\n\n", op.tmpl)
		}
	}
	for _, d := range floats {
		g.p("var ewClass%s = [...]func(o []bool, a []%s){\n", d.suffix, d.goType)
		for _, op := range classes {
			g.p("\t%s: ew%s%s,\n", op.konst, op.name, d.suffix)
		}
		g.p("}\n\n")
	}
}

// castBody is the loop body converting x (of type from) to an element of
// type to.
func castBody(from, to dtype) string {
	switch {
	case to == b1:
		return "o[i] = x != 0"
	case from == b1:
		return "var v " + to.goType + "\n\t\tif x {\n\t\t\tv = 1\n\t\t}\n\t\to[i] = v"
	}
	return "o[i] = " + to.goType + "(x)"
}

func (g *gen) castFamily() {
	g.p("// Casts between distinct dtypes. Float to integer truncates toward\n// zero; anything to bool is x != 0; bool to a number is 0 or 1.\n\n")
	for _, from := range all {
		for _, to := range all {
			if from == to {
				continue
			}
			g.p("func ewCast%sTo%s(o []%s, a []%s) {\n", from.suffix, to.suffix, to.goType, from.goType)
			g.p("\ta = a[:len(o)]\n\tfor i := range o {\n\t\tx := a[i]\n\t\t%s\n\t}\n}\n\n", castBody(from, to))
		}
	}
	g.p("// ewCastRange converts a[lo:hi] into o[lo:hi]; o and a are slices of\n")
	g.p("// distinct element types. It reports false for an unknown pair.\n")
	g.p("func ewCastRange(o, a any, lo, hi int) bool {\n\tswitch a := a.(type) {\n")
	for _, from := range all {
		g.p("\tcase []%s:\n\t\tswitch o := o.(type) {\n", from.goType)
		for _, to := range all {
			if from == to {
				continue
			}
			g.p("\t\tcase []%s:\n\t\t\tewCast%sTo%s(o[lo:hi], a[lo:hi])\n\t\t\treturn true\n", to.goType, from.suffix, to.suffix)
		}
		g.p("\t\t}\n")
	}
	g.p("\t}\n\treturn false\n}\n\n")
}

func main() {
	out := flag.String("o", "elementwise_gen.go", "output file")
	flag.Parse()
	var g gen
	g.p("// Code generated by go run ./internal/elemgen; DO NOT EDIT.\n\n")
	g.p("package kernels\n\nimport \"math\"\n\n")
	g.binaryFamily("Binary arithmetic.", "ewArith", arith, numeric)
	g.binaryFamily("Comparisons.", "ewCompare", compare, all)
	g.binaryFamily("Logical ops.", "ewLogical", logical, []dtype{b1})
	g.unaryFamily()
	g.classFamily()
	g.castFamily()
	src, err := format.Source(g.Bytes())
	if err != nil {
		os.WriteFile(*out+".broken", g.Bytes(), 0o644)
		log.Fatalf("elemgen: formatting the output: %v", err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}
