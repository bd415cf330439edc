package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/onnx"
	"github.com/gopir/gopir/optimize"
	"github.com/gopir/gopir/tensor"
)

// This file is the gopir half of the inference comparison with ONNX
// Runtime (bench/peers/ort): the models tools/onnx_export.py exported from
// PyTorch into onnx/testdata/models, imported with onnx.ImportFile and run
// on batches made of their golden inputs (BenchmarkONNXInference in
// inference_test.go).

// InferenceModels are the exported models the inference comparison runs.
// resnet18ish.onnx is git-ignored (about 45 MB) and is skipped when absent:
// `/usr/bin/python3 tools/onnx_export.py --models resnet18ish` writes it.
var InferenceModels = []string{"mlp", "cnn", "ctrlflow", "resnet18ish"}

// InferenceBatches are the batch sizes of the models with a batch
// dimension; a model without one (ctrlflow) runs at its fixed batch only.
var InferenceBatches = []int{1, 8, 64}

// ModelsDir finds onnx/testdata/models in the working directory or a
// directory above it: go test runs the benchmarks in bench/, bench/run
// runs the test binary from the repository root.
func ModelsDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "onnx", "testdata", "models")
		if _, err := os.Stat(filepath.Join(p, "mlp", "manifest.json")); err == nil {
			return p, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("onnx/testdata/models not found in the working directory or above it")
		}
		dir = up
	}
}

// Manifest is the part of an exported model's manifest.json (written by
// tools/onnx_export.py) that the inference benchmark reads.
type Manifest struct {
	Model string `json:"model"`
	ONNX  []struct {
		File string `json:"file"`
	} `json:"onnx"`
	Inputs []struct {
		Name  string `json:"name"`
		Shape []any  `json:"shape"` // numbers, or dim_param names such as "batch"
	} `json:"inputs"`
	Cases []struct {
		Dir     string            `json:"dir"`
		Inputs  map[string]string `json:"inputs"`
		Outputs map[string]string `json:"outputs"`
	} `json:"cases"`

	dir string // the manifest's directory
}

// ReadManifest reads the manifest of model under the models directory.
func ReadManifest(models, model string) (*Manifest, error) {
	dir := filepath.Join(models, model)
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, err
	}
	m := &Manifest{dir: dir}
	if err := json.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "manifest.json"), err)
	}
	if len(m.ONNX) == 0 || len(m.Cases) == 0 || len(m.Inputs) == 0 {
		return nil, fmt.Errorf("%s: no model file, no inputs or no cases", filepath.Join(dir, "manifest.json"))
	}
	return m, nil
}

// ModelPath is the manifest's first (opset 13) .onnx file, which lives
// next to the manifest's directory.
func (m *Manifest) ModelPath() string {
	return filepath.Join(filepath.Dir(m.dir), m.ONNX[0].File)
}

// batchAxis is the axis of input i named "batch", or -1.
func (m *Manifest) batchAxis(i int) int {
	for ax, d := range m.Inputs[i].Shape {
		if d == "batch" {
			return ax
		}
	}
	return -1
}

// Batched says whether some input has a batch dimension.
func (m *Manifest) Batched() bool {
	for i := range m.Inputs {
		if m.batchAxis(i) >= 0 {
			return true
		}
	}
	return false
}

// Batches are the batch sizes the benchmark runs model at:
// InferenceBatches, or for a model without a batch dimension the leading
// dimension of its first input (ctrlflow: 2).
func (m *Manifest) Batches() []int {
	if m.Batched() {
		return InferenceBatches
	}
	if len(m.Inputs[0].Shape) > 0 {
		if d, ok := m.Inputs[0].Shape[0].(float64); ok {
			return []int{int(d)}
		}
	}
	return []int{1}
}

// InferencePackCache bounds the packed weight copies an Inference keeps
// (exec.Options.PackCache): more than any exported model's weights, so
// that every matmul weight is packed once, as ONNX Runtime prepacks its
// constant GEMM operands when a session is created.
const InferencePackCache = 1 << 30

// Inference is an imported model compiled for inference, with its golden
// cases.
type Inference struct {
	Model string
	man   *Manifest
	alloc *memory.Allocator // parameters, feeds and everything a run allocates
	m     *onnx.Model
	store *exec.Store
	exe   *exec.Executable
	res   exec.Results // Run's results map, kept from run to run
}

// NewInference imports model's .onnx file from the models directory, puts
// its initializers in an exec.Store and compiles it with the given kernel
// thread count: optimized for inference (package optimize: batch_norm
// folded, epilogues fused), as gopir run does by default, or as imported.
// Optimized, it keeps only the parameters the optimized program reads.
func NewInference(models, model string, threads int, optimized bool) (*Inference, error) {
	man, err := ReadManifest(models, model)
	if err != nil {
		return nil, err
	}
	alloc := memory.New(memory.Options{})
	m, err := onnx.ImportFile(man.ModelPath(), onnx.Options{Alloc: alloc})
	if err != nil {
		return nil, err
	}
	store := exec.NewStore()
	for n, p := range m.Params {
		store.Set(n, p.Retain())
	}
	opts := exec.Options{Alloc: alloc, Store: store, Threads: threads, PackCache: InferencePackCache}
	var exe *exec.Executable
	if optimized {
		exe, _, err = optimize.Compile(m.Program, store, opts)
		// The optimized store holds what the program reads; the rest
		// (batch_norm's parameters, unfolded weights) is freed.
		store.Release()
		m.Release()
		if err == nil {
			store = exe.Store()
		}
	} else {
		exe, err = exec.Compile(m.Program, opts)
		if err != nil {
			store.Release()
			m.Release()
		}
	}
	if err != nil {
		return nil, err
	}
	return &Inference{Model: model, man: man, alloc: alloc, m: m, store: store, exe: exe, res: exec.Results{}}, nil
}

// Manifest returns the model's manifest.
func (in *Inference) Manifest() *Manifest { return in.man }

// Close releases the parameters and their packed copies.
func (in *Inference) Close() {
	in.exe.ReleasePacked()
	in.store.Release()
	in.m.Release()
}

// Run runs the model once on feeds and releases its results, through
// exec's serving path (RunInto into one results map), as a server would.
func (in *Inference) Run(feeds map[string]*tensor.Tensor) error {
	if err := in.exe.RunInto(context.Background(), feeds, in.res); err != nil {
		return fmt.Errorf("%s: %w", in.Model, err)
	}
	in.res.Release()
	return nil
}

func (in *Inference) readNpy(c int, file string) (*tensor.Tensor, error) {
	f, err := os.Open(filepath.Join(in.man.dir, in.man.Cases[c].Dir, file))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := tensor.ReadNpy(f, in.alloc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	return t, nil
}

// caseInputs reads golden case c's inputs.
func (in *Inference) caseInputs(c int) (map[string]*tensor.Tensor, error) {
	feeds := map[string]*tensor.Tensor{}
	for _, v := range in.man.Inputs {
		t, err := in.readNpy(c, in.man.Cases[c].Inputs[v.Name])
		if err != nil {
			ReleaseFeeds(feeds)
			return nil, err
		}
		feeds[v.Name] = t
	}
	return feeds, nil
}

// ReleaseFeeds releases feeds made by Feeds.
func ReleaseFeeds(feeds map[string]*tensor.Tensor) {
	for _, t := range feeds {
		t.Release()
	}
}

// Check runs every golden case at its own batch (2) and returns the
// largest absolute difference from PyTorch's outputs over all cases and
// outputs. It fails, as the ONNX tests do, when an element is off by more
// than 1e-4·max(1, max |want|).
func (in *Inference) Check() (float64, error) {
	worst := 0.0
	for c, cs := range in.man.Cases {
		feeds, err := in.caseInputs(c)
		if err != nil {
			return 0, err
		}
		res, err := in.exe.Run(context.Background(), feeds)
		ReleaseFeeds(feeds)
		if err != nil {
			return 0, fmt.Errorf("%s case %d: %w", in.Model, c, err)
		}
		for _, o := range slices.Sorted(maps.Keys(cs.Outputs)) {
			want, err := in.readNpy(c, cs.Outputs[o])
			if err != nil {
				res.Release()
				return 0, err
			}
			d, err := maxAbsDiff(res[o], want)
			want.Release()
			if err != nil {
				res.Release()
				return 0, fmt.Errorf("%s case %d output %s: %w", in.Model, c, o, err)
			}
			worst = max(worst, d)
		}
		res.Release()
	}
	return worst, nil
}

// maxAbsDiff is max |got − want|, an error when the shapes differ or an
// element is off by more than 1e-4·max(1, max |want|).
func maxAbsDiff(got, want *tensor.Tensor) (float64, error) {
	if got == nil {
		return 0, errors.New("missing")
	}
	if !slices.Equal(got.Shape(), want.Shape()) {
		return 0, fmt.Errorf("shape %v, want %v", got.Shape(), want.Shape())
	}
	scale, d := 1.0, 0.0
	for i := range want.Len() {
		scale = max(scale, math.Abs(want.Float64At(i)))
	}
	for i := range want.Len() {
		e := math.Abs(got.Float64At(i) - want.Float64At(i))
		if !(e <= 1e-4*scale) {
			return e, fmt.Errorf("element %d is %v, want %v (tolerance 1e-4·%g)", i, got.Float64At(i), want.Float64At(i), scale)
		}
		d = max(d, e)
	}
	return d, nil
}

// Feeds returns golden case 0's inputs with each batch dimension made
// batch long by repeating the golden rows in order (row i is golden row
// i mod 2), as ONNX Runtime's peer makes its batches. Inputs without a
// batch dimension are fed as they are. Release them with ReleaseFeeds.
func (in *Inference) Feeds(batch int) (map[string]*tensor.Tensor, error) {
	golden, err := in.caseInputs(0)
	if err != nil {
		return nil, err
	}
	defer ReleaseFeeds(golden)
	feeds := map[string]*tensor.Tensor{}
	for i, v := range in.man.Inputs {
		g := golden[v.Name]
		ax := in.man.batchAxis(i)
		if ax < 0 {
			feeds[v.Name] = g.Retain()
			continue
		}
		t, err := repeatAxis(in.alloc, g, ax, batch)
		if err != nil {
			ReleaseFeeds(feeds)
			return nil, fmt.Errorf("input %s: %w", v.Name, err)
		}
		feeds[v.Name] = t
	}
	return feeds, nil
}

// repeatAxis returns a copy of t with dimension axis made n long: slice i
// along axis is slice i mod t.Shape()[axis] of t.
func repeatAxis(a *memory.Allocator, t *tensor.Tensor, axis, n int) (*tensor.Tensor, error) {
	shape := slices.Clone(t.Shape())
	if axis >= len(shape) || shape[axis] == 0 || n < 1 {
		return nil, fmt.Errorf("cannot make %d along axis %d of %v", n, axis, shape)
	}
	rows := shape[axis]
	outer, inner := 1, t.DType().Size()
	for _, d := range shape[:axis] {
		outer *= d
	}
	for _, d := range shape[axis+1:] {
		inner *= d
	}
	shape[axis] = n
	out, err := tensor.New(a, t.DType(), shape...)
	if err != nil {
		return nil, err
	}
	src, dst := t.Raw(), out.Raw()
	for o := range outer {
		for i := range n {
			s := (o*rows + i%rows) * inner
			copy(dst[(o*n+i)*inner:], src[s:s+inner])
		}
	}
	return out, nil
}

// modelMissing says whether err is a missing .onnx file (resnet18ish).
func modelMissing(err error) bool { return errors.Is(err, fs.ErrNotExist) }
