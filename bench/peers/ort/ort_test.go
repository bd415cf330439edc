package ort_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gopir/gopir/bench/peers/ort"
)

// models is gopir's onnx/testdata/models, from this module's directory.
var models = filepath.Join("..", "..", "..", "onnx", "testdata", "models")

func TestParseNPY(t *testing.T) {
	a, err := ort.ReadNPY(filepath.Join(models, "cnn", "input_x.npy"))
	if err != nil {
		t.Fatal(err)
	}
	if a.DType != "float32" || !slices.Equal(a.Shape, []int64{2, 3, 32, 32}) || len(a.F32) != 2*3*32*32 {
		t.Errorf("cnn input: %s %v with %d values", a.DType, a.Shape, len(a.F32))
	}
	n, err := ort.ReadNPY(filepath.Join(models, "ctrlflow", "input_n.npy"))
	if err != nil {
		t.Fatal(err)
	}
	if n.DType != "int64" || len(n.Shape) != 0 || !slices.Equal(n.I64, []int64{3}) {
		t.Errorf("ctrlflow n: %s %v %v, want int64 [] [3]", n.DType, n.Shape, n.I64)
	}
	e, err := ort.ReadNPY(filepath.Join(models, "gru_loop", "case2", "input_xs.npy"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(e.Shape, []int64{0, 2, 8}) || e.Len() != 0 {
		t.Errorf("empty xs: shape %v", e.Shape)
	}

	good, err := os.ReadFile(filepath.Join(models, "mlp", "output_y.npy"))
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"empty":     nil,
		"magic":     []byte("\x93NUMPZ\x01\x00"),
		"truncated": good[:len(good)-1],
		"long":      append(slices.Clone(good), 0),
		"header":    good[:20],
		"version":   append([]byte("\x93NUMPY\x09\x00"), good[8:]...),
	} {
		if _, err := ort.ParseNPY(b); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestBatchAxis(t *testing.T) {
	a := &ort.Array{DType: "float32", Shape: []int64{2, 2, 1}, F32: []float32{1, 2, 3, 4}}
	b, err := a.BatchAxis(1, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.Shape, []int64{2, 3, 1}) || !slices.Equal(b.F32, []float32{1, 2, 1, 3, 4, 3}) {
		t.Errorf("got %v %v", b.Shape, b.F32)
	}
	if _, err := a.BatchAxis(3, 1); err == nil {
		t.Error("axis 3 of a rank-3 array: no error")
	}
}

// TestGoldens runs every committed model with ORT and compares its outputs
// with PyTorch's: skipped when the library is not installed.
func TestGoldens(t *testing.T) {
	if _, err := ort.Init(); errors.Is(err, ort.ErrNoLibrary) {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
	dirs, err := filepath.Glob(filepath.Join(models, "*", "manifest.json"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no manifests under %s (%v)", models, err)
	}
	for _, f := range dirs {
		m, err := ort.ReadManifest(filepath.Dir(f))
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range m.ONNX {
			path := filepath.Join(models, file.File)
			t.Run(file.File, func(t *testing.T) {
				if _, err := os.Stat(path); err != nil {
					t.Skipf("%v (tools/onnx_export.py --models %s writes it)", err, m.Model)
				}
				s, err := ort.Open(path, ort.Options{IntraOpThreads: 1})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				for i := range m.Cases {
					c, err := m.Case(i)
					if err != nil {
						t.Fatal(err)
					}
					got, err := s.Run(c.Inputs)
					if err != nil {
						t.Fatalf("%s: %v", c.Name, err)
					}
					for j, want := range c.Outputs {
						if d := ort.Compare(got[j], want); !d.OK(got[j], want) {
							t.Errorf("%s output %d: %+v", c.Name, j, d)
						}
					}
				}
			})
		}
	}
}
