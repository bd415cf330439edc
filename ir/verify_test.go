package ir_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gopir/gopir/ir"
)

// vhdr defines %x: tensor<4xf32> and %c: tensor<i1> on lines 2 and 3; the
// cases start on line 4.
const vhdr = "{\n" +
	`  (%x) = "data" () {name:"x", shape:[4], dtype:f32} : () -> tensor<4xf32>` + "\n" +
	`  (%c) = "data" () {name:"c", shape:[], dtype:i1} : () -> tensor<i1>` + "\n"

// Lines used by several cases.
const (
	yieldX   = `() = "yield" (%x) : (tensor<4xf32>) -> ()`
	yieldC   = `() = "yield" (%c) : (tensor<i1>) -> ()`
	yieldCX  = `() = "yield" (%c, %x) : (tensor<i1>, tensor<4xf32>) -> ()`
	reluX    = `(%y) = "relu" (%x) : (tensor<4xf32>) -> tensor<4xf32>`
	ifHeader = `(%r) = "if" (%c) : (tensor<i1>) -> tensor<4xf32> {`
)

// lines joins the lines of a case and closes the program.
func lines(ls ...string) string { return vhdr + strings.Join(ls, "\n") + "\n}\n" }

// ifXX is an "if" on %c yielding %x from both branches, with extra lines
// at the start of the then branch.
func ifXX(then ...string) string {
	ls := append([]string{"  " + ifHeader}, then...)
	return lines(append(ls, "    "+yieldX, "  } else {", "    "+yieldX, "  }")...)
}

// TestVerifyParsed checks the verifier's rules on programs written as text,
// one rule broken per case: each wants exactly the listed errors.
func TestVerifyParsed(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want []string // "line:col: \"op\": message"
	}{
		{"region without yield", lines(
			"  "+ifHeader,
			"    "+reluX,
			"  } else {",
			"    "+yieldX,
			"  }"),
			[]string{`4:3: "if": region 0 does not end with yield`}},
		{"empty region", lines(
			`  () = "while" (%c) : (tensor<i1>) -> () {`,
			"  }"),
			[]string{`4:3: "while": region 0 does not end with yield`}},
		{"yield not last", ifXX("    "+yieldX, "    "+reluX),
			[]string{`5:5: "yield": yield must be the last op of its region`}},
		{"yield at top level", lines("  " + yieldX),
			[]string{`4:3: "yield": yield outside a region`}},
		{"yield with attributes", lines(
			"  "+ifHeader,
			`    () = "yield" (%x) {a:1} : (tensor<4xf32>) -> ()`,
			"  } else {",
			"    "+yieldX,
			"  }"),
			[]string{`5:5: "yield": yield takes no results, attributes or regions`}},
		{"if condition dtype", lines(
			`  (%f) = "full" () {shape:[], value:1.0, dtype:f32} : () -> tensor<f32>`,
			`  () = "if" (%f) : (tensor<f32>) -> () {`,
			"    () = \"yield\" () : () -> ()",
			"  } else {",
			"    () = \"yield\" () : () -> ()",
			"  }"),
			[]string{`5:3: "if": condition must be tensor<i1>, is tensor<f32>`}},
		{"if condition not scalar", lines(
			`  (%b) = "data" () {name:"b", shape:[2], dtype:i1} : () -> tensor<2xi1>`,
			`  () = "if" (%b) : (tensor<2xi1>) -> () {`,
			"    () = \"yield\" () : () -> ()",
			"  } else {",
			"    () = \"yield\" () : () -> ()",
			"  }"),
			[]string{`5:3: "if": condition must be tensor<i1>, is tensor<2xi1>`}},
		{"if operands", lines(
			`  () = "if" (%c, %c) : (tensor<i1>, tensor<i1>) -> () {`,
			"    () = \"yield\" () : () -> ()",
			"  } else {",
			"    () = \"yield\" () : () -> ()",
			"  }"),
			[]string{`4:3: "if": if takes 1 operand and 2 regions, has 2 and 2`}},
		{"if without else", lines(
			`  () = "if" (%c) : (tensor<i1>) -> () {`,
			"    () = \"yield\" () : () -> ()",
			"  }"),
			[]string{`4:3: "if": if takes 1 operand and 2 regions, has 1 and 1`}},
		{"if branch yield count", lines(
			"  "+ifHeader,
			`    () = "yield" (%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> ()`,
			"  } else {",
			"    "+yieldX,
			"  }"),
			[]string{`5:5: "yield": then branch yields 2 values, if has 1 results`}},
		{"if branch yield type", lines(
			"  "+ifHeader,
			"    "+yieldX,
			"  } else {",
			"    "+yieldC,
			"  }"),
			[]string{`7:5: "yield": else branch yields tensor<i1> for result 0 of type tensor<4xf32>`}},
		{"if branch yields a less specific type", lines(
			`  (%d) = "data" () {name:"d", shape:[-1], dtype:f32} : () -> tensor<?xf32>`,
			"  "+ifHeader,
			"    "+yieldX,
			"  } else {",
			`    () = "yield" (%d) : (tensor<?xf32>) -> ()`,
			"  }"),
			[]string{`8:5: "yield": else branch yields tensor<?xf32> for result 0 of type tensor<4xf32>`}},
		{"if branch block arguments", lines(
			"  "+ifHeader,
			"  ^(%a: tensor<4xf32>):",
			"    "+yieldX,
			"  } else {",
			"    "+yieldX,
			"  }"),
			[]string{`4:3: "if": then branch must not have block arguments`}},
		{"while condition type", lines(
			`  (%r) = "while" (%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {`,
			"  ^(%a: tensor<4xf32>):",
			"    "+yieldCX,
			"  }"),
			[]string{`4:3: "while": condition must be tensor<i1>, is tensor<4xf32>`}},
		{"while condition not scalar", lines(
			`  (%b) = "data" () {name:"b", shape:[1], dtype:i1} : () -> tensor<1xi1>`,
			`  () = "while" (%b) : (tensor<1xi1>) -> () {`,
			"    "+yieldC,
			"  }"),
			[]string{`5:3: "while": condition must be tensor<i1>, is tensor<1xi1>`}},
		{"while without operands", lines(
			`  () = "while" () : () -> () {`,
			"    "+yieldC,
			"  }"),
			[]string{`4:3: "while": while takes a condition operand and 1 region, has 0 operands and 1 regions`}},
		{"while without region", lines(
			`  () = "while" (%c) : (tensor<i1>) -> ()`),
			[]string{`4:3: "while": while takes a condition operand and 1 region, has 1 operands and 0 regions`}},
		{"while block argument count", lines(
			`  (%r) = "while" (%c, %x) : (tensor<i1>, tensor<4xf32>) -> tensor<4xf32> {`,
			"  ^(%a: tensor<4xf32>, %b: tensor<4xf32>):",
			"    "+yieldCX,
			"  }"),
			[]string{`4:3: "while": while has 1 loop-carried operands, 2 block arguments and 1 results; they must agree`}},
		{"while result count", lines(
			`  () = "while" (%c, %x) : (tensor<i1>, tensor<4xf32>) -> () {`,
			"  ^(%a: tensor<4xf32>):",
			"    "+yieldCX,
			"  }"),
			[]string{`4:3: "while": while has 1 loop-carried operands, 1 block arguments and 0 results; they must agree`}},
		{"while operand count", lines(
			`  (%r) = "while" (%c) : (tensor<i1>) -> tensor<4xf32> {`,
			"  ^(%a: tensor<4xf32>):",
			"    "+yieldCX,
			"  }"),
			[]string{`4:3: "while": while has 0 loop-carried operands, 1 block arguments and 1 results; they must agree`}},
		{"while operand type", lines(
			`  (%r) = "while" (%c, %x) : (tensor<i1>, tensor<4xf32>) -> tensor<4xf64> {`,
			"  ^(%a: tensor<4xf64>):",
			`    () = "yield" (%c, %a) : (tensor<i1>, tensor<4xf64>) -> ()`,
			"  }"),
			[]string{`4:3: "while": loop-carried operand 0 has type tensor<4xf32>, block argument is tensor<4xf64>`}},
		{"while result type", lines(
			`  (%r) = "while" (%c, %x) : (tensor<i1>, tensor<4xf32>) -> tensor<4xf32> {`,
			"  ^(%a: tensor<?xf32>):",
			`    () = "yield" (%c, %a) : (tensor<i1>, tensor<?xf32>) -> ()`,
			"  }"),
			[]string{`4:3: "while": result 0 has type tensor<4xf32>, block argument is tensor<?xf32>`}},
		{"while body yield count", lines(
			`  (%r) = "while" (%c, %x) : (tensor<i1>, tensor<4xf32>) -> tensor<4xf32> {`,
			"  ^(%a: tensor<4xf32>):",
			"    "+yieldC,
			"  }"),
			[]string{`6:5: "yield": while body yields 1 values, want the condition and 1 loop-carried values`}},
		{"while body yield condition", lines(
			`  (%r) = "while" (%c, %x) : (tensor<i1>, tensor<4xf32>) -> tensor<4xf32> {`,
			"  ^(%a: tensor<4xf32>):",
			`    () = "yield" (%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> ()`,
			"  }"),
			[]string{`6:5: "yield": while body yields condition of type tensor<4xf32>, want tensor<i1>`}},
		{"while body yield type", lines(
			`  (%r) = "while" (%c, %x) : (tensor<i1>, tensor<4xf32>) -> tensor<4xf32> {`,
			"  ^(%a: tensor<4xf32>):",
			`    () = "yield" (%c, %c) : (tensor<i1>, tensor<i1>) -> ()`,
			"  }"),
			[]string{`6:5: "yield": while body yields tensor<i1> for loop-carried value 0 of type tensor<4xf32>`}},
		{"unknown op", lines(`  (%y) = "frobnicate" (%x) : (tensor<4xf32>) -> tensor<4xf32>`),
			[]string{`4:3: "frobnicate": unknown op`}},
		{"registered op with a region", lines(
			`  (%y) = "relu" (%x) : (tensor<4xf32>) -> tensor<4xf32> {`,
			"    () = \"yield\" () : () -> ()",
			"  }"),
			[]string{`4:3: "relu": op takes no regions, has 1`}},
		{"result type differs from Infer", lines(`  (%y) = "relu" (%x) : (tensor<4xf32>) -> tensor<?xf32>`),
			[]string{`4:3: "relu": result 0 has type tensor<?xf32>, want tensor<4xf32>`}},
		{"result count differs from Infer", lines(`  (%y, %z) = "relu" (%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)`),
			[]string{`4:3: "relu": op has 2 results, want 1`}},
		{"Infer fails", lines(`  (%y) = "add" (%x, %c) : (tensor<4xf32>, tensor<i1>) -> tensor<4xf32>`),
			[]string{`4:3: "add": operand types tensor<4xf32> and tensor<i1> differ`}},
		{"Verify hook fails", lines(`  () = "assert_scalar" (%x) : (tensor<4xf32>) -> ()`),
			[]string{`4:3: "assert_scalar": operand must be a scalar`}},
		{"data not at top level", lines(
			`  () = "while" (%c) : (tensor<i1>) -> () {`,
			`    (%d) = "data" () {name:"d", shape:[], dtype:i1} : () -> tensor<i1>`,
			`    () = "yield" (%d) : (tensor<i1>) -> ()`,
			"  }"),
			[]string{`5:5: "data": data must be at the top level of the program`}},
		{"fetch not at top level", ifXX(`    () = "fetch" (%x) {name:"out"} : (tensor<4xf32>) -> ()`),
			[]string{`5:5: "fetch": fetch must be at the top level of the program`}},
		{"parameter not at top level", ifXX(`    (%w) = "parameter" () {name:"w", shape:[4], dtype:f32} : () -> tensor<4xf32>`),
			[]string{`5:5: "parameter": parameter must be at the top level of the program`}},
		{"duplicate data name", lines(`  (%x2) = "data" () {name:"x", shape:[4], dtype:f32} : () -> tensor<4xf32>`),
			[]string{`4:3: "data": data name "x" is already used at t.pir:2:3`}},
		{"duplicate fetch name", lines(
			`  () = "fetch" (%x) {name:"out"} : (tensor<4xf32>) -> ()`,
			`  () = "fetch" (%c) {name:"out"} : (tensor<i1>) -> ()`),
			[]string{`5:3: "fetch": fetch name "out" is already used at t.pir:4:3`}},
		{"data and fetch may share a name", lines(`  () = "fetch" (%x) {name:"x"} : (tensor<4xf32>) -> ()`),
			nil},
		{"fetch without a name", lines(`  () = "fetch" (%x) : (tensor<4xf32>) -> ()`),
			[]string{`4:3: "fetch": needs a non-empty string attribute name`}},
		{"fetch with an empty name", lines(`  () = "fetch" (%x) {name:""} : (tensor<4xf32>) -> ()`),
			[]string{`4:3: "fetch": needs a non-empty string attribute name`}},
		{"data with a name that is not a string", lines(`  (%d) = "data" () {name:1, shape:[], dtype:i1} : () -> tensor<i1>`),
			[]string{`4:3: "data": needs a non-empty string attribute name`}},
		{"parameter type conflict", lines(
			`  (%w) = "parameter" () {name:"w", shape:[4], dtype:f32} : () -> tensor<4xf32>`,
			`  (%w2) = "parameter" () {name:"w", shape:[2], dtype:f32} : () -> tensor<2xf32>`),
			[]string{`5:3: "parameter": parameter "w" has type tensor<2xf32> here and tensor<4xf32> at t.pir:4:3`}},
		{"errors in source order", lines(
			`  () = "if" (%x) : (tensor<4xf32>) -> () {`,
			`    () = "nope" () : () -> ()`,
			"  } else {",
			"  }",
			`  () = "nope2" () : () -> ()`),
			[]string{
				`4:3: "if": region 0 does not end with yield`,
				`4:3: "if": region 1 does not end with yield`,
				`4:3: "if": condition must be tensor<i1>, is tensor<4xf32>`,
				`5:5: "nope": unknown op`,
				`8:3: "nope2": unknown op`,
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prog, err := ir.Parse("t.pir", []byte(tc.src))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			checkErrors(t, ir.Verify(prog), "t.pir:", tc.want)
		})
	}
}

// checkErrors checks that err is an ErrorList whose entries, printed, are
// prefix+want[i].
func checkErrors(t *testing.T, err error, prefix string, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	var list ir.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("error %v (%T) is not an ErrorList", err, err)
	}
	var got []string
	for _, e := range list {
		got = append(got, e.Error())
	}
	var full []string
	for _, w := range want {
		full = append(full, prefix+w)
	}
	if strings.Join(got, "\n") != strings.Join(full, "\n") {
		t.Errorf("errors:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(full, "\n\t"))
	}
}
