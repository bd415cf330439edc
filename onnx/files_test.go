package onnx_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/gopir/gopir/onnx"
	"github.com/gopir/gopir/onnx/onnxpb"
	"github.com/gopir/gopir/tensor"
)

func floats(name string, vs ...float32) *onnxpb.TensorProto {
	return &onnxpb.TensorProto{Name: proto.String(name), Dims: []int64{int64(len(vs))}, DataType: dtype(onnxpb.TensorProto_FLOAT), FloatData: vs}
}

func TestReadTensorFile(t *testing.T) {
	dir := t.TempDir()
	a := newAlloc(t)
	path := writeProto(t, dir, "input_0.pb", &onnxpb.TensorProto{
		Name: proto.String("x"), Dims: []int64{2}, DataType: dtype(onnxpb.TensorProto_INT64), RawData: le(int64(3), int64(-4)),
	})
	x, err := onnx.ReadTensorFile(path, a)
	if err != nil {
		t.Fatal(err)
	}
	if got := values(x); !reflect.DeepEqual(got, []int64{3, -4}) {
		t.Errorf("read %v", got)
	}
	x.Release()

	// External data is relative to the file's directory.
	if err := os.WriteFile(filepath.Join(dir, "x.bin"), le(float32(0.5)), 0o644); err != nil {
		t.Fatal(err)
	}
	path = writeProto(t, dir, "ext.pb", &onnxpb.TensorProto{
		Dims: []int64{1}, DataType: dtype(onnxpb.TensorProto_FLOAT), DataLocation: onnxpb.TensorProto_EXTERNAL.Enum(), ExternalData: external("x.bin"),
	})
	if x, err = onnx.ReadTensorFile(path, a); err != nil {
		t.Fatal(err)
	}
	if got := values(x); !reflect.DeepEqual(got, []float32{0.5}) {
		t.Errorf("read %v", got)
	}
	x.Release()

	path = writeProto(t, dir, "half.pb", &onnxpb.TensorProto{Name: proto.String("h"), Dims: []int64{1}, DataType: dtype(onnxpb.TensorProto_FLOAT16), RawData: []byte{0, 0x3c}})
	_, err = onnx.ReadTensorFile(path, a)
	var u *onnx.UnsupportedError
	if want := "onnx: " + path + `: tensor "h": data type FLOAT16 is not supported`; !errors.As(err, &u) || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %v, want an *UnsupportedError starting %q", err, want)
	}

	garbage := filepath.Join(dir, "garbage.pb")
	if err := os.WriteFile(garbage, []byte{0xff, 0xff, 0xff}, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := onnx.ReadTensorFile(garbage, a); err == nil || !strings.Contains(err.Error(), garbage+": not a serialized TensorProto") {
		t.Errorf("garbage: error %v", err)
	}
	if _, err := onnx.ReadTensorFile(filepath.Join(dir, "missing.pb"), a); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: error %v", err)
	}
}

func TestSequence(t *testing.T) {
	dir := t.TempDir()
	a := newAlloc(t)
	seq := &onnxpb.SequenceProto{
		Name:         proto.String("s"),
		ElemType:     proto.Int32(int32(onnxpb.SequenceProto_TENSOR)),
		TensorValues: []*onnxpb.TensorProto{floats("a", 1, 2), floats("b"), floats("c", 3)},
	}
	ts, err := onnx.ReadSequenceFile(writeProto(t, dir, "seq.pb", seq), a)
	if err != nil {
		t.Fatal(err)
	}
	var got []any
	for _, x := range ts {
		got = append(got, values(x))
	}
	if want := []any{[]float32{1, 2}, []float32{}, []float32{3}}; !reflect.DeepEqual(got, want) {
		t.Errorf("read %v, want %v", got, want)
	}
	onnx.ReleaseAll(ts)

	garbage := filepath.Join(dir, "garbage.pb")
	if err := os.WriteFile(garbage, []byte{0xff}, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := onnx.ReadSequenceFile(garbage, a); err == nil || !strings.Contains(err.Error(), "not a serialized SequenceProto") {
		t.Errorf("garbage: error %v", err)
	}
	if _, err := onnx.ReadOptionalFile(garbage, a); err == nil || !strings.Contains(err.Error(), "not a serialized OptionalProto") {
		t.Errorf("garbage: error %v", err)
	}
	bad := writeProto(t, dir, "bad.pb", &onnxpb.SequenceProto{ElemType: proto.Int32(int32(onnxpb.SequenceProto_MAP))})
	if _, err := onnx.ReadSequenceFile(bad, a); err == nil || !strings.HasPrefix(err.Error(), "onnx: "+bad+": sequence: sequence of MAP") {
		t.Errorf("sequence of maps: error %v", err)
	}
	bad = writeProto(t, dir, "badopt.pb", &onnxpb.OptionalProto{ElemType: proto.Int32(int32(onnxpb.OptionalProto_MAP))})
	if _, err := onnx.ReadOptionalFile(bad, a); err == nil || !strings.HasPrefix(err.Error(), "onnx: "+bad+": optional: optional of MAP") {
		t.Errorf("optional of maps: error %v", err)
	}

	empty := &onnxpb.SequenceProto{ElemType: proto.Int32(int32(onnxpb.SequenceProto_TENSOR))}
	ts, err = onnx.ReadSequenceFile(writeProto(t, dir, "empty.pb", empty), a)
	if err != nil || ts == nil || len(ts) != 0 {
		t.Errorf("empty sequence: %v, %v; want an empty, non-nil slice", ts, err)
	}

	for _, tc := range []struct {
		name        string
		sp          *onnxpb.SequenceProto
		want        string
		unsupported bool
	}{
		{"nil", nil, "onnx: nil SequenceProto", false},
		{"of maps", &onnxpb.SequenceProto{Name: proto.String("m"), ElemType: proto.Int32(int32(onnxpb.SequenceProto_MAP))},
			`onnx: sequence "m": sequence of MAP is not supported`, true},
		{"no elem_type", &onnxpb.SequenceProto{TensorValues: []*onnxpb.TensorProto{floats("a", 1)}}, "onnx: sequence: elem_type is missing or UNDEFINED", false},
		{"bad elem_type", &onnxpb.SequenceProto{ElemType: proto.Int32(9)}, "onnx: sequence: invalid elem_type 9", false},
		{"mixed", &onnxpb.SequenceProto{ElemType: proto.Int32(int32(onnxpb.SequenceProto_TENSOR)), SequenceValues: []*onnxpb.SequenceProto{{}}},
			"onnx: sequence: elem_type is TENSOR, but it holds 1 values of other kinds", false},
		{"bad element", &onnxpb.SequenceProto{ElemType: proto.Int32(int32(onnxpb.SequenceProto_TENSOR)),
			TensorValues: []*onnxpb.TensorProto{floats("a", 1, 2), floats("b", 3), {Name: proto.String("c"), DataType: dtype(onnxpb.TensorProto_STRING)}}},
			`onnx: sequence: element 2: tensor "c": data type STRING is not supported`, true},
		{"lying element", &onnxpb.SequenceProto{ElemType: proto.Int32(int32(onnxpb.SequenceProto_TENSOR)),
			TensorValues: []*onnxpb.TensorProto{floats("a", 1, 2), {Name: proto.String("c"), Dims: []int64{1 << 40}, DataType: dtype(onnxpb.TensorProto_FLOAT)}}},
			`onnx: sequence: element 1: tensor "c": no data`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := onnx.SequenceFromProto(tc.sp, "", a)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %v, want one starting %q", err, tc.want)
			}
			var u *onnx.UnsupportedError
			if errors.As(err, &u) != tc.unsupported {
				t.Errorf("errors.As(*UnsupportedError) = %v, want %v", !tc.unsupported, tc.unsupported)
			}
			if n := a.Stats().Allocated.Current; n != 0 {
				t.Errorf("%d bytes allocated after the error", n)
			}
		})
	}
}

func TestOptional(t *testing.T) {
	dir := t.TempDir()
	a := newAlloc(t)
	TENSOR, SEQUENCE := proto.Int32(int32(onnxpb.OptionalProto_TENSOR)), proto.Int32(int32(onnxpb.OptionalProto_SEQUENCE))
	seqOf := func(ts ...*onnxpb.TensorProto) *onnxpb.SequenceProto {
		return &onnxpb.SequenceProto{ElemType: proto.Int32(int32(onnxpb.SequenceProto_TENSOR)), TensorValues: ts}
	}
	for _, tc := range []struct {
		name   string
		op     *onnxpb.OptionalProto
		tensor any   // values of Optional.Tensor, or nil
		seq    []any // values of Optional.Sequence, or nil
	}{
		{"tensor", &onnxpb.OptionalProto{ElemType: TENSOR, TensorValue: floats("x", 4, 5)}, []float32{4, 5}, nil},
		{"no tensor", &onnxpb.OptionalProto{ElemType: TENSOR}, nil, nil},
		{"sequence", &onnxpb.OptionalProto{ElemType: SEQUENCE, SequenceValue: seqOf(floats("x", 1), floats("y", 2, 3))}, nil, []any{[]float32{1}, []float32{2, 3}}},
		{"empty sequence", &onnxpb.OptionalProto{ElemType: SEQUENCE, SequenceValue: seqOf()}, nil, []any{}},
		{"no sequence", &onnxpb.OptionalProto{ElemType: SEQUENCE}, nil, nil},
		{"untyped empty", &onnxpb.OptionalProto{Name: proto.String("o"), ElemType: proto.Int32(0)}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := onnx.ReadOptionalFile(writeProto(t, dir, tc.name+".pb", tc.op), a)
			if err != nil {
				t.Fatal(err)
			}
			defer o.Release()
			var tv any
			if o.Tensor != nil {
				tv = values(o.Tensor)
			}
			var sv []any
			if o.Sequence != nil {
				sv = []any{}
				for _, x := range o.Sequence {
					sv = append(sv, values(x))
				}
			}
			if !reflect.DeepEqual(tv, tc.tensor) || !reflect.DeepEqual(sv, tc.seq) {
				t.Errorf("read tensor %v sequence %v, want %v %v", tv, sv, tc.tensor, tc.seq)
			}
			if o.Empty() != (tc.tensor == nil && tc.seq == nil) {
				t.Errorf("Empty() = %v", o.Empty())
			}
		})
	}

	for _, tc := range []struct {
		name        string
		op          *onnxpb.OptionalProto
		want        string
		unsupported bool
	}{
		{"nil", nil, "onnx: nil OptionalProto", false},
		{"of map", &onnxpb.OptionalProto{Name: proto.String("o"), ElemType: proto.Int32(int32(onnxpb.OptionalProto_MAP))},
			`onnx: optional "o": optional of MAP is not supported`, true},
		{"no elem_type", &onnxpb.OptionalProto{TensorValue: floats("x", 1)}, "onnx: optional: elem_type is missing or UNDEFINED, but it holds a value", false},
		{"bad elem_type", &onnxpb.OptionalProto{ElemType: proto.Int32(-1)}, "onnx: optional: invalid elem_type -1", false},
		{"mismatch", &onnxpb.OptionalProto{ElemType: TENSOR, SequenceValue: seqOf()}, "onnx: optional: elem_type is TENSOR, but it holds a value of another kind", false},
		{"bad tensor", &onnxpb.OptionalProto{ElemType: TENSOR, TensorValue: &onnxpb.TensorProto{Name: proto.String("t"), DataType: dtype(onnxpb.TensorProto_UINT8), RawData: []byte{1}}},
			`onnx: optional: tensor "t": data type UINT8 is not supported`, true},
		{"bad sequence", &onnxpb.OptionalProto{ElemType: SEQUENCE, SequenceValue: seqOf(floats("x", 1), &onnxpb.TensorProto{DataType: dtype(onnxpb.TensorProto_FLOAT)})},
			"onnx: optional: sequence: element 1: tensor: no data", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := onnx.OptionalFromProto(tc.op, "", a)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %v, want one starting %q", err, tc.want)
			}
			var u *onnx.UnsupportedError
			if errors.As(err, &u) != tc.unsupported {
				t.Errorf("errors.As(*UnsupportedError) = %v, want %v", !tc.unsupported, tc.unsupported)
			}
		})
	}
}

// Reading and releasing, successfully or not, brings the allocated bytes
// back to where they were: here, one tensor held throughout.
func TestMemoryBaseline(t *testing.T) {
	a := newAlloc(t)
	held, err := tensor.Zeros(a, tensor.F64, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	base := a.Stats().Allocated.Current

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "w.bin"), make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	good := []*onnxpb.TensorProto{
		floats("a", 1, 2, 3),
		{Dims: []int64{1000}, DataType: dtype(onnxpb.TensorProto_INT64), RawData: make([]byte, 8000)},
		{Dims: []int64{1024}, DataType: dtype(onnxpb.TensorProto_FLOAT), DataLocation: onnxpb.TensorProto_EXTERNAL.Enum(), ExternalData: external("w.bin")},
		{Dims: []int64{0}, DataType: dtype(onnxpb.TensorProto_BOOL)},
	}
	bad := []*onnxpb.TensorProto{
		{Dims: []int64{1 << 40}, DataType: dtype(onnxpb.TensorProto_FLOAT), RawData: make([]byte, 8)},
		{Dims: []int64{4096}, DataType: dtype(onnxpb.TensorProto_FLOAT), DataLocation: onnxpb.TensorProto_EXTERNAL.Enum(), ExternalData: external("w.bin")},
		{Dims: []int64{2}, DataType: dtype(onnxpb.TensorProto_STRING), StringData: [][]byte{nil, nil}},
	}
	for round := range 3 {
		var live []*tensor.Tensor
		for _, tp := range good {
			x, err := onnx.TensorFromProto(tp, dir, a)
			if err != nil {
				t.Fatal(err)
			}
			live = append(live, x)
		}
		if a.Stats().Allocated.Current == base {
			t.Fatal("reading allocated nothing")
		}
		for _, tp := range bad {
			if _, err := onnx.TensorFromProto(tp, dir, a); err == nil {
				t.Fatalf("%v: no error", tp)
			}
		}
		seq := &onnxpb.SequenceProto{ElemType: proto.Int32(int32(onnxpb.SequenceProto_TENSOR)), TensorValues: append(append([]*onnxpb.TensorProto{}, good...), bad[0])}
		if _, err := onnx.SequenceFromProto(seq, dir, a); err == nil {
			t.Fatal("bad sequence: no error")
		}
		seq.TensorValues = good
		ts, err := onnx.SequenceFromProto(seq, dir, a)
		if err != nil {
			t.Fatal(err)
		}
		onnx.ReleaseAll(ts)
		onnx.ReleaseAll(live)
		if got := a.Stats().Allocated.Current; got != base {
			t.Fatalf("round %d: %d bytes allocated after releasing everything, want %d", round, got, base)
		}
	}
}
