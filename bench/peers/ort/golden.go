package ort

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
)

// Manifest is the part of a model's manifest.json (written by
// tools/onnx_export.py) that the peer uses.
type Manifest struct {
	Model string `json:"model"`
	ONNX  []struct {
		File  string `json:"file"`
		Opset int    `json:"opset"`
	} `json:"onnx"`
	Inputs  []ValueInfo `json:"inputs"`
	Outputs []ValueInfo `json:"outputs"`
	Cases   []struct {
		Dir     string            `json:"dir"`
		Note    string            `json:"note"`
		Inputs  map[string]string `json:"inputs"`
		Outputs map[string]string `json:"outputs"`
	} `json:"cases"`

	dir string
}

// ValueInfo is a graph input or output: dims are numbers or, for symbolic
// dimensions, ONNX's dim_param strings ("batch", "seq").
type ValueInfo struct {
	Name  string `json:"name"`
	DType string `json:"dtype"`
	Shape []any  `json:"shape"`
}

// BatchAxis is the index of the dimension named "batch", or -1.
func (v ValueInfo) BatchAxis() int {
	for i, d := range v.Shape {
		if d == "batch" {
			return i
		}
	}
	return -1
}

// ReadManifest reads dir/manifest.json.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, err
	}
	m := &Manifest{dir: dir}
	if err := json.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "manifest.json"), err)
	}
	if len(m.ONNX) == 0 || len(m.Cases) == 0 {
		return nil, fmt.Errorf("%s: no model file or no cases", filepath.Join(dir, "manifest.json"))
	}
	return m, nil
}

// ModelPath is the first (lowest-opset) .onnx file of the manifest: the
// files live in the directory above the manifest's.
func (m *Manifest) ModelPath() string {
	return filepath.Join(filepath.Dir(m.dir), m.ONNX[0].File)
}

// Case is one golden case: inputs and expected outputs in the graph's order.
type Case struct {
	Name    string
	Note    string
	Inputs  []*Array
	Outputs []*Array
}

// Case reads case i's arrays.
func (m *Manifest) Case(i int) (*Case, error) {
	c := m.Cases[i]
	dir := filepath.Join(m.dir, c.Dir)
	name := c.Dir
	if name == "." {
		name = "case0"
	}
	out := &Case{Name: name, Note: c.Note}
	for _, v := range m.Inputs {
		a, err := ReadNPY(filepath.Join(dir, c.Inputs[v.Name]))
		if err != nil {
			return nil, err
		}
		out.Inputs = append(out.Inputs, a)
	}
	for _, v := range m.Outputs {
		a, err := ReadNPY(filepath.Join(dir, c.Outputs[v.Name]))
		if err != nil {
			return nil, err
		}
		out.Outputs = append(out.Outputs, a)
	}
	return out, nil
}

// Diff compares got with want.
type Diff struct {
	MaxAbs     float64 // max |got − want|
	MaxRel     float64 // max |got − want| / |want| over elements with want ≠ 0
	MaxWant    float64 // max |want|
	ShapeError string  // set when the shapes differ; the rest is then zero
}

// OK says whether every element is within atol + rtol·|want|, with rtol
// 1e-4 and atol 1e-5·max(1, max|want|): float32 results of a different
// summation order, scaled to the output's size.
func (d Diff) OK(got, want *Array) bool {
	if d.ShapeError != "" {
		return false
	}
	atol := 1e-5 * math.Max(1, d.MaxWant)
	g, w := got.Float64s(), want.Float64s()
	for i := range w {
		if !(math.Abs(g[i]-w[i]) <= atol+1e-4*math.Abs(w[i])) {
			return false
		}
	}
	return true
}

// Compare returns the differences between got and want.
func Compare(got, want *Array) Diff {
	if fmt.Sprint(got.Shape) != fmt.Sprint(want.Shape) {
		return Diff{ShapeError: fmt.Sprintf("shape %v, want %v", got.Shape, want.Shape)}
	}
	var d Diff
	g, w := got.Float64s(), want.Float64s()
	for i := range w {
		e := math.Abs(g[i] - w[i])
		if math.IsNaN(e) {
			e = math.Inf(1)
		}
		d.MaxAbs = math.Max(d.MaxAbs, e)
		if w[i] != 0 {
			d.MaxRel = math.Max(d.MaxRel, e/math.Abs(w[i]))
		}
		d.MaxWant = math.Max(d.MaxWant, math.Abs(w[i]))
	}
	return d
}

// BatchAxis returns a with dimension axis made n long by repeating its
// slices along that axis in order (slice i of the result is slice
// i mod a.Shape[axis] of a): a batch of any size made of real data.
func (a *Array) BatchAxis(axis, n int) (*Array, error) {
	if axis < 0 || axis >= len(a.Shape) || a.Shape[axis] == 0 || n < 1 {
		return nil, fmt.Errorf("cannot make %d along axis %d of an array of shape %v", n, axis, a.Shape)
	}
	outer, rows, inner := 1, int(a.Shape[axis]), 1
	for _, d := range a.Shape[:axis] {
		outer *= int(d)
	}
	for _, d := range a.Shape[axis+1:] {
		inner *= int(d)
	}
	shape := append([]int64{}, a.Shape...)
	shape[axis] = int64(n)
	out := &Array{DType: a.DType, Shape: shape}
	for o := range outer {
		for i := range n {
			lo := (o*rows + i%rows) * inner
			if a.DType == "float32" {
				out.F32 = append(out.F32, a.F32[lo:lo+inner]...)
			} else {
				out.I64 = append(out.I64, a.I64[lo:lo+inner]...)
			}
		}
	}
	return out, nil
}
