// Package layers holds only a test: that gopir's packages import only the
// layers below them (docs/architecture.md).
package layers

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
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
	"remat":                    {"exec", "ir", "ops", "optimize"},
	"optimize":                 {"exec", "ir", "memory", "ops", "tensor"},
	"mpi":                      nil,
	"dist":                     {"ir", "mpi", "ops"},
	"data":                     {"memory", "tensor"},
	"models":                   {"data", "exec", "ir", "memory", "nn", "ops", "tensor"},
	"models/ppyoloe":           {"data", "ir", "memory", "models", "nn", "ops", "tensor"},
	"train":                    {"autodiff", "dist", "exec", "ir", "memory", "models", "models/ppyoloe", "nn", "ops", "optim", "remat", "tensor"},
	"timeline":                 {"exec", "ir", "memory"},
	"onnx/onnxpb":              nil,
	"onnx":                     {"autodiff", "exec", "ir", "memory", "onnx/onnxpb", "ops", "tensor"},
	"bench":                    {"exec", "ir", "memory", "models", "onnx", "ops", "optimize", "remat", "tensor", "train"},
	"bench/internal/runner":    {"bench"},
	"cmd/gopir":                {"autodiff", "dist", "exec", "ir", "memory", "models", "onnx", "ops", "optimize", "remat", "tensor", "timeline", "train"},
	"bench/internal/ddp":       {"dist", "models", "train"},
	"internal/layers":          nil,
	"internal/fdcheck":         nil,
	"internal/allocs":          nil,
}

func TestImportsGoDownward(t *testing.T) {
	const mod = "github.com/gopir/gopir/"
	// Parse the files (not go list): the test cache then sees every file
	// the verdict depends on.
	imports := map[string]map[string]bool{}
	root := "../.."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
				return filepath.SkipDir // another module (bench/peers, generators)
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		if imports[pkg] == nil {
			imports[pkg] = map[string]bool{}
		}
		for _, imp := range f.Imports {
			if dep, ours := strings.CutPrefix(strings.Trim(imp.Path.Value, `"`), mod); ours {
				imports[pkg][dep] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for pkg, deps := range imports {
		ok, known := allowed[pkg]
		if !known {
			t.Errorf("package %s is not in the layer table (internal/layers and docs/architecture.md)", pkg)
			continue
		}
		for dep := range deps {
			if !slices.Contains(ok, dep) {
				t.Errorf("%s imports %s, which is not below it", pkg, dep)
			}
		}
	}
}
