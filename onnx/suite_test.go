package onnx_test

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/onnx"
	"github.com/gopir/gopir/onnx/onnxpb"
	"github.com/gopir/gopir/tensor"
)

func touch(t *testing.T, root string, names ...string) {
	t.Helper()
	for _, name := range names {
		path := filepath.Join(root, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestListTests(t *testing.T) {
	root := t.TempDir()
	touch(t, root,
		"node/test_b/model.onnx",
		"node/test_b/test_data_set_0/input_0.pb",
		"node/test_b/test_data_set_0/input_1.pb",
		"node/test_b/test_data_set_0/output_0.pb",
		"node/test_a/model.onnx",
		"node/test_a/test_data_set_10/input_0.pb",
		"node/test_a/test_data_set_2/input_0.pb",
		"node/test_a/test_data_set_2/output_0.pb",
		"node/test_a/test_data_set_2/output_1.pb",
		"node/test_a/test_data_set_2/output_2.pb",
		"node/test_a/test_data_set_2/output_10.pb",
		"node/test_a/test_data_set_2/output_3.pb",
		"node/test_a/test_data_set_2/output_4.pb",
		"node/test_a/test_data_set_2/output_5.pb",
		"node/test_a/test_data_set_2/output_6.pb",
		"node/test_a/test_data_set_2/output_7.pb",
		"node/test_a/test_data_set_2/output_8.pb",
		"node/test_a/test_data_set_2/output_9.pb",
		"node/test_a/test_data_set_2/output_01.pb", // not an index: ignored
		"node/test_a/test_data_set_2/input_x.pb",
		"node/test_a/test_data_set_2/notes.txt",
		"node/test_a/test_data_set_x/input_0.pb",
		"node/test_nodata/model.onnx",
		"real/test_resnet50/data.json",
		"simple/test_c/model.onnx",
		"simple/test_c/test_data_set_0/",
		"README",
	)
	tests, err := onnx.ListTests(root)
	if err != nil {
		t.Fatal(err)
	}
	j := func(parts ...string) string { return filepath.Join(append([]string{root}, parts...)...) }
	sets := func(dir string, n int, kind string) []string {
		out := []string{}
		for i := range n {
			out = append(out, filepath.Join(dir, kind+"_"+strconv.Itoa(i)+".pb"))
		}
		return out
	}
	a2 := j("node", "test_a", "test_data_set_2")
	a10 := j("node", "test_a", "test_data_set_10")
	b0 := j("node", "test_b", "test_data_set_0")
	c0 := j("simple", "test_c", "test_data_set_0")
	want := []onnx.TestCase{
		{Name: "node/test_a", Dir: j("node", "test_a"), ModelPath: j("node", "test_a", "model.onnx"), DataSets: []onnx.DataSet{
			{Dir: a2, Inputs: sets(a2, 1, "input"), Outputs: sets(a2, 11, "output")},
			{Dir: a10, Inputs: sets(a10, 1, "input"), Outputs: []string{}},
		}},
		{Name: "node/test_b", Dir: j("node", "test_b"), ModelPath: j("node", "test_b", "model.onnx"), DataSets: []onnx.DataSet{
			{Dir: b0, Inputs: sets(b0, 2, "input"), Outputs: sets(b0, 1, "output")},
		}},
		{Name: "node/test_nodata", Dir: j("node", "test_nodata"), ModelPath: j("node", "test_nodata", "model.onnx")},
		{Name: "simple/test_c", Dir: j("simple", "test_c"), ModelPath: j("simple", "test_c", "model.onnx"), DataSets: []onnx.DataSet{
			{Dir: c0, Inputs: []string{}, Outputs: []string{}},
		}},
	}
	if !reflect.DeepEqual(tests, want) {
		t.Errorf("ListTests:\n got %+v\nwant %+v", tests, want)
	}

	// A category, or one test, may be the root too.
	tests, err = onnx.ListTests(j("simple"))
	if err != nil || len(tests) != 1 || tests[0].Name != "test_c" {
		t.Errorf("ListTests(simple) = %+v, %v", tests, err)
	}
	tests, err = onnx.ListTests(j("node", "test_b"))
	if err != nil || len(tests) != 1 || tests[0].Name != "test_b" || len(tests[0].DataSets) != 1 {
		t.Errorf("ListTests(node/test_b) = %+v, %v", tests, err)
	}

	_, err = onnx.ListTests(j("missing"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing root: error %v", err)
	}

	touch(t, root, "node/test_gap/model.onnx", "node/test_gap/test_data_set_0/input_0.pb", "node/test_gap/test_data_set_0/input_2.pb")
	_, err = onnx.ListTests(root)
	if err == nil || !strings.Contains(err.Error(), "input_1.pb is missing (there are 2 input files)") {
		t.Errorf("gap: error %v", err)
	}
}

// suiteRoot returns DebianTestData, or skips the test when it is absent.
func suiteRoot(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(onnx.DebianTestData); err != nil {
		t.Skipf("ONNX backend tests not installed (%v); on Debian: apt-get install libonnx-testdata", err)
	}
	return onnx.DebianTestData
}

// gopirDType is the dtype ONNX's element type reads as, for checks.
var gopirDType = map[int32]tensor.DType{
	int32(onnxpb.TensorProto_FLOAT): tensor.F32, int32(onnxpb.TensorProto_DOUBLE): tensor.F64,
	int32(onnxpb.TensorProto_INT32): tensor.I32, int32(onnxpb.TensorProto_INT64): tensor.I64,
	int32(onnxpb.TensorProto_BOOL): tensor.Bool,
}

// shapeMismatches are files of ONNX 1.12's suite whose shape disagrees
// with their model's graph: the "like" input of these CastLike tests is
// [1], declared [3, 4].
var shapeMismatches = map[string]bool{
	"node/test_castlike_BFLOAT16_to_FLOAT/test_data_set_0/input_1.pb":          true,
	"node/test_castlike_BFLOAT16_to_FLOAT_expanded/test_data_set_0/input_1.pb": true,
}

// checkTensor compares a tensor with the type the graph declares for it.
func checkTensor(t *testing.T, path string, x *tensor.Tensor, tt *onnxpb.TypeProto_Tensor) {
	t.Helper()
	if want, ok := gopirDType[tt.GetElemType()]; !ok || x.DType() != want {
		t.Errorf("%s: read as %v, the graph declares element type %v", path, x.DType(), onnxpb.TensorProto_DataType(tt.GetElemType()))
	}
	if rel, err := filepath.Rel(onnx.DebianTestData, path); tt.Shape == nil || err == nil && shapeMismatches[filepath.ToSlash(rel)] {
		return
	}
	dims := tt.Shape.GetDim()
	if len(dims) != x.Rank() {
		t.Errorf("%s: read shape %v, the graph declares rank %d", path, x.Shape(), len(dims))
		return
	}
	for i, d := range dims {
		if v, ok := d.Value.(*onnxpb.TensorShapeProto_Dimension_DimValue); ok && int(v.DimValue) != x.Shape()[i] {
			t.Errorf("%s: read shape %v, the graph declares %v", path, x.Shape(), tt.Shape)
			return
		}
	}
}

// readValue reads one .pb file of a data set as the graph's type says,
// checks it against that type and releases it. It returns the kind it
// read ("tensor", "sequence", "optional"; "" for a type it does not read).
func readValue(t *testing.T, path string, typ *onnxpb.TypeProto, a *memory.Allocator) (string, error) {
	switch v := typ.GetValue().(type) {
	case *onnxpb.TypeProto_TensorType:
		x, err := onnx.ReadTensorFile(path, a)
		if err != nil {
			return "tensor", err
		}
		checkTensor(t, path, x, v.TensorType)
		x.Release()
		return "tensor", nil
	case *onnxpb.TypeProto_SequenceType:
		ts, err := onnx.ReadSequenceFile(path, a)
		if err != nil {
			return "sequence", err
		}
		if tt := v.SequenceType.GetElemType().GetTensorType(); tt != nil {
			for _, x := range ts {
				if want, ok := gopirDType[tt.GetElemType()]; !ok || x.DType() != want {
					t.Errorf("%s: element read as %v, the graph declares %v", path, x.DType(), onnxpb.TensorProto_DataType(tt.GetElemType()))
				}
			}
		}
		onnx.ReleaseAll(ts)
		return "sequence", nil
	case *onnxpb.TypeProto_OptionalType:
		o, err := onnx.ReadOptionalFile(path, a)
		if err != nil {
			return "optional", err
		}
		o.Release()
		return "optional", nil
	}
	return "", nil
}

// TestSuiteFiles reads every model and every input and output of the
// installed backend tests, each .pb file as the model's graph says: the
// only errors allowed are *UnsupportedError.
func TestSuiteFiles(t *testing.T) {
	root := suiteRoot(t)
	tests, err := onnx.ListTests(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(tests) == 0 {
		t.Fatalf("no tests under %s", root)
	}
	a := newAlloc(t)
	readable := map[string]int{}
	unsupported := map[string]int{}
	files, other := 0, 0
	for _, tc := range tests {
		m, err := onnx.ReadModel(tc.ModelPath)
		if err != nil {
			t.Errorf("%s: %v", tc.Name, err)
			continue
		}
		g := m.GetGraph()
		for _, ds := range tc.DataSets {
			for _, list := range []struct {
				files []string
				vals  []*onnxpb.ValueInfoProto
			}{{ds.Inputs, g.GetInput()}, {ds.Outputs, g.GetOutput()}} {
				for i, path := range list.files {
					files++
					if i >= len(list.vals) {
						t.Errorf("%s: the graph has %d values for %d files", path, len(list.vals), len(list.files))
						continue
					}
					kind, err := readValue(t, path, list.vals[i].GetType(), a)
					var u *onnx.UnsupportedError
					switch {
					case kind == "":
						other++
					case err == nil:
						readable[kind]++
					case errors.As(err, &u):
						unsupported[u.What]++
					default:
						t.Errorf("%v", err)
					}
				}
			}
		}
	}
	var nr, nu int
	for _, n := range readable {
		nr += n
	}
	var whats []string
	for w, n := range unsupported {
		nu += n
		whats = append(whats, w+": "+strconv.Itoa(n))
	}
	sort.Strings(whats)
	t.Logf("%d tests, %d .pb files: %d readable %v, %d unsupported, %d of other kinds", len(tests), files, nr, readable, nu, other)
	t.Logf("unsupported: %s", strings.Join(whats, "; "))
	if nr == 0 {
		t.Error("no file was readable")
	}
}

// TestSuiteValues checks the values read from a few tests against what
// the operator computes: abs, neg (f32), and (i1), argmax (i64) and a cast
// to f64.
func TestSuiteValues(t *testing.T) {
	root := suiteRoot(t)
	a := newAlloc(t)
	read := func(t *testing.T, name string) (in []*tensor.Tensor, out *tensor.Tensor) {
		t.Helper()
		tests, err := onnx.ListTests(filepath.Join(root, "node", name))
		if err != nil || len(tests) != 1 || len(tests[0].DataSets) == 0 {
			t.Fatalf("%s: %v, %v", name, tests, err)
		}
		ds := tests[0].DataSets[0]
		for _, p := range ds.Inputs {
			x, err := onnx.ReadTensorFile(p, a)
			if err != nil {
				t.Fatal(err)
			}
			in = append(in, x)
		}
		t.Cleanup(func() { onnx.ReleaseAll(in) })
		out, err = onnx.ReadTensorFile(ds.Outputs[0], a)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(out.Release)
		return in, out
	}
	t.Run("abs", func(t *testing.T) {
		in, out := read(t, "test_abs")
		x, y := in[0].F32(), out.F32()
		if len(x) == 0 || !slices.Equal(in[0].Shape(), out.Shape()) {
			t.Fatalf("shapes %v %v", in[0].Shape(), out.Shape())
		}
		for i := range x {
			if float32(math.Abs(float64(x[i]))) != y[i] {
				t.Fatalf("abs(%v) = %v", x[i], y[i])
			}
		}
	})
	t.Run("neg", func(t *testing.T) {
		in, out := read(t, "test_neg")
		for i, v := range in[0].F32() {
			if -v != out.F32()[i] {
				t.Fatalf("neg(%v) = %v", v, out.F32()[i])
			}
		}
	})
	t.Run("and", func(t *testing.T) {
		in, out := read(t, "test_and2d")
		p, q, r := in[0].Bool(), in[1].Bool(), out.Bool()
		n := 0
		for i := range r {
			if r[i] != (p[i] && q[i]) {
				t.Fatalf("%v and %v = %v", p[i], q[i], r[i])
			}
			if r[i] {
				n++
			}
		}
		if n == 0 || n == len(r) {
			t.Errorf("%d of %d true: the booleans did not read", n, len(r))
		}
	})
	t.Run("argmax", func(t *testing.T) {
		in, out := read(t, "test_argmax_default_axis_example")
		x, s := in[0].F32(), in[0].Shape() // argmax over axis 0, keepdims
		if len(s) != 2 || !slices.Equal(out.Shape(), []int{1, s[1]}) {
			t.Fatalf("shapes %v -> %v", s, out.Shape())
		}
		for j := range s[1] {
			best := 0
			for i := range s[0] {
				if x[i*s[1]+j] > x[best*s[1]+j] {
					best = i
				}
			}
			if out.I64()[j] != int64(best) {
				t.Errorf("column %d: argmax %d, want %d", j, out.I64()[j], best)
			}
		}
	})
	t.Run("cast", func(t *testing.T) {
		in, out := read(t, "test_cast_FLOAT_to_DOUBLE")
		for i, v := range in[0].F32() {
			if float64(v) != out.F64()[i] {
				t.Fatalf("double(%v) = %v", v, out.F64()[i])
			}
		}
	})
}
