package ir_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gopir/gopir/ir"
)

// hdr is a program's first two lines; the cases put their bad line third.
const hdr = "{\n  (%x) = \"data\" () {name:\"x\", shape:[4], dtype:f32} : () -> tensor<4xf32>\n"

// relu returns hdr and a third line "  (%y) = "relu" (%x)" + rest.
func relu(rest string) string { return hdr + `  (%y) = "relu" (%x)` + rest + "\n}\n" }

// deepIfs nests n "if" ops inside each other, one per line from line 3.
func deepIfs(n int) string {
	var sb strings.Builder
	sb.WriteString("{\n  (%c) = \"data\" () {name:\"c\", shape:[], dtype:i1} : () -> tensor<i1>\n")
	for range n {
		sb.WriteString(`() = "if" (%c) : (tensor<i1>) -> () {` + "\n")
	}
	for range n {
		sb.WriteString("() = \"yield\" () : () -> ()\n} else {\n() = \"yield\" () : () -> ()\n}\n")
	}
	sb.WriteString("}\n")
	return sb.String()
}

const sig = ` : (tensor<4xf32>) -> tensor<4xf32>`

// whileHdr opens a while whose body starts on line 4.
const whileHdr = hdr + `  (%c) = "data" () {name:"c", shape:[], dtype:i1} : () -> tensor<i1>` + "\n" +
	`  (%r) = "while" (%c, %x) : (tensor<i1>, tensor<4xf32>) -> tensor<4xf32> {` + "\n"

var syntaxErrorCases = []struct {
	name      string
	src       string
	line, col int
	msg       string
}{
	{"empty input", "", 1, 1, "expected '{', found end of file"},
	{"constant too short", "{\n  () = \"c\" () {v:tensor<3xf32>[1.0, 2.0]} : () -> ()\n}", 2, 40, "constant of type tensor<3xf32> has 2 elements, want 3"},
	{"constant too long", "{\n  () = \"c\" () {v:tensor<1xi64>[1, 2]} : () -> ()\n}", 2, 35, "constant of type tensor<1xi64> has more than 1 elements"},
	{"constant dynamic", "{\n  () = \"c\" () {v:tensor<?xf32>[]} : () -> ()\n}", 2, 18, "a constant needs a static type, not tensor<?xf32>"},
	{"constant fraction", "{\n  () = \"c\" () {v:tensor<1xi32>[1.5]} : () -> ()\n}", 2, 32, "element 0 of tensor<1xi32>: 1.5 is not an integer"},
	{"constant overflow", "{\n  () = \"c\" () {v:tensor<1xi32>[4294967296]} : () -> ()\n}", 2, 32, "element 0 of tensor<1xi32>: 4294967296 overflows i32"},
	{"constant f32 overflow", "{\n  () = \"c\" () {v:tensor<1xf32>[1e39]} : () -> ()\n}", 2, 32, "element 0 of tensor<1xf32>: 1e+39 overflows f32"},
	{"constant bool", "{\n  () = \"c\" () {v:tensor<1xi1>[2]} : () -> ()\n}", 2, 31, "element 0 of tensor<1xi1>: 2 is not a bool"},
	{"constant string", "{\n  () = \"c\" () {v:tensor<1xf32>[\"x\"]} : () -> ()\n}", 2, 32, "expected a constant element, found \"x\""},
	{"constant huge type", "{\n  () = \"c\" () {v:tensor<100000000000000xf32>[1.0]} : () -> ()\n}", 2, 49, "constant of type tensor<100000000000000xf32> has 1 elements, want 100000000000000"},
	{"no braces", `(%x) = "data" ()`, 1, 1, "expected '{', found '('"},
	{"missing ( of results", hdr + `  %y = "relu" (%x)` + sig + "\n}", 3, 3, "expected an op: '(' starting its result list, found %y"},
	{"missing ) of results", hdr + `  (%y = "relu" (%x)` + sig + "\n}", 3, 7, "expected ',' or ')' in result list, found '='"},
	{"result not a value", hdr + `  (y) = "relu" (%x)` + sig + "\n}", 3, 4, "expected a result name like %x, found y"},
	{"missing ( of operands", hdr + `  (%y) = "relu" %x` + sig + "\n}", 3, 17, "expected '(' starting the operand list, found %x"},
	{"missing ) of operands", hdr + `  (%y) = "relu" (%x` + sig + "\n}", 3, 21, "expected ',' or ')' in operand list, found ':'"},
	{"operand not a value", hdr + `  (%y) = "relu" (x)` + sig + "\n}", 3, 18, "expected an operand like %x, found x"},
	{"missing =", hdr + `  (%y) "relu" (%x)` + sig + "\n}", 3, 8, `expected '=', found "relu"`},
	{"op name not a string", hdr + `  (%y) = relu (%x)` + sig + "\n}", 3, 10, "expected the op name as a quoted string, found relu"},
	{"empty op name", hdr + `  (%y) = "" (%x)` + sig + "\n}", 3, 10, `invalid op name ""`},
	{"bad escape in op name", hdr + `  (%y) = "re\lu" (%x)` + sig + "\n}", 3, 10, `invalid op name "re\lu"`},
	{"value name missing", hdr + `  (%) = "relu" (%x)` + sig + "\n}", 3, 4, "expected a value name after '%'"},
	{"undefined value", relu(``)[:len(hdr)] + `  (%y) = "relu" (%z)` + sig + "\n}", 3, 18, "use of undefined value %z"},
	{"redefined value", hdr + `  (%x) = "relu" (%x)` + sig + "\n}", 3, 4, "value %x is already defined at 2:4"},
	{"redefined result", hdr + `  (%y, %y) = "add" (%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)` + "\n}", 3, 8, "value %y is already defined at 3:4"},
	{"block argument shadows a capture", whileHdr + "  ^(%x: tensor<4xf32>):\n", 5, 5, "value %x is already defined at 2:4"},
	{"value of a closed region", whileHdr + "  ^(%a: tensor<4xf32>):\n    () = \"yield\" (%c, %a) : (tensor<i1>, tensor<4xf32>) -> ()\n  }\n  (%z) = \"relu\" (%a)" + sig + "\n}", 8, 18, "use of undefined value %a"},
	{"missing : before signature", relu(` (tensor<4xf32>) -> tensor<4xf32>`), 3, 22, "expected ':', found '('"},
	{"signature not a list", relu(` : tensor<4xf32> -> tensor<4xf32>`), 3, 24, "expected '(', found tensor<4xf32>"},
	{"missing ->", relu(` : (tensor<4xf32>) tensor<4xf32>`), 3, 40, "expected '->', found tensor<4xf32>"},
	{"missing , in types", hdr + `  (%y) = "add" (%x, %x) : (tensor<4xf32> tensor<4xf32>) -> tensor<4xf32>` + "\n}", 3, 42, "expected ',' or ')' in type list, found tensor<4xf32>"},
	{"not a type", relu(` : (f32) -> tensor<4xf32>`), 3, 25, "expected a type like tensor<2x?xf32>, found f32"},
	{"missing result type", relu(` : (tensor<4xf32>) ->`), 4, 1, "expected a type like tensor<2x?xf32>, found '}'"},
	{"unknown dtype", relu(` : (tensor<4xf16>) -> tensor<4xf16>`), 3, 34, `unknown dtype "f16" in tensor type (want f32, f64, i32, i64 or i1)`},
	{"missing dtype", relu(` : (tensor<4x>) -> tensor<4xf32>`), 3, 34, `unknown dtype "" in tensor type (want f32, f64, i32, i64 or i1)`},
	{"empty type", relu(` : (tensor<>) -> tensor<4xf32>`), 3, 32, `unknown dtype "" in tensor type (want f32, f64, i32, i64 or i1)`},
	{"bad dim", relu(` : (tensor<4xyxf32>) -> tensor<4xf32>`), 3, 34, `invalid dimension "y" in tensor type (want a size or ?)`},
	{"empty dim", relu(` : (tensor<4xxf32>) -> tensor<4xf32>`), 3, 34, `invalid dimension "" in tensor type (want a size or ?)`},
	{"huge dim", relu(` : (tensor<99999999999999999999xf32>) -> tensor<4xf32>`), 3, 32, `invalid dimension "99999999999999999999" in tensor type (want a size or ?)`},
	{"negative dim", relu(` : (tensor<-1xf32>) -> tensor<4xf32>`), 3, 32, "unexpected '-' in tensor type"},
	{"space in type", relu(` : (tensor<4 xf32>) -> tensor<4xf32>`), 3, 33, "unexpected ' ' in tensor type"},
	{"unterminated type", hdr + `  (%y) = "relu" (%x) : (tensor<4xf32`, 3, 25, "tensor type not terminated: expected '>'"},
	{"unknown attribute value", relu(` {a:foo}` + sig), 3, 25, "unknown attribute value foo (want a number, string, bool, dtype or list)"},
	{"missing attribute value", relu(` {a:}` + sig), 3, 25, "expected an attribute value, found '}'"},
	{"value as attribute", relu(` {a:%x}` + sig), 3, 25, "expected an attribute value, found %x"},
	{"bad type attribute", relu(` {a:tensor<f31>}` + sig), 3, 32, "unknown dtype \"f31\" in tensor type (want f32, f64, i32, i64 or i1)"},
	{"stack without <", relu(` {a:stack tensor<f32>}` + sig), 3, 31, "expected '<', found tensor<f32>"},
	{"stack without >", relu(` {a:stack<tensor<f32>}` + sig), 3, 42, "expected '>', found '}'"},
	{"minus without number", relu(` {a:-x}` + sig), 3, 26, "expected a number or inf after '-', found x"},
	{"minus nan", relu(` {a:-nan}` + sig), 3, 26, "expected a number or inf after '-', found nan"},
	{"attribute without :", relu(` {a 1}` + sig), 3, 25, "expected ':', found 1"},
	{"attribute name not an identifier", relu(` {"a":1}` + sig), 3, 23, `expected an attribute name, found "a"`},
	{"missing , in attributes", relu(` {a:1 b:2}` + sig), 3, 27, "expected ',' or '}' in attribute dictionary, found b"},
	{"trailing , in attributes", relu(` {a:1,}` + sig), 3, 27, "expected an attribute name, found '}'"},
	{"missing , in list", relu(` {a:[1 2]}` + sig), 3, 28, "expected ',' or ']' in attribute list, found 2"},
	{"trailing , in list", relu(` {a:[1,]}` + sig), 3, 28, "expected an attribute value, found ']'"},
	{"unterminated list", hdr + `  (%y) = "relu" (%x) {a:[1, 2`, 3, 30, "expected ',' or ']' in attribute list, found end of file"},
	{"duplicate attribute", relu(` {a:1, a:2}` + sig), 3, 28, "attribute a given twice"},
	{"unterminated string", relu(` {a:"abc}` + sig), 3, 25, "string literal not terminated"},
	{"string at EOF", hdr + `  (%y) = "relu" (%x) {a:"abc\"`, 3, 25, "string literal not terminated"},
	{"bad escape", relu(` {a:"\q"}` + sig), 3, 25, `invalid string literal "\q"`},
	{"invalid UTF-8 in string", relu(" {a:\"\xff\"}" + sig), 3, 25, "invalid UTF-8 in string literal"},
	{"illegal character", relu(` @`), 3, 22, "unexpected character '@'"},
	{"illegal rune", relu(` é`), 3, 22, "unexpected character 'é'"},
	{"invalid UTF-8", relu(" \xff"), 3, 22, "invalid UTF-8 byte"},
	{"replacement character", relu(" \uFFFD"), 3, 22, "unexpected character '\uFFFD'"},
	{"single slash", relu(` / comment`), 3, 22, "unexpected character '/'"},
	{"malformed exponent", relu(` {a:1e}` + sig), 3, 25, "malformed exponent in number 1e"},
	{"malformed exponent sign", relu(` {a:1e+}` + sig), 3, 25, "malformed exponent in number 1e+"},
	{"two points", relu(` {a:1.2.3}` + sig), 3, 25, "malformed number 1.2.3"},
	{"letters in number", relu(` {a:12abc}` + sig), 3, 25, "malformed number 12abc"},
	{"hex number", relu(` {a:0x1F}` + sig), 3, 25, "malformed number 0x1F"},
	{"sign and point", relu(` {a:+.}` + sig), 3, 25, "malformed number +."},
	{"sign point exponent", relu(` {a:-.e5}` + sig), 3, 25, "malformed number -.e5"},
	{"point first", relu(` {a:.5}` + sig), 3, 25, "unexpected character '.'"},
	{"integer out of range", relu(` {a:9223372036854775808}` + sig), 3, 25, "integer 9223372036854775808 out of range"},
	{"float out of range", relu(` {a:1e999}` + sig), 3, 25, "float 1e999 out of range"},
	{"operand count", hdr + `  (%y) = "add" (%x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>` + "\n}", 3, 16, `op "add" has 1 operands but its signature lists 2 types`},
	{"operand count, too many", hdr + `  (%y) = "add" (%x, %x) : (tensor<4xf32>) -> tensor<4xf32>` + "\n}", 3, 16, `op "add" has 2 operands but its signature lists 1 types`},
	{"operand type", relu(` : (tensor<4xf64>) -> tensor<4xf64>`), 3, 25, "operand %x has type tensor<4xf32>, but the signature says tensor<4xf64>"},
	{"operand dims", relu(` : (tensor<?xf32>) -> tensor<4xf32>`), 3, 25, "operand %x has type tensor<4xf32>, but the signature says tensor<?xf32>"},
	{"result count", hdr + `  (%y, %z) = "relu" (%x)` + sig + "\n}", 3, 47, `op "relu" has 2 results but its signature lists 1 types`},
	{"result count, none", hdr + `  () = "relu" (%x) : (tensor<4xf32>) -> (tensor<4xf32>)` + "\n}", 3, 41, `op "relu" has 0 results but its signature lists 1 types`},
	{"missing } at EOF", hdr, 3, 1, "expected an op or '}', found end of file"},
	{"missing } of region", whileHdr + "  ^(%a: tensor<4xf32>):\n", 6, 1, "expected an op or '}', found end of file"},
	{"trailing garbage", hdr + "}\n}", 4, 1, "expected end of file after the program's closing '}', found '}'"},
	{"trailing op", "{\n}\n" + `(%x) = "data" ()`, 3, 1, "expected end of file after the program's closing '}', found '('"},
	{"else without {", hdr + `  () = "if" (%x) : (tensor<4xf32>) -> () {` + "\n  } else ()\n}", 4, 10, "expected '{' after else, found '('"},
	{"else without region", hdr + `  () = "relu" (%x) : (tensor<4xf32>) -> () else {}` + "\n}", 3, 44, "expected an op: '(' starting its result list, found else"},
	{"block argument not a value", whileHdr + "  ^(a: tensor<4xf32>):\n", 5, 5, "expected a block argument like %x, found a"},
	{"block argument without :", whileHdr + "  ^(%a tensor<4xf32>):\n", 5, 8, "expected ':', found tensor<4xf32>"},
	{"block arguments without :", whileHdr + "  ^(%a: tensor<4xf32>)\n  }\n}", 6, 3, "expected ':', found '}'"},
	{"block arguments without (", whileHdr + "  ^%a: tensor<4xf32>:\n", 5, 4, "expected '(', found %a"},
	{"block arguments without ,", whileHdr + "  ^(%a: tensor<4xf32> %b: tensor<4xf32>):\n", 5, 23, "expected ',' or ')' in block argument list, found %b"},
	{"deep list", relu(` {a:` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}` + sig), 3, 25 + 512, "nesting deeper than 512 levels"},
	{"deep regions", deepIfs(513), 515, 37, "nesting deeper than 512 levels"},
}

func TestSyntaxErrors(t *testing.T) {
	for _, tc := range syntaxErrorCases {
		t.Run(tc.name, func(t *testing.T) {
			prog, err := ir.Parse("t.pir", []byte(tc.src))
			if err == nil {
				t.Fatalf("Parse succeeded:\n%s", prog)
			}
			if prog != nil {
				t.Errorf("Parse returned a program with its error")
			}
			var list ir.ErrorList
			if !errors.As(err, &list) || len(list) != 1 {
				t.Fatalf("error %v (%T) is not an ErrorList of one error", err, err)
			}
			e := list[0]
			want := ir.Pos{File: "t.pir", Line: tc.line, Col: tc.col}
			if e.Pos != want || e.Msg != tc.msg {
				t.Errorf("got  %s: %s\nwant %s: %s", e.Pos, e.Msg, want, tc.msg)
			}
			if got, want := err.Error(), want.String()+": "+tc.msg; got != want {
				t.Errorf("Error() = %q, want %q", got, want)
			}
		})
	}
}

// TestDeepNestingWithinLimit checks that 512 nested regions are accepted,
// verified and printed.
func TestDeepNestingWithinLimit(t *testing.T) {
	prog, err := ir.Parse("deep.pir", []byte(deepIfs(512)))
	if err != nil {
		t.Fatal(err)
	}
	if err := ir.Verify(prog); err != nil {
		t.Fatal(err)
	}
	again, err := ir.Parse("printed.pir", []byte(prog.String()))
	if err != nil {
		t.Fatal(err)
	}
	if again.String() != prog.String() {
		t.Error("printing a deeply nested program is not a fixed point")
	}
}
