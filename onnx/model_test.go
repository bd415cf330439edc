package onnx_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/gopir/gopir/onnx"
	"github.com/gopir/gopir/onnx/onnxpb"
)

// tinyModel is y = Relu(x) with one initializer.
func tinyModel() *onnxpb.ModelProto {
	return &onnxpb.ModelProto{
		IrVersion:    proto.Int64(8),
		ProducerName: proto.String("gopir test"),
		OpsetImport:  []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(17)}},
		Graph: &onnxpb.GraphProto{
			Name: proto.String("g"),
			Node: []*onnxpb.NodeProto{{OpType: proto.String("Relu"), Input: []string{"x"}, Output: []string{"y"}}},
			Initializer: []*onnxpb.TensorProto{{
				Name: proto.String("w"), Dims: []int64{2}, DataType: dtype(onnxpb.TensorProto_FLOAT), FloatData: []float32{1, 2},
			}},
		},
	}
}

func TestParseModel(t *testing.T) {
	b, err := proto.Marshal(tinyModel())
	if err != nil {
		t.Fatal(err)
	}
	m, err := onnx.ParseModel(b)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(m, tinyModel()) {
		t.Errorf("parsed %v, want %v", m, tinyModel())
	}

	path := filepath.Join(t.TempDir(), "tiny.onnx")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err = onnx.ReadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	if m.GetGraph().GetNode()[0].GetOpType() != "Relu" {
		t.Errorf("read %v", m)
	}
}

func TestParseModelErrors(t *testing.T) {
	marshal := func(m proto.Message) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	noGraph := tinyModel()
	noGraph.Graph = nil
	noVersion := tinyModel()
	noVersion.IrVersion = nil
	zeroVersion := tinyModel()
	zeroVersion.IrVersion = proto.Int64(0)
	tensorBytes := marshal(&onnxpb.TensorProto{Dims: []int64{3}, DataType: dtype(onnxpb.TensorProto_FLOAT), FloatData: []float32{1, 2, 3}})

	for _, tc := range []struct {
		name     string
		data     []byte
		want     string
		notModel bool
	}{
		{"empty", nil, "onnx: not an ONNX model: empty file", true},
		{"text", []byte("hello, world\n"), "onnx: not an ONNX model: ", true},
		{"truncated", marshal(tinyModel())[:20], "onnx: not an ONNX model: ", true},
		{"no ir_version", marshal(noVersion), "onnx: not an ONNX model: no ir_version field", true},
		{"ir_version 0", marshal(zeroVersion), "onnx: not an ONNX model: invalid IR version 0", true},
		{"a tensor", tensorBytes, "onnx: not an ONNX model: ", true},
		{"no graph", marshal(noGraph), "onnx: model (IR version 8) has no graph", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := onnx.ParseModel(tc.data)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %v, want one starting %q", err, tc.want)
			}
			if errors.Is(err, onnx.ErrNotModel) != tc.notModel {
				t.Errorf("errors.Is(%v, ErrNotModel) = %v", err, !tc.notModel)
			}
		})
	}
}

func TestReadModelErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := onnx.ReadModel(filepath.Join(dir, "missing.onnx"))
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "missing.onnx") {
		t.Errorf("missing file: %v", err)
	}
	bad := filepath.Join(dir, "bad.onnx")
	if err := os.WriteFile(bad, []byte("not a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = onnx.ReadModel(bad)
	if want := "onnx: " + bad + ": not an ONNX model: "; err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, onnx.ErrNotModel) {
		t.Errorf("error %v, want one starting %q", err, want)
	}
}
