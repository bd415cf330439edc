package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/onnx/onnxpb"
	"github.com/gopir/gopir/tensor"
)

const models = "../../onnx/testdata/models"

// npyValues reads a golden .npy as float64s.
func npyValues(t *testing.T, path string) []float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	x, err := tensor.ReadNpy(f, memory.New(memory.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Release()
	v := make([]float64, x.Len())
	for i := range v {
		v[i] = x.Float64At(i)
	}
	return v
}

// fetchValues runs gopir with args and --json, and returns the fetched
// tensor name's data of the last run.
func fetchValues(t *testing.T, name string, args ...string) []float64 {
	t.Helper()
	r := gopir(append(args, "--json")...)
	if r.code != 0 {
		t.Fatalf("gopir %v: exit %d: %s", args, r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var rec struct {
		Fetch map[string]struct {
			Data []float64 `json:"data"`
		} `json:"fetch"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rec); err != nil {
		t.Fatal(err)
	}
	f, ok := rec.Fetch[name]
	if !ok {
		t.Fatalf("no fetch %q in %s", name, lines[len(lines)-1])
	}
	return f.Data
}

func near(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol*(1+math.Abs(want[i])) {
			t.Fatalf("%s[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

// The commands take an ONNX model where they take a program: run, print,
// import (then run and print the directory) and grad.
func TestONNXCommands(t *testing.T) {
	model := filepath.Join(models, "ctrlflow.onnx")
	feeds := []string{"--feed", "x=@" + filepath.Join(models, "ctrlflow/input_x.npy"), "--feed", "n=@" + filepath.Join(models, "ctrlflow/input_n.npy")}
	want := npyValues(t, filepath.Join(models, "ctrlflow/output_y.npy"))

	near(t, "run model.onnx", fetchValues(t, "y", append([]string{"run", model, "--repeat", "3"}, feeds...)...), want, 1e-5)

	dir := t.TempDir()
	if r := gopir("import", model, "-o", dir); r.code != 0 {
		t.Fatalf("import: exit %d: %s", r.code, r.stderr)
	}
	near(t, "run imported dir", fetchValues(t, "y", append([]string{"run", dir}, feeds...)...), want, 1e-5)
	near(t, "run program.pir --params", fetchValues(t, "y", append([]string{"run", filepath.Join(dir, "program.pir"), "--params", filepath.Join(dir, "params.safetensors")}, feeds...)...), want, 1e-5)

	printed := gopir("print", model)
	again := gopir("print", dir)
	if printed.code != 0 || printed.stdout != again.stdout || !strings.Contains(printed.stdout, `"while"`) || !strings.Contains(printed.stdout, `"if"`) {
		t.Fatalf("print model.onnx and print DIR differ or lack control flow: exit %d %s", printed.code, printed.stderr)
	}

	// The gradient of sum(y) with respect to an initializer and an input,
	// against PyTorch's.
	gdir := t.TempDir()
	if r := gopir("grad", model, "--loss", "sum(y)", "--wrt", "w_in,x", "-o", gdir); r.code != 0 {
		t.Fatalf("grad: exit %d: %s", r.code, r.stderr)
	}
	args := append([]string{"run", gdir}, feeds...)
	near(t, "w_in@GRAD", fetchValues(t, "w_in@GRAD", args...), npyValues(t, filepath.Join(models, "ctrlflow/grad_w_in.npy")), 1e-4)
	near(t, "x@GRAD", fetchValues(t, "x@GRAD", args...), npyValues(t, filepath.Join(models, "ctrlflow/grad_input_x.npy")), 1e-4)
}

// An ONNX model gopir cannot import is bad input: exit 2 and one line that
// names the node and what is wrong.
func TestONNXBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, m *onnxpb.ModelProto) string {
		data, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		os.WriteFile(p, data, 0o644)
		return p
	}
	f32 := int32(onnxpb.TensorProto_FLOAT)
	vi := func(name string) *onnxpb.ValueInfoProto {
		return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
			TensorType: &onnxpb.TypeProto_Tensor{ElemType: &f32, Shape: &onnxpb.TensorShapeProto{Dim: []*onnxpb.TensorShapeProto_Dimension{{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: 3}}}}},
		}}}
	}
	model := func(op, domain string) *onnxpb.ModelProto {
		return &onnxpb.ModelProto{
			IrVersion:   proto.Int64(8),
			OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(13)}},
			Graph: &onnxpb.GraphProto{
				Name:   proto.String("g"),
				Input:  []*onnxpb.ValueInfoProto{vi("x")},
				Output: []*onnxpb.ValueInfoProto{vi("y")},
				Node:   []*onnxpb.NodeProto{{OpType: proto.String(op), Domain: proto.String(domain), Name: proto.String("n0"), Input: []string{"x"}, Output: []string{"y"}}},
			},
		}
	}
	garbage := filepath.Join(dir, "garbage.onnx")
	os.WriteFile(garbage, []byte("not a model at all"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", write("custom.onnx", model("Frobnicate", "com.example")), "--feed", "x=[1,2,3]"}, `node 0 "n0" (com.example.Frobnicate): op com.example.Frobnicate is not supported`},
		{[]string{"print", write("undefined.onnx", model("Relu", ""))}, ""},
		{[]string{"print", garbage}, "not an ONNX model"},
		{[]string{"import", write("ok.onnx", model("Relu", ""))}, "give the output directory with -o DIR"},
		{[]string{"run", write("ok2.onnx", model("Relu", "")), "--params", "p.safetensors"}, "--params: an ONNX model carries its own parameters"},
		{[]string{"grad", write("ok3.onnx", model("Relu", "")), "--loss", "sum(z)", "--wrt", "x"}, `--loss sum(z): the program has no fetch named "z"`},
	} {
		r := gopir(tc.args...)
		if tc.want == "" {
			if r.code != 0 {
				t.Errorf("%v: exit %d: %s", tc.args, r.code, r.stderr)
			}
			continue
		}
		if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line containing %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}
