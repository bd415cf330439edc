package onnx

import (
	"errors"
	"fmt"
	"os"

	"google.golang.org/protobuf/proto"

	"github.com/gopir/gopir/onnx/onnxpb"
)

// IRVersion is the newest ONNX IR version whose schema package onnxpb was
// generated from (ONNX 1.12). Newer models still parse: fields added since
// are kept as unknown fields, and tensors of element types added since
// are *UnsupportedError.
const IRVersion = int64(onnxpb.Version_IR_VERSION)

// ReadModel reads and parses an ONNX model file (usually .onnx). Errors
// name the file. Tensors whose data is stored outside the model (external
// data) are not loaded: pass filepath.Dir(path) to TensorFromProto.
func ReadModel(path string) (*onnxpb.ModelProto, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	m, err := parseModel(data)
	if err != nil {
		return nil, fmt.Errorf("onnx: %s: %w", path, err)
	}
	return m, nil
}

// ParseModel parses a serialized ModelProto and checks that it has an IR
// version and a graph.
func ParseModel(data []byte) (*onnxpb.ModelProto, error) {
	m, err := parseModel(data)
	if err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	return m, nil
}

// ErrNotModel is wrapped by the errors of ReadModel and ParseModel that
// say the bytes are not an ONNX model at all (errors.Is finds it).
var ErrNotModel = errors.New("not an ONNX model")

func parseModel(data []byte) (*onnxpb.ModelProto, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty file", ErrNotModel)
	}
	m := new(onnxpb.ModelProto)
	if err := proto.Unmarshal(data, m); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotModel, err)
	}
	// Protobuf accepts many byte strings (unknown fields are kept), so a
	// model is recognised by the one field every model must set.
	if m.IrVersion == nil {
		return nil, fmt.Errorf("%w: no ir_version field", ErrNotModel)
	}
	if v := m.GetIrVersion(); v < 1 {
		return nil, fmt.Errorf("%w: invalid IR version %d", ErrNotModel, v)
	}
	if m.Graph == nil {
		// Other messages often parse as a graphless ModelProto whose
		// fields ModelProto does not know (a TensorProto's dims read as
		// ir_version, for one).
		if unknown := len(m.ProtoReflect().GetUnknown()); unknown > 0 {
			return nil, fmt.Errorf("%w: no graph, and %d bytes of fields that ModelProto does not have", ErrNotModel, unknown)
		}
		return nil, fmt.Errorf("model (IR version %d) has no graph", m.GetIrVersion())
	}
	return m, nil
}
