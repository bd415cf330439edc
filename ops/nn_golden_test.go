package ops_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

// Goldens written by tools/golden_nn.py with PyTorch 1.13: every case of
// testdata/golden/nn_*.json runs through the op and must match each result
// within the case's tolerance.

type nnGoldenTensor struct {
	DType string    `json:"dtype"`
	Shape []int     `json:"shape"`
	Data  []float64 `json:"data"`
}

type nnGoldenCase struct {
	Name    string                     `json:"name"`
	Attrs   map[string]json.RawMessage `json:"attrs"`
	Inputs  []nnGoldenTensor           `json:"inputs"`
	Outputs []nnGoldenTensor           `json:"outputs"`
	Tol     float64                    `json:"tol"`
}

type nnGoldenFile struct {
	Op    string         `json:"op"`
	Cases []nnGoldenCase `json:"cases"`
}

// nnGoldenAttr converts one JSON attribute: numbers with '.' or an exponent
// are floats, other numbers ints; bools; lists of ints.
func nnGoldenAttr(t *testing.T, raw json.RawMessage) ir.Attr {
	s := strings.TrimSpace(string(raw))
	switch {
	case s == "true" || s == "false":
		return ir.Bool(s == "true")
	case strings.HasPrefix(s, "["):
		var l []int
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatalf("attribute %s: %v", s, err)
		}
		v, _ := ir.ToAttr(l)
		return v
	case strings.ContainsAny(s, ".eE"):
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatal(err)
		}
		return ir.Float(f)
	default:
		var i int64
		if err := json.Unmarshal(raw, &i); err != nil {
			t.Fatal(err)
		}
		return ir.Int(i)
	}
}

func TestNNGolden(t *testing.T) {
	nnDebug(t)
	files, err := filepath.Glob("testdata/golden/nn_*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files (run /usr/bin/python3 tools/golden_nn.py): %v", err)
	}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var f nnGoldenFile
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, c := range f.Cases {
			t.Run(f.Op+"/"+c.Name, func(t *testing.T) {
				a := memory.New(memory.Options{})
				var attrs ir.Attrs
				names := make([]string, 0, len(c.Attrs))
				for n := range c.Attrs {
					names = append(names, n)
				}
				for _, n := range names {
					attrs = attrs.With(n, nnGoldenAttr(t, c.Attrs[n]))
				}
				in := make([]*tensor.Tensor, len(c.Inputs))
				for i, g := range c.Inputs {
					dt, ok := ir.ParseDType(g.DType)
					if !ok {
						t.Fatalf("dtype %q", g.DType)
					}
					in[i] = nnFrom(t, a, tensor.DType(dt), g.Data, g.Shape...)
				}
				outs := mustRun(t, a, f.Op, attrs, in...)
				if len(outs) != len(c.Outputs) {
					t.Fatalf("%d results, golden has %d", len(outs), len(c.Outputs))
				}
				for i, g := range c.Outputs {
					if got := outs[i].DType().String(); got != g.DType {
						t.Fatalf("result %d is %s, golden %s", i, got, g.DType)
					}
					closeEnough(t, f.Op+"/"+c.Name, outs[i], g.Data, g.Shape, c.Tol)
				}
				release(outs...)
				release(in...)
				wantAllocated(t, a, 0)
			})
		}
	}
}
