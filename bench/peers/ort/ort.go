// Package ort runs ONNX models with ONNX Runtime (ORT), a peer for gopir's
// benchmarks of imported ONNX models: the same .onnx file, the same inputs,
// ORT's CPU execution provider, and its outputs checked against the goldens
// that tools/onnx_export.py recorded from PyTorch.
//
// It is its own Go module (like bench/peers/gomlx), so that gopir's main
// module never depends on cgo or ORT. It calls ORT's C API through
// github.com/yalue/onnxruntime_go v1.27.0, which loads the shared library
// with dlopen at run time: nothing of ORT is needed to build it, only to
// run it.
//
// The library is libonnxruntime.so.1 of ORT 1.30.0 as npm's
// onnxruntime-node@1.30.0 package bundles it; install.sh fetches it
// (about 45 MB). Library finds it through the environment variable
// GOPIR_ORT_LIB or at install.sh's default place.
//
// onnxruntime_go v1.27.0 asks the library for version 24 of ORT's C API
// (the OrtApi table of ORT 1.24); ORT keeps every older version of the
// table, append-only, so ORT 1.30 serves it (Init reports the library's
// version string).
package ort

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	ortgo "github.com/yalue/onnxruntime_go"
)

// LibEnv names the environment variable that, when set, is the path of
// libonnxruntime.so.1.
const LibEnv = "GOPIR_ORT_LIB"

// libSubPath is where npm puts the library inside install.sh's directory.
const libSubPath = "node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1"

// InstallDir is where install.sh installs onnxruntime-node by default:
// $GOPIR_ORT_DIR, else $XDG_CACHE_HOME/gopir/ort, else
// $HOME/.cache/gopir/ort.
func InstallDir() string {
	if d := os.Getenv("GOPIR_ORT_DIR"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "gopir", "ort")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "gopir", "ort")
}

// ErrNoLibrary is returned (wrapped) by Library and Init when
// libonnxruntime.so.1 is not where they look.
var ErrNoLibrary = errors.New("ONNX Runtime library not found")

// Library returns the path of libonnxruntime.so.1: $GOPIR_ORT_LIB when set,
// else install.sh's default place. The error says how to install it.
func Library() (string, error) {
	if p := os.Getenv(LibEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%w: %s=%s: %v", ErrNoLibrary, LibEnv, p, err)
		}
		return p, nil
	}
	p := filepath.Join(InstallDir(), libSubPath)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%w at %s; install it with `bash bench/peers/ort/install.sh` "+
			"(npm install of onnxruntime-node@1.30.0, about 45 MB) or set %s to a libonnxruntime.so.1", ErrNoLibrary, p, LibEnv)
	}
	return p, nil
}

var (
	initOnce    sync.Once
	initErr     error
	initVersion string
)

// Init loads the library and creates ORT's environment, once per process;
// it returns ORT's version string. Later calls return the first call's
// result.
func Init() (string, error) {
	initOnce.Do(func() {
		p, err := Library()
		if err != nil {
			initErr = err
			return
		}
		ortgo.SetSharedLibraryPath(p)
		if err := ortgo.InitializeEnvironment(); err != nil {
			initErr = fmt.Errorf("ONNX Runtime at %s: %w", p, err)
			return
		}
		initVersion = ortgo.GetVersion()
	})
	return initVersion, initErr
}

// Options configure a session. The benchmarks use N intra-op threads, one
// inter-op thread and sequential execution.
type Options struct {
	IntraOpThreads int  // ORT's intra-op pool size; 0 is ORT's default (one per core)
	NoSpin         bool // intra-op threads sleep instead of spinning between ops
	// Optimization is ORT's graph optimization level: "all" (the default,
	// ORT's own default), "extended", "basic" or "none".
	Optimization string
	// Profile, if set, makes ORT write its per-node profile (a Chrome
	// trace, JSON) to a file named from this prefix when the session
	// closes: where its time goes, beside gopir's.
	Profile string
}

// Session is a loaded model.
type Session struct {
	s       *ortgo.DynamicAdvancedSession
	Inputs  []ortgo.InputOutputInfo
	Outputs []ortgo.InputOutputInfo
}

// Open loads an .onnx file. Init must have succeeded.
func Open(path string, o Options) (*Session, error) {
	if _, err := Init(); err != nil {
		return nil, err
	}
	ins, outs, err := ortgo.GetInputOutputInfo(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	so, err := ortgo.NewSessionOptions()
	if err != nil {
		return nil, err
	}
	defer so.Destroy()
	if err := so.SetIntraOpNumThreads(o.IntraOpThreads); err != nil {
		return nil, err
	}
	if err := so.SetInterOpNumThreads(1); err != nil {
		return nil, err
	}
	if err := so.SetExecutionMode(ortgo.ExecutionModeSequential); err != nil {
		return nil, err
	}
	if o.NoSpin {
		if err := so.AddSessionConfigEntry("session.intra_op.allow_spinning", "0"); err != nil {
			return nil, err
		}
	}
	levels := map[string]ortgo.GraphOptimizationLevel{
		"": ortgo.GraphOptimizationLevelEnableAll, "all": ortgo.GraphOptimizationLevelEnableAll,
		"extended": ortgo.GraphOptimizationLevelEnableExtended, "basic": ortgo.GraphOptimizationLevelEnableBasic,
		"none": ortgo.GraphOptimizationLevelDisableAll,
	}
	lvl, ok := levels[o.Optimization]
	if !ok {
		return nil, fmt.Errorf("unknown optimization level %q (want all, extended, basic or none)", o.Optimization)
	}
	if err := so.SetGraphOptimizationLevel(lvl); err != nil {
		return nil, err
	}
	if o.Profile != "" {
		if err := so.EnableProfiling(o.Profile); err != nil {
			return nil, err
		}
	}
	var inNames, outNames []string
	for _, v := range ins {
		inNames = append(inNames, v.Name)
	}
	for _, v := range outs {
		outNames = append(outNames, v.Name)
	}
	s, err := ortgo.NewDynamicAdvancedSession(path, inNames, outNames, so)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &Session{s: s, Inputs: ins, Outputs: outs}, nil
}

// Close frees the session.
func (s *Session) Close() error {
	return s.s.Destroy()
}

// Prepared holds ORT tensors made from Arrays once, to be run many times,
// and the outputs of its last run.
type Prepared struct {
	vals []ortgo.Value
	out  []ortgo.Value
}

// Prepare turns inputs, in the order of s.Inputs, into ORT tensors.
func (s *Session) Prepare(inputs []*Array) (*Prepared, error) {
	if len(inputs) != len(s.Inputs) {
		return nil, fmt.Errorf("the model has %d inputs, got %d", len(s.Inputs), len(inputs))
	}
	p := &Prepared{}
	for i, a := range inputs {
		v, err := toValue(a)
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("input %s: %w", s.Inputs[i].Name, err)
		}
		p.vals = append(p.vals, v)
	}
	return p, nil
}

// Close frees the tensors.
func (p *Prepared) Close() {
	for _, v := range p.vals {
		v.Destroy()
	}
	p.vals = nil
	p.dropOutputs()
}

func (p *Prepared) dropOutputs() {
	for _, v := range p.out {
		if v != nil {
			v.Destroy()
		}
	}
	p.out = nil
}

func toValue(a *Array) (ortgo.Value, error) {
	shape := ortgo.NewShape(a.Shape...)
	if len(a.Shape) == 0 { // onnxruntime_go's tensors need a dimension; 0-d is its Scalar
		switch a.DType {
		case "float32":
			return ortgo.NewScalar(a.F32[0])
		case "int64":
			return ortgo.NewScalar(a.I64[0])
		}
	}
	switch a.DType {
	case "float32":
		if a.Len() == 0 {
			return ortgo.NewEmptyTensor[float32](shape)
		}
		return ortgo.NewTensor(shape, a.F32)
	case "int64":
		if a.Len() == 0 {
			return ortgo.NewEmptyTensor[int64](shape)
		}
		return ortgo.NewTensor(shape, a.I64)
	}
	return nil, fmt.Errorf("dtype %q is not supported", a.DType)
}

// RunPrepared runs the model once. The first run lets ORT allocate the
// outputs; later runs write into those same buffers (as a serving loop
// would), and fall back to fresh ones if the shapes change.
func (s *Session) RunPrepared(p *Prepared) error {
	if p.out != nil {
		if err := s.s.Run(p.vals, p.out); err == nil {
			return nil
		}
		p.dropOutputs()
	}
	out := make([]ortgo.Value, len(s.Outputs))
	if err := s.s.Run(p.vals, out); err != nil {
		return err
	}
	p.out = out
	return nil
}

// Results copies p's last outputs, in the order of s.Outputs.
func (s *Session) Results(p *Prepared) ([]*Array, error) {
	var res []*Array
	for i, v := range p.out {
		a := &Array{Shape: []int64(v.GetShape())}
		switch t := v.(type) {
		case *ortgo.Tensor[float32]:
			a.DType, a.F32 = "float32", append([]float32{}, t.GetData()...)
		case *ortgo.Tensor[int64]:
			a.DType, a.I64 = "int64", append([]int64{}, t.GetData()...)
		case *ortgo.Scalar[float32]:
			a.DType, a.F32 = "float32", []float32{t.GetData()}
		case *ortgo.Scalar[int64]:
			a.DType, a.I64 = "int64", []int64{t.GetData()}
		default:
			return nil, fmt.Errorf("output %s: type %T is not supported", s.Outputs[i].Name, v)
		}
		res = append(res, a)
	}
	return res, nil
}

// Run prepares inputs, runs the model once and returns its outputs.
func (s *Session) Run(inputs []*Array) ([]*Array, error) {
	p, err := s.Prepare(inputs)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	if err := s.RunPrepared(p); err != nil {
		return nil, err
	}
	return s.Results(p)
}
