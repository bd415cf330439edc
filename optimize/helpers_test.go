package optimize_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/onnx"
	"github.com/gopir/gopir/tensor"
)

const modelsDir = "../onnx/testdata/models"

// model is an exported ONNX model of onnx/testdata/models with its golden
// cases, its parameters in a store on alloc.
type model struct {
	name  string
	prog  *ir.Program
	store *exec.Store
	alloc *memory.Allocator
	cases []goldenCase
}

type goldenCase struct {
	inputs, outputs map[string]*tensor.Tensor // on a host allocator
}

// loadModel imports name.onnx; it skips the test when the file is absent
// (resnet18ish.onnx is git-ignored: tools/onnx_export.py writes it).
func loadModel(t *testing.T, name string) *model {
	t.Helper()
	path := filepath.Join(modelsDir, name+".onnx")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s absent (/usr/bin/python3 tools/onnx_export.py --models %s writes it)", path, name)
	}
	alloc := memory.New(memory.Options{})
	m, err := onnx.ImportFile(path, onnx.Options{Alloc: alloc})
	if err != nil {
		t.Fatal(err)
	}
	store := exec.NewStore()
	for n, p := range m.Params {
		store.Set(n, p)
	}
	md := &model{name: name, prog: m.Program, store: store, alloc: alloc}
	var man struct {
		Cases []struct {
			Dir     string            `json:"dir"`
			Inputs  map[string]string `json:"inputs"`
			Outputs map[string]string `json:"outputs"`
		} `json:"cases"`
	}
	b, err := os.ReadFile(filepath.Join(modelsDir, name, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	host := memory.New(memory.Options{})
	read := func(dir, file string) *tensor.Tensor {
		f, err := os.Open(filepath.Join(modelsDir, name, dir, file))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		x, err := tensor.ReadNpy(f, host)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	for _, c := range man.Cases {
		gc := goldenCase{inputs: map[string]*tensor.Tensor{}, outputs: map[string]*tensor.Tensor{}}
		for n, f := range c.Inputs {
			gc.inputs[n] = read(c.Dir, f)
		}
		for n, f := range c.Outputs {
			gc.outputs[n] = read(c.Dir, f)
		}
		md.cases = append(md.cases, gc)
	}
	t.Cleanup(func() {
		store.Release()
		for _, c := range md.cases {
			releaseAll(c.inputs)
			releaseAll(c.outputs)
		}
	})
	return md
}

func releaseAll(ts map[string]*tensor.Tensor) {
	for _, x := range ts {
		x.Release()
	}
}

// rebatch returns x with its leading dim n, made by repeating x's rows.
func rebatch(t *testing.T, x *tensor.Tensor, n int) *tensor.Tensor {
	t.Helper()
	shape := slices.Clone(x.Shape())
	rows := shape[0]
	shape[0] = n
	y, err := tensor.New(memory.New(memory.Options{}), x.DType(), shape...)
	if err != nil {
		t.Fatal(err)
	}
	row := len(x.Raw()) / rows
	for i := range n {
		copy(y.Raw()[i*row:(i+1)*row], x.Raw()[(i%rows)*row:])
	}
	return y
}

// run runs x on feeds and returns its results.
func run(t *testing.T, x *exec.Executable, feeds map[string]*tensor.Tensor) exec.Results {
	t.Helper()
	res, err := x.Run(context.Background(), feeds)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// closeTo fails unless every element of got is within tol·max(1, max
// |want|) of want's: relative to the size of the tensor's values.
func closeTo(got, want *tensor.Tensor, tol float64) error {
	if !slices.Equal(got.Shape(), want.Shape()) {
		return fmt.Errorf("shape %v, want %v", got.Shape(), want.Shape())
	}
	scale := 1.0
	for i := range want.Len() {
		scale = max(scale, math.Abs(want.Float64At(i)))
	}
	worst := 0.0
	for i := range want.Len() {
		d := math.Abs(got.Float64At(i) - want.Float64At(i))
		if math.IsNaN(d) {
			return fmt.Errorf("element %d = %v, want %v", i, got.Float64At(i), want.Float64At(i))
		}
		worst = max(worst, d)
	}
	if worst > tol*scale {
		return fmt.Errorf("differs by up to %.3g, more than %.3g·%.3g", worst, tol, scale)
	}
	return nil
}

// sameBits fails unless got and want hold the same bytes.
func sameBits(got, want *tensor.Tensor) error {
	if !slices.Equal(got.Shape(), want.Shape()) {
		return fmt.Errorf("shape %v, want %v", got.Shape(), want.Shape())
	}
	g, w := got.Raw(), want.Raw()
	for i := range w {
		if g[i] != w[i] {
			return fmt.Errorf("byte %d differs", i)
		}
	}
	return nil
}

// storeSnapshot is a copy of each stored tensor's bytes.
func storeSnapshot(s *exec.Store) map[string][]byte {
	snap := map[string][]byte{}
	for _, n := range s.Names() {
		x, _ := s.Get(n)
		snap[n] = slices.Clone(x.Raw())
	}
	return snap
}
