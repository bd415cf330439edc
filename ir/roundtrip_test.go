package ir_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopir/gopir/ir"
)

var update = flag.Bool("update", false, "rewrite the testdata/*.golden files")

func testdataFiles(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.pir"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/*.pir files")
	}
	return files
}

// TestRoundTrip parses every testdata/*.pir file, verifies it strictly,
// prints it, compares the text with testdata/NAME.golden, and checks that
// parsing and printing the printed text again changes nothing.
func TestRoundTrip(t *testing.T) {
	for _, file := range testdataFiles(t) {
		name := strings.TrimSuffix(filepath.Base(file), ".pir")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			prog, err := ir.Parse(file, src)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if err := ir.Verify(prog); err != nil {
				t.Fatalf("Verify: %v", err)
			}
			printed := prog.String()

			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(printed), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if printed != string(want) {
				t.Errorf("printed text differs from %s:\n%s", golden, diff(string(want), printed))
			}

			again, err := ir.Parse(golden, []byte(printed))
			if err != nil {
				t.Fatalf("parsing the printed text: %v", err)
			}
			if err := ir.Verify(again); err != nil {
				t.Fatalf("verifying the printed text: %v", err)
			}
			if got := again.String(); got != printed {
				t.Errorf("print(parse(print)) is not a fixed point:\n%s", diff(printed, got))
			}
			if again.NumValues() != prog.NumValues() {
				t.Errorf("reparsed program has %d values, original %d", again.NumValues(), prog.NumValues())
			}
		})
	}
}

// diff shows the first differing line of two texts.
func diff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("first difference at line %d:\nwant: %s\n got: %s", i+1, w, g)
		}
	}
	return "(no difference)"
}

// PrintNoted puts each note at the end of its op's line (after the regions
// of an op that has some), naming values as the printer does, and the
// noted text parses back to the same program.
func TestPrintNoted(t *testing.T) {
	for _, file := range testdataFiles(t) {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := ir.Parse(file, src)
		if err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		noted := 0
		err = ir.PrintNoted(&sb, prog, func(op *ir.Op, name func(*ir.Value) string) string {
			if op.NumResults() == 0 {
				return ""
			}
			noted++
			return "makes " + name(op.Result(0))
		})
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(sb.String(), "\n")
		plain := strings.Split(prog.String(), "\n")
		if len(lines) != len(plain) {
			t.Fatalf("%s: %d lines noted, %d plain", file, len(lines), len(plain))
		}
		seen := 0
		for i, l := range lines {
			text, note, ok := strings.Cut(l, "  // makes ")
			if !ok {
				if l != plain[i] {
					t.Fatalf("%s:%d: %q, plain %q", file, i+1, l, plain[i])
				}
				continue
			}
			seen++
			if text != plain[i] {
				t.Fatalf("%s:%d: %q, plain %q", file, i+1, text, plain[i])
			}
			// The op's first result is named at the start of its header:
			// this line, or for an op with regions the last line above
			// indented as this one that holds an op.
			indent := func(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }
			head := plain[i]
			for j := i; j >= 0; j-- {
				if indent(plain[j]) == indent(plain[i]) && strings.Contains(plain[j], " = \"") {
					head = plain[j]
					break
				}
			}
			if !strings.Contains(head, "("+note) && !strings.Contains(head, "("+note+",") {
				t.Fatalf("%s:%d: the note names %s, the op's line is %q", file, i+1, note, head)
			}
		}
		if seen != noted {
			t.Fatalf("%s: %d notes asked for, %d printed", file, noted, seen)
		}
		again, err := ir.Parse(file, []byte(sb.String()))
		if err != nil {
			t.Fatalf("%s: the noted text does not parse: %v", file, err)
		}
		if again.String() != prog.String() {
			t.Fatalf("%s: the noted text parses to another program", file)
		}
	}
}
