package ir_test

import (
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/gopir/gopir/ir"
)

// here returns the file and line it is called from, which is what the
// Builder records for an op built on the same line.
func here() ir.Pos {
	_, file, line, _ := runtime.Caller(1)
	return ir.Pos{File: file, Line: line}
}

type values = []*ir.Value

// start returns a program with two inputs: x: tensor<4xf32>, c: tensor<i1>.
func start() (*ir.Program, *ir.Builder, *ir.Value, *ir.Value) {
	p := ir.NewProgram()
	b := ir.NewBuilder(p)
	x := b.Op1("data", ir.A("name", "x", "shape", []int{4}, "dtype", ir.F32))
	c := b.Op1("data", ir.A("name", "c", "shape", []int{}, "dtype", ir.I1))
	return p, b, x, c
}

// wantErr is one verifier error: where, which op, what.
type wantErr struct {
	pos ir.Pos
	op  string
	msg string
}

func checkErrorList(t *testing.T, err error, want []wantErr) {
	t.Helper()
	var list ir.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("error %v (%T) is not an ErrorList", err, err)
	}
	if len(list) != len(want) {
		t.Errorf("got %d errors, want %d:\n%v", len(list), len(want), list)
	}
	for i := 0; i < len(list) && i < len(want); i++ {
		g, w := list[i], want[i]
		if g.Pos != w.pos || g.Op != w.op || g.Msg != w.msg {
			t.Errorf("error %d:\n got  %s: %q: %s\n want %s: %q: %s", i, g.Pos, g.Op, g.Msg, w.pos, w.op, w.msg)
		}
	}
}

// TestVerifyBuilt checks the verifier's rules on programs built in Go,
// including those the parser cannot express (a use before the definition,
// a use from a sibling region or from another program). Errors carry the
// file and line of the Go code that built the op.
func TestVerifyBuilt(t *testing.T) {
	cases := []struct {
		name  string
		build func() (*ir.Program, []wantErr)
	}{
		{"use before def", func() (*ir.Program, []wantErr) {
			p, b, x, _ := start()
			pos, y := here(), b.Op1("relu", nil, x)
			z := b.Op1("exp", nil, y)
			y.Def().SetOperand(0, z)
			return p, []wantErr{{pos, "relu", fmt.Sprintf(`operand 0 (result 0 of "exp" at %s) is used before it is defined`, z.Def().Pos)}}
		}},
		{"use of an if result inside the if", func() (*ir.Program, []wantErr) {
			p, b, x, c := start()
			var pos ir.Pos
			var inner *ir.Op
			r := b.If(c, func(b *ir.Builder) values {
				var v *ir.Value
				pos, v = here(), b.Op1("relu", nil, x)
				inner = v.Def()
				return values{v}
			}, func(b *ir.Builder) values { return values{x} })
			inner.SetOperand(0, r[0])
			return p, []wantErr{{pos, "relu", fmt.Sprintf(`operand 0 (result 0 of "if" at %s) is used before it is defined`, r[0].Def().Pos)}}
		}},
		{"use from a sibling region", func() (*ir.Program, []wantErr) {
			p, b, x, c := start()
			var v *ir.Value
			var pos ir.Pos
			b.If(c, func(b *ir.Builder) values {
				v = b.Op1("relu", nil, x)
				return values{v}
			}, func(b *ir.Builder) values {
				var w *ir.Value
				pos, w = here(), b.Op1("exp", nil, v)
				return values{w}
			})
			return p, []wantErr{{pos, "exp", fmt.Sprintf(`operand 0 (result 0 of "relu" at %s) is defined in a region that does not enclose this op`, v.Def().Pos)}}
		}},
		{"use of a block argument after the loop", func() (*ir.Program, []wantErr) {
			p, b, x, c := start()
			var arg *ir.Value
			wpos, _ := here(), b.While(c, values{x}, func(b *ir.Builder, args values) (*ir.Value, values) {
				arg = args[0]
				return c, args
			})
			pos, _ := here(), b.Op1("relu", nil, arg)
			return p, []wantErr{{pos, "relu", fmt.Sprintf(`operand 0 (block argument 0 of "while" at %s) is defined in a region that does not enclose this op`, wpos)}}
		}},
		{"use of a value from another program", func() (*ir.Program, []wantErr) {
			_, _, other, _ := start()
			p, b, _, _ := start()
			pos, _ := here(), b.Op1("relu", nil, other)
			return p, []wantErr{{pos, "relu", "operand 0 belongs to another program"}}
		}},
		{"nil operand", func() (*ir.Program, []wantErr) {
			p, b, x, _ := start()
			pos, _ := here(), b.Generic("relu", values{nil}, nil, []ir.Type{x.Type()}, 0)
			return p, []wantErr{{pos, "relu", "operand 0 is nil"}}
		}},
		{"operand from a failed op", func() (*ir.Program, []wantErr) {
			p, b, x, _ := start()
			bad := b.Op1("nope", nil, x)
			pos, _ := here(), b.Generic("relu", values{bad}, nil, []ir.Type{x.Type()}, 0)
			return p, []wantErr{{pos, "relu", "operand 0 comes from an op that failed to build"}}
		}},
		{"regions without yield", func() (*ir.Program, []wantErr) {
			p, b, _, c := start()
			pos, _ := here(), b.Generic("if", values{c}, nil, nil, 2)
			return p, []wantErr{
				{pos, "if", "region 0 does not end with yield"},
				{pos, "if", "region 1 does not end with yield"},
			}
		}},
		{"yield not last", func() (*ir.Program, []wantErr) {
			p, b, x, c := start()
			var pos ir.Pos
			b.If(c, func(b *ir.Builder) values {
				pos, _ = here(), b.Yield(x)
				return values{b.Op1("relu", nil, x)}
			}, func(b *ir.Builder) values { return values{x} })
			return p, []wantErr{{pos, "yield", "yield must be the last op of its region"}}
		}},
		{"yield at top level", func() (*ir.Program, []wantErr) {
			p, b, x, _ := start()
			pos, _ := here(), b.Yield(x)
			return p, []wantErr{{pos, "yield", "yield outside a region"}}
		}},
		{"if condition dtype", func() (*ir.Program, []wantErr) {
			p, b, x, _ := start()
			s := b.Op1("reduce_sum", ir.A("axes", []int{0}, "keepdim", false), x)
			pos, _ := here(), b.If(s, func(b *ir.Builder) values { return nil }, func(b *ir.Builder) values { return nil })
			return p, []wantErr{{pos, "if", "condition must be tensor<i1>, is tensor<f32>"}}
		}},
		{"if condition not scalar", func() (*ir.Program, []wantErr) {
			p, b, x, _ := start()
			m := b.Op1("greater_than", nil, x, x)
			pos, _ := here(), b.If(m, func(b *ir.Builder) values { return nil }, func(b *ir.Builder) values { return nil })
			return p, []wantErr{{pos, "if", "condition must be tensor<i1>, is tensor<4xi1>"}}
		}},
		{"if result appended", func() (*ir.Program, []wantErr) {
			p, b, x, c := start()
			pos, r := here(), b.If(c, func(b *ir.Builder) values { return values{x} }, func(b *ir.Builder) values { return values{x} })
			r[0].Def().AppendResult(x.Type())
			return p, []wantErr{
				{pos, "yield", "then branch yields 1 values, if has 2 results"},
				{pos, "yield", "else branch yields 1 values, if has 2 results"},
			}
		}},
		{"if yield operand replaced", func() (*ir.Program, []wantErr) {
			p, b, x, c := start()
			var y *ir.Op
			pos, _ := here(), b.If(c, func(b *ir.Builder) values {
				y = b.Yield(x)
				return nil
			}, func(b *ir.Builder) values { return nil })
			// The explicit yield is not last; make the automatic one wrong too.
			auto := y.Block().Terminator()
			auto.AppendOperand(c)
			return p, []wantErr{
				{pos, "yield", "then branch yields 1 values, if has 0 results"},
				{y.Pos, "yield", "yield must be the last op of its region"},
			}
		}},
		{"while condition type", func() (*ir.Program, []wantErr) {
			p, b, x, c := start()
			pos, _ := here(), b.While(x, values{x}, func(b *ir.Builder, args values) (*ir.Value, values) { return c, args })
			return p, []wantErr{{pos, "while", "condition must be tensor<i1>, is tensor<4xf32>"}}
		}},
		{"while operand type", func() (*ir.Program, []wantErr) {
			p, b, x, c := start()
			pos, _ := here(), b.WhileTyped(c, values{x}, []ir.Type{ir.TensorOf(ir.F64, 4)}, func(b *ir.Builder, args values) (*ir.Value, values) { return c, args })
			return p, []wantErr{{pos, "while", "loop-carried operand 0 has type tensor<4xf32>, block argument is tensor<4xf64>"}}
		}},
		{"while operand appended", func() (*ir.Program, []wantErr) {
			p, b, x, c := start()
			pos, r := here(), b.While(c, values{x}, func(b *ir.Builder, args values) (*ir.Value, values) { return c, args })
			r[0].Def().AppendOperand(x)
			return p, []wantErr{{pos, "while", "while has 2 loop-carried operands, 1 block arguments and 1 results; they must agree"}}
		}},
		{"while block argument appended", func() (*ir.Program, []wantErr) {
			p, b, x, c := start()
			pos, r := here(), b.While(c, values{x}, func(b *ir.Builder, args values) (*ir.Value, values) { return c, args })
			r[0].Def().Region(0).Block().AppendArg(x.Type())
			return p, []wantErr{{pos, "while", "while has 1 loop-carried operands, 2 block arguments and 1 results; they must agree"}}
		}},
		{"while result appended", func() (*ir.Program, []wantErr) {
			p, b, x, c := start()
			pos, r := here(), b.While(c, values{x}, func(b *ir.Builder, args values) (*ir.Value, values) { return c, args })
			r[0].Def().AppendResult(x.Type())
			return p, []wantErr{{pos, "while", "while has 1 loop-carried operands, 1 block arguments and 2 results; they must agree"}}
		}},
		{"while body yield count", func() (*ir.Program, []wantErr) {
			p, b, x, c := start()
			pos, _ := here(), b.While(c, values{x}, func(b *ir.Builder, args values) (*ir.Value, values) { return c, nil })
			return p, []wantErr{{pos, "yield", "while body yields 1 values, want the condition and 1 loop-carried values"}}
		}},
		{"while body yield condition", func() (*ir.Program, []wantErr) {
			p, b, x, c := start()
			pos, _ := here(), b.While(c, values{x}, func(b *ir.Builder, args values) (*ir.Value, values) { return args[0], args })
			return p, []wantErr{{pos, "yield", "while body yields condition of type tensor<4xf32>, want tensor<i1>"}}
		}},
		{"while body yield type", func() (*ir.Program, []wantErr) {
			p, b, x, c := start()
			pos, _ := here(), b.While(c, values{x}, func(b *ir.Builder, args values) (*ir.Value, values) { return c, values{c} })
			return p, []wantErr{{pos, "yield", "while body yields tensor<i1> for loop-carried value 0 of type tensor<4xf32>"}}
		}},
		{"unknown op", func() (*ir.Program, []wantErr) {
			p, b, x, _ := start()
			pos, _ := here(), b.Generic("frobnicate", values{x}, nil, nil, 0)
			return p, []wantErr{{pos, "frobnicate", "unknown op"}}
		}},
		{"empty op name", func() (*ir.Program, []wantErr) {
			p, b, _, _ := start()
			pos, _ := here(), b.Generic("", nil, nil, nil, 0)
			return p, []wantErr{{pos, "", "op has an empty name"}}
		}},
		{"result type differs from Infer", func() (*ir.Program, []wantErr) {
			p, b, x, _ := start()
			pos, _ := here(), b.Generic("relu", values{x}, nil, []ir.Type{ir.TensorOf(ir.F64, 4)}, 0)
			return p, []wantErr{{pos, "relu", "result 0 has type tensor<4xf64>, want tensor<4xf32>"}}
		}},
		{"invalid result type", func() (*ir.Program, []wantErr) {
			p, b, x, _ := start()
			pos, _ := here(), b.Generic("relu", values{x}, nil, []ir.Type{{DType: ir.F32, Dims: []int{-3}}}, 0)
			return p, []wantErr{
				{pos, "relu", "result 0 has an invalid type tensor<-3xf32>: shape [-3]: dims must be sizes >= 0 or ? (dynamic)"},
				{pos, "relu", "result 0 has type tensor<-3xf32>, want tensor<4xf32>"},
			}
		}},
		{"data not at top level", func() (*ir.Program, []wantErr) {
			p, b, x, c := start()
			var pos ir.Pos
			b.If(c, func(b *ir.Builder) values {
				pos, _ = here(), b.Op("data", ir.A("name", "d", "shape", []int{4}, "dtype", ir.F32))
				return values{x}
			}, func(b *ir.Builder) values { return values{x} })
			return p, []wantErr{{pos, "data", "data must be at the top level of the program"}}
		}},
		{"fetch not at top level", func() (*ir.Program, []wantErr) {
			p, b, x, c := start()
			var pos ir.Pos
			b.While(c, nil, func(b *ir.Builder, args values) (*ir.Value, values) {
				pos, _ = here(), b.Op("fetch", ir.A("name", "out"), x)
				return c, nil
			})
			return p, []wantErr{{pos, "fetch", "fetch must be at the top level of the program"}}
		}},
		{"duplicate data name", func() (*ir.Program, []wantErr) {
			p, b, _, _ := start()
			first := p.Lookup("data", "x")
			pos, _ := here(), b.Op("data", ir.A("name", "x", "shape", []int{}, "dtype", ir.F32))
			return p, []wantErr{{pos, "data", fmt.Sprintf(`data name "x" is already used at %s`, first.Pos)}}
		}},
		{"duplicate fetch name", func() (*ir.Program, []wantErr) {
			p, b, x, c := start()
			first, _ := here(), b.Op("fetch", ir.A("name", "out"), x)
			pos, _ := here(), b.Op("fetch", ir.A("name", "out"), c)
			return p, []wantErr{{pos, "fetch", fmt.Sprintf(`fetch name "out" is already used at %s`, first)}}
		}},
		{"parameter type conflict", func() (*ir.Program, []wantErr) {
			p, b, _, _ := start()
			first, _ := here(), b.Op("parameter", ir.A("name", "w", "shape", []int{4, 4}, "dtype", ir.F32))
			b.Op("parameter", ir.A("name", "w", "shape", []int{4, 4}, "dtype", ir.F32))
			pos, _ := here(), b.Op("parameter", ir.A("name", "w", "shape", []int{4, 4}, "dtype", ir.F64))
			return p, []wantErr{{pos, "parameter", fmt.Sprintf(`parameter "w" has type tensor<4x4xf64> here and tensor<4x4xf32> at %s`, first)}}
		}},
		{"attribute name not an identifier", func() (*ir.Program, []wantErr) {
			p, b, x, _ := start()
			pos, _ := here(), b.Op("relu", ir.A("keep-dim", true, "", 1, "9a", 2), x)
			return p, []wantErr{
				{pos, "relu", `attribute name "keep-dim" is not an identifier`},
				{pos, "relu", `attribute name "" is not an identifier`},
				{pos, "relu", `attribute name "9a" is not an identifier`},
			}
		}},
		{"attribute given twice", func() (*ir.Program, []wantErr) {
			p, b, x, _ := start()
			pos, _ := here(), b.Op("relu", ir.Attrs{{Name: "a", Value: ir.Int(1)}, {Name: "a", Value: ir.Int(2)}}, x)
			return p, []wantErr{{pos, "relu", "attribute a given twice"}}
		}},
		{"malformed attribute values", func() (*ir.Program, []wantErr) {
			p, b, x, _ := start()
			attrs := ir.Attrs{{Name: "n", Value: nil}, {Name: "d", Value: ir.InvalidDType}, {Name: "l", Value: ir.List{ir.Int(1), ir.List{ir.DType(42)}}}}
			pos, _ := here(), b.Op("relu", attrs, x)
			return p, []wantErr{
				{pos, "relu", "attribute n: nil value"},
				{pos, "relu", "attribute d: invalid dtype invalid"},
				{pos, "relu", "attribute l: invalid dtype dtype(42)"},
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, want := tc.build()
			// Empty names are reported even where unregistered ops pass.
			opts := ir.VerifyOptions{AllowUnregistered: tc.name == "empty op name"}
			err := ir.VerifyWith(p, opts)
			checkErrorList(t, err, want)
			// Whatever is wrong, printing must not panic.
			_ = p.String()
		})
	}
}
