package onnx

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/proto"

	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/onnx/onnxpb"
	"github.com/gopir/gopir/tensor"
)

// readProto reads the file at path into m; what names m's type in errors.
func readProto(path string, m proto.Message, what string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := proto.Unmarshal(data, m); err != nil {
		return fmt.Errorf("%s: not a serialized %s: %w", path, what, err)
	}
	return nil
}

// ReadTensorFile reads a serialized TensorProto (the input_N.pb and
// output_N.pb files of ONNX's backend tests) into a new tensor; see
// TensorFromProto. External data is relative to the file's directory.
//
// A .pb file does not say which message it holds: choose ReadTensorFile,
// ReadSequenceFile or ReadOptionalFile by the type of the model's graph
// input or output it belongs to (the files carry no type tag, and a
// SequenceProto read as a TensorProto shows up as a segmented tensor).
func ReadTensorFile(path string, alloc *memory.Allocator) (*tensor.Tensor, error) {
	tp := new(onnxpb.TensorProto)
	if err := readProto(path, tp, "TensorProto"); err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	t, err := tensorFromProto(tp, filepath.Dir(path), alloc)
	if err != nil {
		return nil, fmt.Errorf("onnx: %s: %s: %w", path, describe(tp), err)
	}
	return t, nil
}

// ReadSequenceFile reads a serialized SequenceProto of tensors; see
// SequenceFromProto.
func ReadSequenceFile(path string, alloc *memory.Allocator) ([]*tensor.Tensor, error) {
	sp := new(onnxpb.SequenceProto)
	if err := readProto(path, sp, "SequenceProto"); err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	ts, err := sequenceFromProto(sp, filepath.Dir(path), alloc)
	if err != nil {
		return nil, fmt.Errorf("onnx: %s: %w", path, err)
	}
	return ts, nil
}

// SequenceFromProto converts a sequence of tensors to new tensors (each
// refcount 1, released by the caller, e.g. with ReleaseAll), in order. The
// result is not nil even for an empty sequence. Sequences of anything but
// tensors are *UnsupportedError. On an error nothing stays allocated.
func SequenceFromProto(sp *onnxpb.SequenceProto, dir string, alloc *memory.Allocator) ([]*tensor.Tensor, error) {
	ts, err := sequenceFromProto(sp, dir, alloc)
	if err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	return ts, nil
}

// describeSeq names a sequence in errors.
func describeSeq(sp *onnxpb.SequenceProto) string {
	if name := sp.GetName(); name != "" {
		return fmt.Sprintf("sequence %q", name)
	}
	return "sequence"
}

func sequenceFromProto(sp *onnxpb.SequenceProto, dir string, alloc *memory.Allocator) ([]*tensor.Tensor, error) {
	if sp == nil {
		return nil, errors.New("nil SequenceProto")
	}
	switch et := onnxpb.SequenceProto_DataType(sp.GetElemType()); et {
	case onnxpb.SequenceProto_TENSOR:
	case onnxpb.SequenceProto_SPARSE_TENSOR, onnxpb.SequenceProto_SEQUENCE, onnxpb.SequenceProto_MAP, onnxpb.SequenceProto_OPTIONAL:
		return nil, fmt.Errorf("%s: %w", describeSeq(sp), &UnsupportedError{What: "sequence of " + et.String(), Reason: "gopir reads sequences of tensors only"})
	case onnxpb.SequenceProto_UNDEFINED:
		return nil, fmt.Errorf("%s: elem_type is missing or UNDEFINED", describeSeq(sp))
	default:
		return nil, fmt.Errorf("%s: invalid elem_type %d", describeSeq(sp), et)
	}
	if n := len(sp.SparseTensorValues) + len(sp.SequenceValues) + len(sp.MapValues) + len(sp.OptionalValues); n > 0 {
		return nil, fmt.Errorf("%s: elem_type is TENSOR, but it holds %d values of other kinds", describeSeq(sp), n)
	}
	ts := make([]*tensor.Tensor, 0, len(sp.TensorValues))
	for i, tp := range sp.TensorValues {
		t, err := tensorFromProto(tp, dir, alloc)
		if err != nil {
			ReleaseAll(ts)
			return nil, fmt.Errorf("%s: element %d: %s: %w", describeSeq(sp), i, describe(tp), err)
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// ReleaseAll releases every non-nil tensor of ts once.
func ReleaseAll(ts []*tensor.Tensor) {
	for _, t := range ts {
		if t != nil {
			t.Release()
		}
	}
}

// Optional is the value of an OptionalProto: a tensor, a sequence of
// tensors, or nothing (both nil).
type Optional struct {
	Tensor   *tensor.Tensor   // set when the optional holds a tensor
	Sequence []*tensor.Tensor // not nil when it holds a sequence, even an empty one
}

// Empty reports whether the optional holds nothing.
func (o *Optional) Empty() bool { return o.Tensor == nil && o.Sequence == nil }

// Release releases what the optional holds and empties it.
func (o *Optional) Release() {
	if o.Tensor != nil {
		o.Tensor.Release()
	}
	ReleaseAll(o.Sequence)
	*o = Optional{}
}

// ReadOptionalFile reads a serialized OptionalProto of a tensor or of a
// sequence of tensors; see OptionalFromProto.
func ReadOptionalFile(path string, alloc *memory.Allocator) (*Optional, error) {
	op := new(onnxpb.OptionalProto)
	if err := readProto(path, op, "OptionalProto"); err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	o, err := optionalFromProto(op, filepath.Dir(path), alloc)
	if err != nil {
		return nil, fmt.Errorf("onnx: %s: %w", path, err)
	}
	return o, nil
}

// OptionalFromProto converts an optional tensor or optional sequence of
// tensors; the caller releases the result with Optional.Release. An
// optional without elem_type and value is empty. Optionals of other kinds
// are *UnsupportedError. On an error nothing stays allocated.
func OptionalFromProto(op *onnxpb.OptionalProto, dir string, alloc *memory.Allocator) (*Optional, error) {
	o, err := optionalFromProto(op, dir, alloc)
	if err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	return o, nil
}

func optionalFromProto(op *onnxpb.OptionalProto, dir string, alloc *memory.Allocator) (*Optional, error) {
	if op == nil {
		return nil, errors.New("nil OptionalProto")
	}
	what := "optional"
	if name := op.GetName(); name != "" {
		what = fmt.Sprintf("optional %q", name)
	}
	et := onnxpb.OptionalProto_DataType(op.GetElemType())
	other := 0
	for _, set := range []bool{op.SparseTensorValue != nil, op.MapValue != nil, op.OptionalValue != nil,
		op.TensorValue != nil && et != onnxpb.OptionalProto_TENSOR,
		op.SequenceValue != nil && et != onnxpb.OptionalProto_SEQUENCE} {
		if set {
			other++
		}
	}
	switch et {
	case onnxpb.OptionalProto_TENSOR, onnxpb.OptionalProto_SEQUENCE:
	case onnxpb.OptionalProto_SPARSE_TENSOR, onnxpb.OptionalProto_MAP, onnxpb.OptionalProto_OPTIONAL:
		return nil, fmt.Errorf("%s: %w", what, &UnsupportedError{What: "optional of " + et.String(), Reason: "gopir reads optional tensors and optional sequences of tensors only"})
	case onnxpb.OptionalProto_UNDEFINED:
		// ONNX itself writes an empty optional without an element type
		// (test_optional_has_element_empty).
		if other > 0 || op.TensorValue != nil || op.SequenceValue != nil {
			return nil, fmt.Errorf("%s: elem_type is missing or UNDEFINED, but it holds a value", what)
		}
		return new(Optional), nil
	default:
		return nil, fmt.Errorf("%s: invalid elem_type %d", what, et)
	}
	if other > 0 {
		return nil, fmt.Errorf("%s: elem_type is %v, but it holds a value of another kind", what, et)
	}
	o := new(Optional)
	switch {
	case op.TensorValue != nil:
		t, err := tensorFromProto(op.TensorValue, dir, alloc)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", what, describe(op.TensorValue), err)
		}
		o.Tensor = t
	case op.SequenceValue != nil:
		ts, err := sequenceFromProto(op.SequenceValue, dir, alloc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		o.Sequence = ts
	}
	return o, nil
}
