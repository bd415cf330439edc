package ir_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopir/gopir/ir"
)

func finish(t *testing.T, b *ir.Builder) *ir.Program {
	t.Helper()
	p, err := b.Finish()
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	return p
}

func golden(t *testing.T, name string) string {
	t.Helper()
	want, err := os.ReadFile(filepath.Join("testdata", name+".golden"))
	if err != nil {
		t.Fatal(err)
	}
	return string(want)
}

// TestBuilderDesignExamples builds the two examples of docs/ir.md with
// If and While closures and compares the text with the parsed examples.
func TestBuilderDesignExamples(t *testing.T) {
	t.Run("if", func(t *testing.T) {
		b := ir.NewBuilder(ir.NewProgram())
		x := b.Op1("data", ir.A("name", "x", "shape", []int{-1, 4}, "dtype", ir.F32))
		zero := b.Op1("full", ir.A("shape", []int{}, "value", 0.0, "dtype", ir.F32))
		sum := b.Op1("reduce_sum", ir.A("axes", []int{0, 1}, "keepdim", false), x)
		cond := b.Op1("greater_than", nil, sum, zero)
		r := b.If(cond, func(b *ir.Builder) values {
			return values{b.Op1("relu", nil, x)}
		}, func(b *ir.Builder) values {
			return values{x}
		})
		b.Op("fetch", ir.A("name", "out"), r[0])
		if got, want := finish(t, b).String(), golden(t, "design_if"); got != want {
			t.Errorf("built program differs from design_if.golden:\n%s", diff(want, got))
		}
	})
	t.Run("while", func(t *testing.T) {
		b := ir.NewBuilder(ir.NewProgram())
		n := b.Op1("data", ir.A("name", "n", "shape", []int{}, "dtype", ir.I64))
		i0 := b.Op1("full", ir.A("shape", []int{}, "value", 0, "dtype", ir.I64))
		a0 := b.Op1("full", ir.A("shape", []int{}, "value", 0.0, "dtype", ir.F32))
		c0 := b.Op1("less_than", nil, i0, n)
		r := b.While(c0, values{i0, a0}, func(b *ir.Builder, args values) (*ir.Value, values) {
			i, a := args[0], args[1]
			one := b.Op1("full", ir.A("shape", []int{}, "value", 1, "dtype", ir.I64))
			i1 := b.Op1("add", nil, i, one)
			fi := b.Op1("cast", ir.A("dtype", ir.F32), i)
			a1 := b.Op1("add", nil, a, fi)
			return b.Op1("less_than", nil, i1, n), values{i1, a1}
		})
		b.Op("fetch", ir.A("name", "sum"), r[1])
		if got, want := finish(t, b).String(), golden(t, "design_while"); got != want {
			t.Errorf("built program differs from design_while.golden:\n%s", diff(want, got))
		}
	})
}

// TestBuilderPositions checks that every op the Builder makes, the yields
// included, records the line of the Go code that asked for it.
func TestBuilderPositions(t *testing.T) {
	p, b, x, c := start()
	var inner, innerYield ir.Pos
	ifPos, r := here(), b.If(c, func(b *ir.Builder) values {
		var v *ir.Value
		inner, v = here(), b.Op1("relu", nil, x)
		return values{v}
	}, func(b *ir.Builder) values {
		innerYield, _ = here(), b.Yield(x)
		return nil
	})
	genPos, _ := here(), b.Generic("fetch", values{r[0]}, ir.A("name", "out"), nil, 0)
	whilePos, _ := here(), b.WhileTyped(c, nil, nil, func(b *ir.Builder, _ values) (*ir.Value, values) { return c, nil })

	var got []ir.Pos
	p.Walk(func(op *ir.Op) bool {
		got = append(got, op.Pos)
		return true
	})
	want := []ir.Pos{
		x.Def().Pos, c.Def().Pos,
		ifPos,
		inner, ifPos, // relu, then yield
		innerYield, ifPos, // explicit yield, automatic yield
		genPos,
		whilePos, whilePos, // while, its yield
	}
	if len(got) != len(want) {
		t.Fatalf("walked %d ops, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("op %d: Pos = %s, want %s", i, got[i], want[i])
		}
		if !strings.HasSuffix(got[i].File, "_test.go") {
			t.Errorf("op %d: Pos %s is not in a test file", i, got[i])
		}
	}
}

// TestBuilderStickyErrors checks that the first error is kept with the
// position of the Go line that caused it, that later calls neither panic
// nor replace it, and that Finish reports it.
func TestBuilderStickyErrors(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name string
		// fail makes the builder's first error and returns its position.
		fail func(b *ir.Builder, x, c *ir.Value) ir.Pos
		op   string
		msg  string
	}{
		{"unknown op", func(b *ir.Builder, x, c *ir.Value) ir.Pos {
			pos, _ := here(), b.Op("nope", nil, x)
			return pos
		}, "nope", `unknown op "nope" (is package ops imported?)`},
		{"Infer error", func(b *ir.Builder, x, c *ir.Value) ir.Pos {
			pos, _ := here(), b.Op1("add", nil, x, c)
			return pos
		}, "add", "operand types tensor<4xf32> and tensor<i1> differ"},
		{"missing attribute", func(b *ir.Builder, x, c *ir.Value) ir.Pos {
			pos, _ := here(), b.Op1("cast", nil, x)
			return pos
		}, "cast", `missing attribute "dtype" (a dtype)`},
		{"nil operand", func(b *ir.Builder, x, c *ir.Value) ir.Pos {
			pos, _ := here(), b.Op1("relu", nil, nil)
			return pos
		}, "relu", "operand 0 is nil"},
		{"if by name", func(b *ir.Builder, x, c *ir.Value) ir.Pos {
			pos, _ := here(), b.Op("if", nil, c)
			return pos
		}, "if", `"if" must be built with Builder.If`},
		{"while by name", func(b *ir.Builder, x, c *ir.Value) ir.Pos {
			pos, _ := here(), b.Op("while", nil, c)
			return pos
		}, "while", `"while" must be built with Builder.While`},
		{"yield by name", func(b *ir.Builder, x, c *ir.Value) ir.Pos {
			pos, _ := here(), b.Op("yield", nil, c)
			return pos
		}, "yield", `"yield" must be built with Builder.Yield`},
		{"Op1 of an op without results", func(b *ir.Builder, x, c *ir.Value) ir.Pos {
			pos, _ := here(), b.Op1("fetch", ir.A("name", "out"), x)
			return pos
		}, "fetch", "op has 0 results, not 1"},
		{"Fail", func(b *ir.Builder, x, c *ir.Value) ir.Pos {
			pos := here()
			b.Fail(boom)
			return ir.Pos{File: pos.File, Line: pos.Line + 1}
		}, "", "boom"},
		{"if yield counts", func(b *ir.Builder, x, c *ir.Value) ir.Pos {
			pos, _ := here(), b.If(c, func(b *ir.Builder) values { return values{x} }, func(b *ir.Builder) values { return values{x, x} })
			return pos
		}, "if", "then branch yields 1 values, else branch 2"},
		{"if yield counts, nil branch", func(b *ir.Builder, x, c *ir.Value) ir.Pos {
			pos, _ := here(), b.If(c, nil, func(b *ir.Builder) values { return values{x} })
			return pos
		}, "if", "then branch yields 0 values, else branch 1"},
		{"if yield types", func(b *ir.Builder, x, c *ir.Value) ir.Pos {
			pos, _ := here(), b.If(c, func(b *ir.Builder) values { return values{x} }, func(b *ir.Builder) values { return values{c} })
			return pos
		}, "if", "result 0: then branch yields tensor<4xf32>, else branch tensor<i1>"},
		{"if yield ranks", func(b *ir.Builder, x, c *ir.Value) ir.Pos {
			s := b.Op1("reduce_sum", ir.A("axes", []int{0}, "keepdim", false), x)
			pos, _ := here(), b.If(c, func(b *ir.Builder) values { return values{x, x} }, func(b *ir.Builder) values { return values{x, s} })
			return pos
		}, "if", "result 1: then branch yields tensor<4xf32>, else branch tensor<f32>"},
		{"if yields nil", func(b *ir.Builder, x, c *ir.Value) ir.Pos {
			pos, _ := here(), b.If(c, func(b *ir.Builder) values { return values{nil} }, func(b *ir.Builder) values { return values{x} })
			return pos
		}, "if", "yielded value 0 is nil or from a failed op"},
		{"if nil condition", func(b *ir.Builder, x, c *ir.Value) ir.Pos {
			pos, _ := here(), b.If(nil, nil, nil)
			return pos
		}, "if", "condition is nil"},
		{"error inside a branch", func(b *ir.Builder, x, c *ir.Value) ir.Pos {
			var pos ir.Pos
			b.If(c, func(b *ir.Builder) values {
				var v *ir.Value
				pos, v = here(), b.Op1("nope", nil, x)
				return values{v}
			}, func(b *ir.Builder) values { return nil }) // the count mismatch comes second
			return pos
		}, "nope", `unknown op "nope" (is package ops imported?)`},
		{"error inside a loop body", func(b *ir.Builder, x, c *ir.Value) ir.Pos {
			var pos ir.Pos
			b.While(c, values{x}, func(b *ir.Builder, args values) (*ir.Value, values) {
				var v *ir.Value
				pos, v = here(), b.Op1("add", nil, args[0], c)
				return v, values{v}
			})
			return pos
		}, "add", "operand types tensor<4xf32> and tensor<i1> differ"},
		{"while nil condition", func(b *ir.Builder, x, c *ir.Value) ir.Pos {
			pos, _ := here(), b.While(nil, values{x}, nil)
			return pos
		}, "while", "condition is nil"},
		{"while nil initial value", func(b *ir.Builder, x, c *ir.Value) ir.Pos {
			pos, _ := here(), b.While(c, values{x, nil}, nil)
			return pos
		}, "while", "initial value 1 is nil"},
		{"WhileTyped counts", func(b *ir.Builder, x, c *ir.Value) ir.Pos {
			pos, _ := here(), b.WhileTyped(c, values{x}, []ir.Type{x.Type(), x.Type()}, nil)
			return pos
		}, "while", "1 initial values but 2 loop-carried types"},
		{"WhileTyped invalid type", func(b *ir.Builder, x, c *ir.Value) ir.Pos {
			pos, _ := here(), b.WhileTyped(c, values{x}, []ir.Type{{}}, nil)
			return pos
		}, "while", "loop-carried type 0, tensor<invalid>, is invalid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, b, x, c := start()
			pos := tc.fail(b, x, c)

			// Later calls, with and without the failed values, must not
			// panic and must not replace the first error.
			bad := b.Op1("nope", nil, x)
			y := b.Op1("relu", nil, bad)
			_ = b.Op("add", nil, y, bad).Result(0)
			r := b.If(bad, func(b *ir.Builder) values {
				return values{b.Op1("exp", nil, bad)}
			}, func(b *ir.Builder) values { return values{x} })
			_ = r[0].Type()
			w := b.While(bad, values{y, x}, nil)
			_ = w[1].Type()
			w = b.While(c, values{y}, func(b *ir.Builder, args values) (*ir.Value, values) {
				return b.Op1("relu", nil, args[0]), args
			})
			_ = b.If(r[0], nil, nil)
			b.Op("fetch", ir.A("name", "out"), w[0])
			b.Op1("fetch", ir.A("name", "out2"), x)
			b.Fail(errors.New("later"))
			bad.Def().AppendResult(x.Type())
			b.Yield(bad)
			_ = b.Program().String()

			want := &ir.Error{Pos: pos, Op: tc.op, Msg: tc.msg}
			for _, err := range []error{b.Err(), finishErr(b)} {
				var e *ir.Error
				if !errors.As(err, &e) {
					t.Fatalf("error %v (%T) is not an *ir.Error", err, err)
				}
				if e.Pos != want.Pos || e.Op != want.Op || e.Msg != want.Msg {
					t.Errorf("error:\n got  %s\n want %s", e, want)
				}
				if err.Error() != want.Error() {
					t.Errorf("Error() = %q, want %q", err.Error(), want.Error())
				}
			}
			if tc.msg == "boom" && !errors.Is(b.Err(), boom) {
				t.Errorf("Fail's error does not wrap its argument")
			}
		})
	}
}

func finishErr(b *ir.Builder) error {
	p, err := b.Finish()
	if p != nil {
		return errors.New("Finish returned a program with an error")
	}
	return err
}

func TestBuilderFinishVerifies(t *testing.T) {
	_, b, x, _ := start()
	pos, _ := here(), b.Generic("relu", values{x}, nil, []ir.Type{ir.Scalar(ir.F32)}, 0)
	if b.Err() != nil {
		t.Fatalf("Generic recorded an error: %v", b.Err())
	}
	_, err := b.Finish()
	checkErrorList(t, err, []wantErr{{pos, "relu", "result 0 has type tensor<f32>, want tensor<4xf32>"}})
}

// TestBuilderIfJoin checks that If's result types are the joins of the
// yielded types and that nil functions stand for empty branches.
func TestBuilderIfJoin(t *testing.T) {
	_, b, x, c := start()
	d := b.Op1("data", ir.A("name", "d", "shape", []int{-1}, "dtype", ir.F32))
	r := b.If(c, func(b *ir.Builder) values { return values{x, x, d} }, func(b *ir.Builder) values { return values{d, x, x} })
	for i, want := range []string{"tensor<?xf32>", "tensor<4xf32>", "tensor<?xf32>"} {
		if got := r[i].Type().String(); got != want {
			t.Errorf("result %d has type %s, want %s", i, got, want)
		}
	}
	none := b.If(c, nil, nil)
	if len(none) != 0 {
		t.Errorf("If with nil branches has %d results", len(none))
	}
	p := finish(t, b)
	want := `  () = "if" (%1) : (tensor<i1>) -> () {
    () = "yield" () : () -> ()
  } else {
    () = "yield" () : () -> ()
  }
}
`
	if got := p.String(); !strings.HasSuffix(got, want) {
		t.Errorf("program ends with\n%s\nwant\n%s", got, want)
	}
}

// TestWhileTyped checks loop-carried types that are less specific than the
// initial values: a value whose length changes between iterations.
func TestWhileTyped(t *testing.T) {
	_, b, x, c := start()
	dyn := ir.TensorOf(ir.F32, ir.Dynamic)
	r := b.WhileTyped(c, values{x}, []ir.Type{dyn}, func(b *ir.Builder, args values) (*ir.Value, values) {
		if !args[0].Type().Equal(dyn) {
			t.Errorf("block argument has type %s, want %s", args[0].Type(), dyn)
		}
		return c, values{b.Op1("exp", nil, args[0])}
	})
	b.Op("fetch", ir.A("name", "out"), r[0])
	p := finish(t, b)
	want := `{
  (%0) = "data" () {name:"x", shape:[4], dtype:f32} : () -> tensor<4xf32>
  (%1) = "data" () {name:"c", shape:[], dtype:i1} : () -> tensor<i1>
  (%2) = "while" (%1, %0) : (tensor<i1>, tensor<4xf32>) -> tensor<?xf32> {
  ^(%3: tensor<?xf32>):
    (%4) = "exp" (%3) : (tensor<?xf32>) -> tensor<?xf32>
    () = "yield" (%1, %4) : (tensor<i1>, tensor<?xf32>) -> ()
  }
  () = "fetch" (%2) {name:"out"} : (tensor<?xf32>) -> ()
}
`
	if got := p.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestInsertionPoint checks SetInsertionPointBefore, SetInsertionPoint and
// At, at the top level and inside a region.
func TestInsertionPoint(t *testing.T) {
	p, b, x, c := start()
	f := b.Op("fetch", ir.A("name", "out"), x)
	b.If(c, nil, nil)
	ifOp := p.Body().Ops()[len(p.Body().Ops())-1]
	b.SetInsertionPointBefore(f)
	y := b.Op1("relu", nil, x)
	z := b.Op1("exp", nil, y) // after relu, still before fetch
	f.SetOperand(0, z)

	then := ifOp.Region(0).Block()
	ib := b.At(then, 0)
	ib.Op1("neg", nil, x)
	ib.SetInsertionPointBefore(then.Terminator())
	ib.Op1("relu", nil, x)

	b.SetInsertionPoint(p.Body(), 99) // past the end appends
	b.Op("fetch", ir.A("name", "y"), y)
	if b.Block() != p.Body() || ib.Block() != then {
		t.Error("Block() does not return the insertion block")
	}
	if b.Program() != p || ib.Program() != p {
		t.Error("Program() does not return the program")
	}
	want := `{
  (%0) = "data" () {name:"x", shape:[4], dtype:f32} : () -> tensor<4xf32>
  (%1) = "data" () {name:"c", shape:[], dtype:i1} : () -> tensor<i1>
  (%2) = "relu" (%0) : (tensor<4xf32>) -> tensor<4xf32>
  (%3) = "exp" (%2) : (tensor<4xf32>) -> tensor<4xf32>
  () = "fetch" (%3) {name:"out"} : (tensor<4xf32>) -> ()
  () = "if" (%1) : (tensor<i1>) -> () {
    (%4) = "neg" (%0) : (tensor<4xf32>) -> tensor<4xf32>
    (%5) = "relu" (%0) : (tensor<4xf32>) -> tensor<4xf32>
    () = "yield" () : () -> ()
  } else {
    () = "yield" () : () -> ()
  }
  () = "fetch" (%2) {name:"y"} : (tensor<4xf32>) -> ()
}
`
	if got := finish(t, b).String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	checkUses(t, p)
}
