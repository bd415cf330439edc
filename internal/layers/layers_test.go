// Package layers holds only a test: that gopir's packages import only the
// layers below them (docs/architecture.md).
package layers

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// allowed lists, for each package, the gopir packages it may import.
var allowed = map[string][]string{
	"ir":                       nil,
	"memory":                   nil,
	"kernels":                  nil,
	"kernels/internal/elemgen": nil,
	"tensor":                   {"memory"},
	"ops":                      {"ir", "kernels", "memory", "tensor"},
	"exec":                     {"ir", "memory", "ops", "tensor"},
	"autodiff":                 {"ir", "ops"},
	"nn":                       {"ir", "memory", "ops", "tensor"},
	"optim":                    {"autodiff", "ir", "memory", "ops", "tensor"},
	"data":                     {"memory", "tensor"},
	"models":                   {"data", "exec", "ir", "memory", "nn", "ops", "tensor"},
	"train":                    {"autodiff", "exec", "ir", "memory", "models", "nn", "ops", "optim", "tensor"},
	"onnx/onnxpb":              nil,
	"onnx":                     {"exec", "ir", "memory", "onnx/onnxpb", "ops", "tensor"},
	"bench":                    {"exec", "ir", "memory", "models", "ops", "tensor", "train"},
	"bench/internal/runner":    {"bench"},
	"cmd/gopir":                {"autodiff", "exec", "ir", "memory", "models", "onnx", "ops", "tensor", "train"},
	"internal/layers":          nil,
}

func TestImportsGoDownward(t *testing.T) {
	const mod = "github.com/gopir/gopir/"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", mod+"...").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], mod)
		ok, known := allowed[pkg]
		if !known {
			t.Errorf("package %s is not in the layer table (internal/layers and docs/architecture.md)", pkg)
			continue
		}
		for _, imp := range f[1:] {
			if dep, ours := strings.CutPrefix(imp, mod); ours && !slices.Contains(ok, dep) {
				t.Errorf("%s imports %s, which is not below it", pkg, dep)
			}
		}
	}
}
