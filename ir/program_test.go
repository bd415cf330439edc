package ir_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gopir/gopir/ir"
)

func parseFile(t *testing.T, name string) *ir.Program {
	t.Helper()
	src, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ir.Parse(name, src)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWalkAndStructure(t *testing.T) {
	p := parseFile(t, "nested.pir")
	if p.File != "nested.pir" {
		t.Errorf("File = %q", p.File)
	}
	var names []string
	p.Walk(func(op *ir.Op) bool {
		names = append(names, op.Name())
		return op.Name() != "while" // skip loop bodies
	})
	want := []string{"data", "data", "full", "greater_than", "if", "less_than", "while", "yield",
		"yield", "if", "exp", "yield", "yield", "if", "assert_scalar", "yield", "yield", "add", "fetch", "fetch"}
	if !slices.Equal(names, want) {
		t.Errorf("Walk visited %v\nwant %v", names, want)
	}

	out := p.Lookup("fetch", "same")
	if out == nil || out.Pos.Line != 49 || out.Pos.Col != 3 {
		t.Fatalf("Lookup(fetch, same) = %v at %v", out, out.Pos)
	}
	if p.Lookup("fetch", "nope") != nil || p.Lookup("data", "out") != nil {
		t.Error("Lookup finds what is not there")
	}

	// Find the innermost if: if > while > if.
	var inner *ir.Op
	p.Walk(func(op *ir.Op) bool {
		if op.Name() == "if" && op.ParentOp() != nil {
			inner = op
		}
		return true
	})
	if inner == nil {
		t.Fatal("no nested if")
	}
	loop := inner.ParentOp()
	outer := loop.ParentOp()
	if loop.Name() != "while" || outer.Name() != "if" || outer.ParentOp() != nil {
		t.Fatalf("nesting is %s in %s in %v", inner.Name(), loop.Name(), outer)
	}
	if inner.Block().ParentOp() != loop || inner.Block().Region().Parent() != loop || loop.Region(0).Block() != inner.Block() {
		t.Error("block and region links are wrong")
	}
	if !p.Body().Encloses(inner.Region(0).Block()) || inner.Region(0).Block().Encloses(p.Body()) ||
		outer.Region(1).Block().Encloses(inner.Block()) || !inner.Block().Encloses(inner.Block()) {
		t.Error("Encloses is wrong")
	}
	if p.Body().Region() != nil || p.Body().ParentOp() != nil || p.Body().Terminator() != nil {
		t.Error("the top-level block has a parent or a terminator")
	}
	if y := inner.Region(0).Block().Terminator(); y == nil || !y.Terminator() || y.Name() != "yield" {
		t.Error("the region's terminator is not its yield")
	}
	if i := p.Body().IndexOf(outer); i != 4 || p.Body().IndexOf(inner) != -1 {
		t.Errorf("IndexOf = %d", i)
	}

	// Operands captured from three levels up.
	add := inner.Region(0).Block().Ops()[0]
	x := add.Operand(1)
	if x.Name != "x" || x.Block() != p.Body() || x.Def().Name() != "data" || x.IsBlockArg() {
		t.Errorf("captured operand is %q from %v", x.Name, x.Def())
	}
	acc := add.Operand(0)
	if !acc.IsBlockArg() || acc.Name != "acc" || acc.Index() != 1 || acc.Block() != loop.Region(0).Block() || acc.Def() != nil {
		t.Errorf("block argument operand is %q", acc.Name)
	}
	if add.NumOperands() != 2 || add.NumResults() != 1 || len(add.Regions()) != 0 || len(add.Operands()) != 2 || len(add.Results()) != 1 {
		t.Error("counts are wrong")
	}
	if got, want := add.String(), `(%17) = "add" (%11, %0) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>`; got != want {
		t.Errorf("Op.String() = %s, want %s", got, want)
	}
	ids := map[int]bool{}
	p.Walk(func(op *ir.Op) bool {
		for _, v := range op.Results() {
			ids[v.ID()] = true
		}
		for _, r := range op.Regions() {
			for _, a := range r.Block().Args() {
				ids[a.ID()] = true
			}
		}
		return true
	})
	if len(ids) != p.NumValues() {
		t.Errorf("%d distinct IDs, NumValues %d", len(ids), p.NumValues())
	}
	var inIf []string
	ir.WalkBlock(outer.Region(1).Block(), func(op *ir.Op) bool {
		inIf = append(inIf, op.Name())
		return true
	})
	if !slices.Equal(inIf, []string{"yield"}) {
		t.Errorf("WalkBlock visited %v", inIf)
	}
}

func TestRegistry(t *testing.T) {
	names := ir.RegisteredOps()
	if !slices.IsSorted(names) || !slices.Contains(names, "relu") || !slices.Contains(names, "if") {
		t.Errorf("RegisteredOps() = %v", names)
	}
	if _, ok := ir.LookupSpec("relu"); !ok {
		t.Error("relu is not registered")
	}
	if _, ok := ir.LookupSpec("nope"); ok {
		t.Error("nope is registered")
	}
	for name, want := range map[string]ir.OpSpec{"if": {Regions: 2, BuiltBy: "If", Keyword: "else"}, "while": {Regions: 1, BuiltBy: "While"}, "yield": {Terminator: true, BuiltBy: "Yield"}} {
		spec, ok := ir.LookupSpec(name)
		if !ok || spec.Regions != want.Regions || spec.Terminator != want.Terminator || spec.BuiltBy != want.BuiltBy || spec.Keyword != want.Keyword || spec.Verify == nil {
			t.Errorf("%s: spec %+v, want traits %+v", name, spec, want)
		}
	}
	infer := func([]ir.Type, ir.Attrs) ([]ir.Type, error) { return nil, nil }
	for _, tc := range []struct {
		name string
		spec ir.OpSpec
		msg  string
	}{
		{"if", ir.OpSpec{Infer: infer}, `ir.Register: "if" registered twice`},
		{"loop", ir.OpSpec{Regions: 1}, `ir.Register: "loop" has regions or ends them, and no Verify hook`},
		{"relu", ir.OpSpec{Infer: infer}, `ir.Register: "relu" registered twice`},
		{"no_infer", ir.OpSpec{}, `ir.Register: "no_infer" has no Infer hook`},
	} {
		func() {
			defer func() {
				if r := recover(); r != tc.msg {
					t.Errorf("Register(%q) panicked with %v, want %q", tc.name, r, tc.msg)
				}
			}()
			ir.Register(tc.name, tc.spec)
		}()
	}
}

// TestVerifyLenient checks that AllowUnregistered accepts unknown ops but
// still checks structure and program inputs and outputs.
func TestVerifyLenient(t *testing.T) {
	src := lines(
		`  (%y) = "mystery" (%x, %c) {k:1} : (tensor<4xf32>, tensor<i1>) -> tensor<7xi32>`,
		`  () = "mystery" (%y) : (tensor<7xi32>) -> () {`,
		`    () = "yield" () : () -> ()`,
		`  }`,
		`  () = "fetch" (%y) {name:"x"} : (tensor<7xi32>) -> ()`,
		`  () = "fetch" (%x) {name:"x"} : (tensor<4xf32>) -> ()`)
	p, err := ir.Parse("t.pir", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	// Regions of ops other than "if" print without "else".
	q, err := ir.Parse("t.pir", []byte(lines(
		`  () = "mystery" () : () -> () {`,
		`    () = "yield" () : () -> ()`,
		`  } else {`,
		`    () = "yield" () : () -> ()`,
		`  } {`,
		`    () = "yield" () : () -> ()`,
		`  }`)))
	if err != nil {
		t.Fatal(err)
	}
	if err := ir.VerifyWith(q, ir.VerifyOptions{AllowUnregistered: true}); err != nil {
		t.Error(err)
	}
	if got, want := q.String(), `  () = "mystery" () : () -> () {
    () = "yield" () : () -> ()
  } {
    () = "yield" () : () -> ()
  } {
    () = "yield" () : () -> ()
  }
}
`; !strings.HasSuffix(got, want) {
		t.Errorf("printed\n%s\nwant it to end with\n%s", got, want)
	}
	checkErrors(t, ir.VerifyWith(p, ir.VerifyOptions{AllowUnregistered: true}), "t.pir:", []string{
		`9:3: "fetch": fetch name "x" is already used at t.pir:8:3`,
	})
	checkErrors(t, ir.Verify(p), "t.pir:", []string{
		`4:3: "mystery": unknown op`,
		`5:3: "mystery": unknown op`,
		`9:3: "fetch": fetch name "x" is already used at t.pir:8:3`,
	})
}
