package ir_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopir/gopir/ir"
)

// TestDocExamples checks that the examples in docs/ir.md are the testdata
// files they claim to be, so that the page stays true to the code.
func TestDocExamples(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "ir.md"))
	if err != nil {
		t.Skipf("docs/ir.md: %v", err)
	}
	var blocks []string
	parts := strings.Split(string(doc), "```")
	for i := 1; i < len(parts); i += 2 {
		if b, ok := strings.CutPrefix(parts[i], "\n"); ok {
			blocks = append(blocks, b)
		}
	}
	want := []string{"design_if.golden", "design_while.pir", "design_while.golden"}
	for i, name := range want {
		if i >= len(blocks) {
			t.Fatalf("docs/ir.md has %d plain code blocks, want at least %d", len(blocks), len(want))
		}
		file, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if blocks[i] != string(file) {
			t.Errorf("code block %d of docs/ir.md is not testdata/%s:\n%s", i+1, name, diff(string(file), blocks[i]))
		}
	}
	p, err := ir.Parse("doc", []byte(blocks[0]))
	if err != nil {
		t.Fatal(err)
	}
	if p.String() != blocks[0] {
		t.Error("the if example is not in canonical form")
	}
}
