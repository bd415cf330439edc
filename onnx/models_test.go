package onnx_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/onnx"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// The models under testdata/models were exported from PyTorch 1.13 by
// tools/onnx_export.py, with PyTorch's outputs and float64 gradients of
// sum(output) for each case. gopir must import them, match the outputs
// and the gradients (with respect to every initializer and float input)
// to 1e-4, and run them 100 times with memory back where it started.

type manifest struct {
	Model string `json:"model"`
	ONNX  []struct {
		File string `json:"file"`
	} `json:"onnx"`
	Cases []struct {
		Dir     string            `json:"dir"`
		Note    string            `json:"note"`
		Inputs  map[string]string `json:"inputs"`
		Outputs map[string]string `json:"outputs"`
		Grads   struct {
			Initializers map[string]string `json:"initializers"`
			Inputs       map[string]string `json:"inputs"`
		} `json:"grads"`
	} `json:"cases"`
}

func readManifest(t *testing.T, name string) manifest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata/models", name, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func readNpy(t *testing.T, a *memory.Allocator, path string) *tensor.Tensor {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	x, err := tensor.ReadNpy(f, a)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// closeTo compares got with want to tol relative to want's largest
// magnitude (gradients span orders of magnitude).
func closeTo(t *testing.T, what string, got, want *tensor.Tensor, tol float64) {
	t.Helper()
	if !slices.Equal(got.Shape(), want.Shape()) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape(), want.Shape())
	}
	scale := 1.0
	for i := range want.Len() {
		scale = max(scale, math.Abs(want.Float64At(i)))
	}
	for i := range want.Len() {
		if d := math.Abs(got.Float64At(i) - want.Float64At(i)); !(d <= tol*scale) {
			t.Fatalf("%s[%d] = %v, want %v (tolerance %g·%g)", what, i, got.Float64At(i), want.Float64At(i), tol, scale)
		}
	}
}

// withGradients appends to the imported program the sum of its only output
// as a loss, and fetches the gradient of that loss with respect to every
// parameter and every float input, as NAME@GRAD.
func withGradients(t *testing.T, m *onnx.Model) *ir.Program {
	t.Helper()
	p := m.Program
	var out *ir.Value
	var wrt []*ir.Value
	var names []string
	for _, op := range p.Body().Ops() {
		name, _ := op.Attrs.Str("name")
		switch op.Name() {
		case "fetch":
			out = op.Operand(0)
		case "parameter", "data":
			if v := op.Result(0); v.Type().DType.IsFloat() && !slices.Contains(names, name) {
				wrt, names = append(wrt, v), append(names, name)
			}
		}
	}
	b := ir.NewBuilder(p)
	loss := ops.ReduceSum(b, out, nil, false)
	grads, err := autodiff.Backward(b, loss, wrt)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range grads {
		ops.Fetch(b, names[i]+"@GRAD", g)
	}
	if _, err := b.Finish(); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestExportedModels(t *testing.T) {
	for _, name := range []string{"ctrlflow", "mlp", "cnn", "gru_loop", "gru", "lstm"} {
		man := readManifest(t, name)
		for _, file := range man.ONNX {
			t.Run(file.File, func(t *testing.T) {
				alloc := memory.New(memory.Options{})
				m, err := onnx.ImportFile(filepath.Join("testdata/models", file.File), onnx.Options{Alloc: alloc})
				if err != nil {
					t.Fatal(err)
				}
				defer m.Release()
				store := exec.NewStore()
				for n, p := range m.Params {
					store.Set(n, p.Retain())
				}
				defer store.Release()
				x, err := exec.Compile(withGradients(t, m), exec.Options{Alloc: alloc, Store: store, CheckLeaks: true})
				if err != nil {
					t.Fatal(err)
				}
				host := memory.New(memory.Options{})
				base := alloc.Stats().Allocated.Current
				for _, c := range man.Cases {
					dir := filepath.Join("testdata/models", name, c.Dir)
					feeds := map[string]*tensor.Tensor{}
					for in, f := range c.Inputs {
						feeds[in] = readNpy(t, host, filepath.Join(dir, f))
					}
					var peak int64
					for rep := range 100 {
						alloc.ResetPeak()
						res, err := x.Run(context.Background(), feeds)
						if err != nil {
							t.Fatalf("case %s: %v", c.Dir, err)
						}
						if rep == 0 {
							for o, f := range c.Outputs {
								want := readNpy(t, host, filepath.Join(dir, f))
								closeTo(t, c.Dir+": output "+o, res[o], want, 1e-4)
								want.Release()
							}
							grads := map[string]string{}
							for k, v := range c.Grads.Initializers {
								grads[k] = v
							}
							for k, v := range c.Grads.Inputs {
								grads[k] = v
							}
							for w, f := range grads {
								want := readNpy(t, host, filepath.Join(dir, f))
								got := res[w+"@GRAD"]
								if got == nil {
									t.Fatalf("no gradient for %s", w)
								}
								closeTo(t, c.Dir+": gradient of "+w, got, want, 1e-4)
								want.Release()
							}
							peak = alloc.Stats().Allocated.Peak
						}
						res.Release()
						if a := alloc.Stats().Allocated.Current; a != base {
							t.Fatalf("case %s run %d: %d bytes allocated, %d before", c.Dir, rep, a, base)
						}
						if p := alloc.Stats().Allocated.Peak; p != peak {
							t.Fatalf("case %s run %d: peak %d, first run %d", c.Dir, rep, p, peak)
						}
					}
					for _, f := range feeds {
						f.Release()
					}
				}
				if a := host.Stats().Allocated.Current; a != 0 {
					t.Fatalf("%d bytes of goldens left", a)
				}
			})
		}
	}
}

// A Loop's peak does not grow with its trip count: ctrlflow runs its for
// loop n times.
func TestLoopPeakIndependentOfTrips(t *testing.T) {
	alloc := memory.New(memory.Options{})
	m, err := onnx.ImportFile("testdata/models/ctrlflow.onnx", onnx.Options{Alloc: alloc})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	store := exec.NewStore()
	for n, p := range m.Params {
		store.Set(n, p.Retain())
	}
	defer store.Release()
	x, err := exec.Compile(m.Program, exec.Options{Alloc: alloc, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	host := memory.New(memory.Options{})
	xin := readNpy(t, host, "testdata/models/ctrlflow/input_x.npy")
	defer xin.Release()
	var peaks []int64
	for _, trips := range []int64{1, 10, 100, 1000} {
		n, _ := tensor.FromI64(host, []int64{trips}, []int{}...)
		alloc.ResetPeak()
		res, err := x.Run(context.Background(), map[string]*tensor.Tensor{"x": xin, "n": n})
		n.Release()
		if err != nil {
			t.Fatal(err)
		}
		res.Release()
		peaks = append(peaks, alloc.Stats().Allocated.Peak)
	}
	for _, p := range peaks[1:] {
		if p != peaks[0] {
			t.Fatalf("peaks for 1, 10, 100, 1000 trips: %v; want one value", peaks)
		}
	}
}
