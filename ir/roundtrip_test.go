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
