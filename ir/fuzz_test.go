package ir_test

import (
	"os"
	"testing"

	"github.com/gopir/gopir/ir"
)

// FuzzParse checks that Parse never panics and that whatever it accepts
// prints as text that parses again and prints identically. Verify (strict
// and lenient) must not panic either, on anything Parse accepts.
func FuzzParse(f *testing.F) {
	for _, file := range testdataFiles(f) {
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	for _, tc := range syntaxErrorCases {
		if len(tc.src) <= 4096 { // big inputs slow the fuzzer down for nothing
			f.Add([]byte(tc.src))
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		prog, err := ir.Parse("fuzz.pir", src)
		if err != nil {
			if _, ok := err.(ir.ErrorList); !ok {
				t.Fatalf("Parse returned a %T, want an ir.ErrorList: %v", err, err)
			}
			if prog != nil {
				t.Fatalf("Parse returned a program and an error")
			}
			return
		}
		_ = ir.Verify(prog)
		_ = ir.VerifyWith(prog, ir.VerifyOptions{AllowUnregistered: true})
		printed := prog.String()
		again, err := ir.Parse("printed.pir", []byte(printed))
		if err != nil {
			t.Fatalf("printed text does not parse: %v\ninput:\n%s\nprinted:\n%s", err, src, printed)
		}
		if reprinted := again.String(); reprinted != printed {
			t.Fatalf("print is not a fixed point:\n%s", diff(printed, reprinted))
		}
	})
}
