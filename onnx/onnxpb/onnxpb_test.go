package onnxpb_test

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/gopir/gopir/onnx/onnxpb"
)

// The messages register under ONNX's own names, from the files ONNX's own
// runtimes register, so a model serialized by ONNX reads here and back.
func TestRegistered(t *testing.T) {
	for _, tc := range []struct {
		name protoreflect.FullName
		file string
	}{
		{"onnx.ModelProto", "onnx/onnx-ml.proto"},
		{"onnx.TensorProto", "onnx/onnx-ml.proto"},
		{"onnx.SequenceProto", "onnx/onnx-data.proto"},
		{"onnx.OptionalProto", "onnx/onnx-data.proto"},
	} {
		mt, err := protoregistry.GlobalTypes.FindMessageByName(tc.name)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := mt.Descriptor().ParentFile().Path(); got != tc.file {
			t.Errorf("%s registered from %q, want %q", tc.name, got, tc.file)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	m := &onnxpb.ModelProto{
		IrVersion:   proto.Int64(8),
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(17)}},
		Graph: &onnxpb.GraphProto{
			Name: proto.String("g"),
			Node: []*onnxpb.NodeProto{{OpType: proto.String("Relu"), Input: []string{"x"}, Output: []string{"y"}}},
			Initializer: []*onnxpb.TensorProto{{
				Name:      proto.String("w"),
				Dims:      []int64{2},
				DataType:  proto.Int32(int32(onnxpb.TensorProto_FLOAT)),
				FloatData: []float32{1, 2},
			}},
		},
	}
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back onnxpb.ModelProto
	if err := proto.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(m, &back) {
		t.Errorf("round trip changed the model:\n got %v\nwant %v", &back, m)
	}
}
