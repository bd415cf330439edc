package onnx

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// DebianTestData is where Debian's libonnx-testdata package installs
// ONNX's backend tests (node, pytorch-converted, pytorch-operator, simple;
// "real" holds only download links and has no models).
const DebianTestData = "/usr/share/libonnx-testdata/data"

// TestCase is one test of an ONNX backend test directory: a model and its
// data sets.
type TestCase struct {
	Name      string // the test's directory relative to the root, with slashes: "node/test_abs"
	Dir       string // the test's directory
	ModelPath string // Dir/model.onnx
	DataSets  []DataSet
}

// DataSet is one test_data_set_N directory: serialized inputs and expected
// outputs (TensorProto, SequenceProto or OptionalProto, as the model's
// graph input and output types say), by index.
type DataSet struct {
	Dir     string
	Inputs  []string // paths of input_0.pb, input_1.pb, ... in index order
	Outputs []string // paths of output_0.pb, output_1.pb, ...
}

// ListTests enumerates the backend tests under root, sorted by name. A test
// is a directory holding model.onnx; it is looked for in root itself, its
// subdirectories and theirs, so root may be a test, a category such as
// node/, or the whole suite (DebianTestData). Directories without
// model.onnx (such as "real", whose models are downloaded on demand) are
// skipped. Within a data set, input and output indices must run from 0
// without gaps. An absent root is an error for which
// errors.Is(err, fs.ErrNotExist) holds.
func ListTests(root string) ([]TestCase, error) {
	if _, err := os.Stat(root); err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	var tests []TestCase
	var walk func(dir, name string, depth int) error
	walk = func(dir, name string, depth int) error {
		model := filepath.Join(dir, "model.onnx")
		if fi, err := os.Stat(model); err == nil && fi.Mode().IsRegular() {
			if name == "" {
				name = filepath.Base(dir)
			}
			tc, err := readTestCase(dir, name)
			if err != nil {
				return err
			}
			tests = append(tests, tc)
			return nil
		}
		if depth == 2 {
			return nil
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			if err := walk(filepath.Join(dir, e.Name()), pathJoin(name, e.Name()), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root, "", 0); err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	slices.SortFunc(tests, func(a, b TestCase) int { return strings.Compare(a.Name, b.Name) })
	return tests, nil
}

func pathJoin(a, b string) string {
	if a == "" {
		return b
	}
	return a + "/" + b
}

// readTestCase lists the data sets of the test in dir.
func readTestCase(dir, name string) (TestCase, error) {
	tc := TestCase{Name: name, Dir: dir, ModelPath: filepath.Join(dir, "model.onnx")}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return tc, err
	}
	sets := map[int]string{}
	for _, e := range entries {
		if i, ok := indexed(e.Name(), "test_data_set_", ""); ok && e.IsDir() {
			sets[i] = e.Name()
		}
	}
	for _, i := range slices.Sorted(maps.Keys(sets)) {
		ds, err := readDataSet(filepath.Join(dir, sets[i]))
		if err != nil {
			return tc, err
		}
		tc.DataSets = append(tc.DataSets, ds)
	}
	return tc, nil
}

func readDataSet(dir string) (DataSet, error) {
	ds := DataSet{Dir: dir}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ds, err
	}
	inputs, outputs := map[int]string{}, map[int]string{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		if i, ok := indexed(e.Name(), "input_", ".pb"); ok {
			inputs[i] = filepath.Join(dir, e.Name())
		} else if i, ok := indexed(e.Name(), "output_", ".pb"); ok {
			outputs[i] = filepath.Join(dir, e.Name())
		}
	}
	if ds.Inputs, err = inOrder(dir, "input", inputs); err != nil {
		return ds, err
	}
	if ds.Outputs, err = inOrder(dir, "output", outputs); err != nil {
		return ds, err
	}
	return ds, nil
}

// indexed parses names of the form prefix + index + suffix, the index in
// decimal without leading zeros.
func indexed(name, prefix, suffix string) (int, bool) {
	s, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	if s, ok = strings.CutSuffix(s, suffix); !ok || s == "" || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	i, err := strconv.Atoi(s)
	if err != nil {
		return 0, false
	}
	return i, true
}

// inOrder returns files[0], files[1], ... and fails on a gap.
func inOrder(dir, kind string, files map[int]string) ([]string, error) {
	out := make([]string, len(files))
	for i := range out {
		f, ok := files[i]
		if !ok {
			return nil, fmt.Errorf("%s: %s_%d.pb is missing (there are %d %s files)", dir, kind, i, len(files), kind)
		}
		out[i] = f
	}
	return out, nil
}
