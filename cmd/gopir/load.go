package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/onnx"
	"github.com/gopir/gopir/tensor"
)

// Names of the files `gopir import` writes into its directory.
const (
	programFile = "program.pir"
	paramsFile  = "params.safetensors"
)

// loaded is a program ready to compile, with the values of its parameters
// when its source has them (an ONNX model's initializers, or the
// params.safetensors of an imported directory).
type loaded struct {
	prog   *ir.Program
	params map[string]*tensor.Tensor // owned; release
}

func (l *loaded) release() {
	for _, t := range l.params {
		t.Release()
	}
	l.params = nil
}

// setParams puts the parameters' values into store, which takes its own
// references.
func (l *loaded) setParams(store *exec.Store) {
	for n, t := range l.params {
		store.Set(n, t.Retain())
	}
}

// load reads a program from path: a .onnx model (imported), a directory
// written by `gopir import` (its program.pir and params.safetensors), or a
// program in the text format. paramsPath, if set, names a safetensors file
// of parameter values for a text program. Parameters are allocated from a.
// Every error is bad input.
func load(path, paramsPath string, a *memory.Allocator) (*loaded, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		if paramsPath == "" {
			paramsPath = filepath.Join(path, paramsFile)
		}
		path = filepath.Join(path, programFile)
	}
	if strings.EqualFold(filepath.Ext(path), ".onnx") {
		if paramsPath != "" {
			return nil, badInputf("--params: an ONNX model carries its own parameters")
		}
		m, err := onnx.ImportFile(path, onnx.Options{Alloc: a})
		if err != nil {
			return nil, badInput(err)
		}
		return &loaded{prog: m.Program, params: m.Params}, nil
	}
	prog, err := loadProgram(path)
	if err != nil {
		return nil, err
	}
	l := &loaded{prog: prog}
	if paramsPath != "" {
		if l.params, err = readParams(paramsPath, a); err != nil {
			return nil, badInput(err)
		}
	}
	return l, nil
}

// readParams reads a safetensors file of parameter values.
func readParams(path string, a *memory.Allocator) (map[string]*tensor.Tensor, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	entries, _, err := tensor.ParseSafetensors(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	params := map[string]*tensor.Tensor{}
	for n, e := range entries {
		t, err := e.Tensor(a)
		if err != nil {
			for _, p := range params {
				p.Release()
			}
			return nil, fmt.Errorf("%s: tensor %q: %w", path, n, err)
		}
		params[n] = t
	}
	return params, nil
}

// writeImported writes a program and its parameters to dir as `gopir
// import` does: program.pir and params.safetensors, each atomically.
func writeImported(dir string, l *loaded) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return badInput(err)
	}
	var text strings.Builder
	if err := ir.Print(&text, l.prog); err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, programFile), func(f *os.File) error {
		_, err := f.WriteString(text.String())
		return err
	}); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, paramsFile), func(f *os.File) error {
		return tensor.WriteSafetensors(f, l.params, map[string]string{"format": "gopir-params-1"})
	})
}

// writeAtomic writes path through a temporary file in its directory,
// renamed over path once complete and synced.
func writeAtomic(path string, write func(*os.File) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*.tmp")
	if err != nil {
		return badInput(err)
	}
	defer os.Remove(tmp.Name())
	err = write(tmp)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
