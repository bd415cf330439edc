package onnx_test

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/onnx"
	"github.com/gopir/gopir/onnx/onnxpb"
	"github.com/gopir/gopir/tensor"
)

func dtype(dt onnxpb.TensorProto_DataType) *int32 { return proto.Int32(int32(dt)) }

func TestTensorFromProto(t *testing.T) {
	F, D, I32, I64, B := onnxpb.TensorProto_FLOAT, onnxpb.TensorProto_DOUBLE, onnxpb.TensorProto_INT32,
		onnxpb.TensorProto_INT64, onnxpb.TensorProto_BOOL
	for _, tc := range []struct {
		name  string
		tp    *onnxpb.TensorProto
		dtype tensor.DType
		shape []int
		want  any
	}{
		{"float_data", &onnxpb.TensorProto{Dims: []int64{2, 3}, DataType: dtype(F), FloatData: []float32{1, -2, 3.5, 0, float32(math.Inf(1)), -1e-30}},
			tensor.F32, []int{2, 3}, []float32{1, -2, 3.5, 0, float32(math.Inf(1)), -1e-30}},
		{"float raw", &onnxpb.TensorProto{Dims: []int64{3}, DataType: dtype(F), RawData: le(float32(1.5), float32(-2), float32(math.MaxFloat32))},
			tensor.F32, []int{3}, []float32{1.5, -2, math.MaxFloat32}},
		{"float scalar", &onnxpb.TensorProto{DataType: dtype(F), FloatData: []float32{7}},
			tensor.F32, []int{}, []float32{7}},
		{"double_data", &onnxpb.TensorProto{Dims: []int64{1, 2}, DataType: dtype(D), DoubleData: []float64{math.Pi, -1e300}},
			tensor.F64, []int{1, 2}, []float64{math.Pi, -1e300}},
		{"double raw", &onnxpb.TensorProto{Dims: []int64{2}, DataType: dtype(D), RawData: le(math.E, -0.25)},
			tensor.F64, []int{2}, []float64{math.E, -0.25}},
		{"int32_data", &onnxpb.TensorProto{Dims: []int64{4}, DataType: dtype(I32), Int32Data: []int32{0, -1, math.MaxInt32, math.MinInt32}},
			tensor.I32, []int{4}, []int32{0, -1, math.MaxInt32, math.MinInt32}},
		{"int32 raw", &onnxpb.TensorProto{Dims: []int64{2}, DataType: dtype(I32), RawData: le(int32(-7), int32(1<<30))},
			tensor.I32, []int{2}, []int32{-7, 1 << 30}},
		{"int64_data", &onnxpb.TensorProto{Dims: []int64{3}, DataType: dtype(I64), Int64Data: []int64{math.MinInt64, 0, math.MaxInt64}},
			tensor.I64, []int{3}, []int64{math.MinInt64, 0, math.MaxInt64}},
		{"int64 raw", &onnxpb.TensorProto{Dims: []int64{2, 1}, DataType: dtype(I64), RawData: le(int64(-1), int64(1<<40))},
			tensor.I64, []int{2, 1}, []int64{-1, 1 << 40}},
		{"bool int32_data", &onnxpb.TensorProto{Dims: []int64{4}, DataType: dtype(B), Int32Data: []int32{1, 0, 5, -1}},
			tensor.Bool, []int{4}, []bool{true, false, true, true}},
		{"bool raw", &onnxpb.TensorProto{Dims: []int64{3}, DataType: dtype(B), RawData: []byte{1, 0, 2}},
			tensor.Bool, []int{3}, []bool{true, false, true}},
		{"empty, no data", &onnxpb.TensorProto{Dims: []int64{0, 3}, DataType: dtype(F)},
			tensor.F32, []int{0, 3}, []float32{}},
		{"empty, empty raw", &onnxpb.TensorProto{Dims: []int64{2, 0}, DataType: dtype(I64), RawData: []byte{}},
			tensor.I64, []int{2, 0}, []int64{}},
		{"rank 5", &onnxpb.TensorProto{Dims: []int64{1, 1, 2, 1, 1}, DataType: dtype(I32), Int32Data: []int32{4, 5}},
			tensor.I32, []int{1, 1, 2, 1, 1}, []int32{4, 5}},
		{"external_data ignored when DEFAULT", &onnxpb.TensorProto{Dims: []int64{1}, DataType: dtype(F), FloatData: []float32{2},
			ExternalData: []*onnxpb.StringStringEntryProto{{Key: proto.String("location"), Value: proto.String("nowhere")}}},
			tensor.F32, []int{1}, []float32{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAlloc(t)
			x, err := onnx.TensorFromProto(tc.tp, "", a)
			if err != nil {
				t.Fatal(err)
			}
			defer x.Release()
			if x.DType() != tc.dtype || !slices.Equal(x.Shape(), tc.shape) {
				t.Errorf("got %v %v, want %v %v", x.DType(), x.Shape(), tc.dtype, tc.shape)
			}
			if got := values(x); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("values %v, want %v", got, tc.want)
			}
		})
	}
}

// Every ONNX data type gopir has no dtype for is an *UnsupportedError,
// whichever field holds its data, and nothing is allocated.
func TestTensorFromProtoUnsupported(t *testing.T) {
	for _, dt := range []onnxpb.TensorProto_DataType{
		onnxpb.TensorProto_STRING, onnxpb.TensorProto_FLOAT16, onnxpb.TensorProto_BFLOAT16,
		onnxpb.TensorProto_INT8, onnxpb.TensorProto_UINT8, onnxpb.TensorProto_INT16, onnxpb.TensorProto_UINT16,
		onnxpb.TensorProto_UINT32, onnxpb.TensorProto_UINT64, onnxpb.TensorProto_COMPLEX64, onnxpb.TensorProto_COMPLEX128,
		17, 23, // FLOAT8E4M3FN and FLOAT4E2M1 of later ONNX versions
	} {
		for _, tp := range []*onnxpb.TensorProto{
			{Name: proto.String("x"), Dims: []int64{2}, DataType: dtype(dt), RawData: make([]byte, 32)},
			{Name: proto.String("x"), Dims: []int64{2}, DataType: dtype(dt), StringData: [][]byte{[]byte("a"), []byte("b")}},
			{Name: proto.String("x"), Dims: []int64{1 << 40}, DataType: dtype(dt)},
		} {
			a := newAlloc(t)
			_, err := onnx.TensorFromProto(tp, "", a)
			var u *onnx.UnsupportedError
			if !errors.As(err, &u) {
				t.Errorf("%v: error %v, want an *UnsupportedError", dt, err)
				continue
			}
			if !strings.Contains(u.What, "data type") || !strings.Contains(err.Error(), `tensor "x"`) {
				t.Errorf("%v: error %q does not name the data type and the tensor", dt, err)
			}
		}
	}
	_, err := onnx.TensorFromProto(&onnxpb.TensorProto{DataType: dtype(onnxpb.TensorProto_FLOAT16), RawData: []byte{0, 0}}, "", newAlloc(t))
	if want := "onnx: tensor: data type FLOAT16 is not supported: gopir reads FLOAT (f32), INT32 (i32), INT64 (i64), BOOL (i1), DOUBLE (f64)"; err == nil || err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

// Malformed protos are plain errors, not *UnsupportedError, and allocate
// nothing: not even a chunk.
func TestTensorFromProtoErrors(t *testing.T) {
	F, I64, B := onnxpb.TensorProto_FLOAT, onnxpb.TensorProto_INT64, onnxpb.TensorProto_BOOL
	for _, tc := range []struct {
		name        string
		tp          *onnxpb.TensorProto
		want        string
		unsupported bool
	}{
		{"nil", nil, "nil TensorProto", false},
		{"no data_type", &onnxpb.TensorProto{Dims: []int64{1}, FloatData: []float32{1}}, "data_type is missing or UNDEFINED", false},
		{"negative data_type", &onnxpb.TensorProto{DataType: proto.Int32(-3)}, "invalid data_type -3", false},
		{"segment", &onnxpb.TensorProto{DataType: dtype(F), Segment: &onnxpb.TensorProto_Segment{Begin: proto.Int64(0), End: proto.Int64(4)}},
			"segmented tensor is not supported", true},
		{"negative dim", &onnxpb.TensorProto{Dims: []int64{2, -1}, DataType: dtype(F)}, "negative dimension -1 at axis 1 of dims [2 -1]", false},
		{"overflowing dims", &onnxpb.TensorProto{Dims: []int64{1 << 32, 1 << 32}, DataType: dtype(F)}, "element count overflows", false},
		{"overflowing bytes", &onnxpb.TensorProto{Dims: []int64{1 << 61}, DataType: dtype(I64)}, "overflow int64", false},
		{"long overflowing dims", &onnxpb.TensorProto{Dims: slices.Repeat([]int64{1 << 20}, 40), DataType: dtype(F)}, "(rank 40): element count overflows", false},
		{"lying dims, raw", &onnxpb.TensorProto{Dims: []int64{1 << 30, 1 << 10}, DataType: dtype(F), RawData: le(float32(1))},
			"raw_data has 4 bytes, but dims [1073741824 1024] of f32 need 4398046511104", false},
		{"lying dims, typed", &onnxpb.TensorProto{Dims: []int64{1 << 40}, DataType: dtype(F), FloatData: []float32{1, 2}},
			"float_data has 2 values, but dims [1099511627776] need 1099511627776", false},
		{"lying dims, no data", &onnxpb.TensorProto{Dims: []int64{1 << 40}, DataType: dtype(I64)}, "no data, but dims [1099511627776] need 1099511627776 elements", false},
		{"scalar without data", &onnxpb.TensorProto{DataType: dtype(F)}, "no data, but dims [] need 1 elements", false},
		{"too few values", &onnxpb.TensorProto{Dims: []int64{2, 3}, DataType: dtype(F), FloatData: []float32{1, 2, 3, 4, 5}}, "float_data has 5 values, but dims [2 3] need 6", false},
		{"too many values", &onnxpb.TensorProto{Dims: []int64{1}, DataType: dtype(B), Int32Data: []int32{1, 0}}, "int32_data has 2 values", false},
		{"raw too short", &onnxpb.TensorProto{Dims: []int64{2}, DataType: dtype(I64), RawData: make([]byte, 15)}, "raw_data has 15 bytes, but dims [2] of i64 need 16", false},
		{"raw and typed", &onnxpb.TensorProto{Dims: []int64{1}, DataType: dtype(F), RawData: le(float32(1)), FloatData: []float32{1}},
			"both raw_data (4 bytes) and float_data (1 values) are set", false},
		{"wrong typed field", &onnxpb.TensorProto{Dims: []int64{1}, DataType: dtype(F), Int64Data: []int64{1}},
			"int64_data holds 1 values, but data type FLOAT keeps its elements in float_data or raw_data", false},
		{"string_data for numbers", &onnxpb.TensorProto{Dims: []int64{1}, DataType: dtype(I64), StringData: [][]byte{[]byte("1")}},
			"string_data holds 1 values", false},
		{"double_data for bool", &onnxpb.TensorProto{Dims: []int64{1}, DataType: dtype(B), DoubleData: []float64{1}},
			"double_data holds 1 values", false},
		{"bad data_location", &onnxpb.TensorProto{DataType: dtype(F), FloatData: []float32{1}, DataLocation: onnxpb.TensorProto_DataLocation(7).Enum()},
			"invalid data_location 7", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAlloc(t)
			_, err := onnx.TensorFromProto(tc.tp, "", a)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "onnx: ") {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			var u *onnx.UnsupportedError
			if errors.As(err, &u) != tc.unsupported {
				t.Errorf("errors.As(%v, *UnsupportedError) = %v, want %v", err, !tc.unsupported, tc.unsupported)
			}
			if st := a.Stats(); st.Reserved.Peak != 0 {
				t.Errorf("the error reserved %d bytes", st.Reserved.Peak)
			}
		})
	}
	if _, err := onnx.TensorFromProto(&onnxpb.TensorProto{DataType: dtype(F), FloatData: []float32{1}}, "", nil); err == nil {
		t.Error("nil allocator: no error")
	}
}

func external(loc string, kv ...string) []*onnxpb.StringStringEntryProto {
	e := []*onnxpb.StringStringEntryProto{{Key: proto.String("location"), Value: proto.String(loc)}}
	for i := 0; i+1 < len(kv); i += 2 {
		e = append(e, &onnxpb.StringStringEntryProto{Key: proto.String(kv[i]), Value: proto.String(kv[i+1])})
	}
	return e
}

func TestTensorFromProtoExternal(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "model")
	data := le(float32(1), float32(2), float32(3), float32(4), float32(5), float32(6))
	for name, b := range map[string][]byte{
		"model/w.bin":     data,
		"model/sub/b.bin": le(int64(-5), int64(9)),
		"secret.bin":      data,
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	symlinks := true
	if err := os.Symlink(filepath.Join(root, "secret.bin"), filepath.Join(dir, "escape.bin")); err != nil {
		symlinks = false
		t.Logf("no symbolic links here: %v", err)
	}
	if symlinks {
		if err := os.Symlink("w.bin", filepath.Join(dir, "inside.bin")); err != nil {
			t.Fatal(err)
		}
	}
	ext := onnxpb.TensorProto_EXTERNAL.Enum()
	F, I64 := onnxpb.TensorProto_FLOAT, onnxpb.TensorProto_INT64

	for _, tc := range []struct {
		name  string
		tp    *onnxpb.TensorProto
		shape []int
		want  any
	}{
		{"whole file", &onnxpb.TensorProto{Dims: []int64{2, 3}, DataType: dtype(F), DataLocation: ext, ExternalData: external("w.bin")},
			[]int{2, 3}, []float32{1, 2, 3, 4, 5, 6}},
		{"offset and length", &onnxpb.TensorProto{Dims: []int64{2}, DataType: dtype(F), DataLocation: ext, ExternalData: external("w.bin", "offset", "8", "length", "8")},
			[]int{2}, []float32{3, 4}},
		{"offset to the end", &onnxpb.TensorProto{Dims: []int64{1}, DataType: dtype(F), DataLocation: ext, ExternalData: external("w.bin", "offset", "20", "checksum", "ignored")},
			[]int{1}, []float32{6}},
		{"subdirectory", &onnxpb.TensorProto{Dims: []int64{2}, DataType: dtype(I64), DataLocation: ext, ExternalData: external("sub/b.bin")},
			[]int{2}, []int64{-5, 9}},
		{"dot segments inside", &onnxpb.TensorProto{Dims: []int64{2}, DataType: dtype(I64), DataLocation: ext, ExternalData: external("./sub/../sub/b.bin")},
			[]int{2}, []int64{-5, 9}},
		{"empty", &onnxpb.TensorProto{Dims: []int64{0}, DataType: dtype(F), DataLocation: ext, ExternalData: external("w.bin", "offset", "24")},
			[]int{0}, []float32{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAlloc(t)
			x, err := onnx.TensorFromProto(tc.tp, dir, a)
			if err != nil {
				t.Fatal(err)
			}
			defer x.Release()
			if !slices.Equal(x.Shape(), tc.shape) || !reflect.DeepEqual(values(x), tc.want) {
				t.Errorf("got %v %v, want %v %v", x.Shape(), values(x), tc.shape, tc.want)
			}
		})
	}
	if symlinks {
		a := newAlloc(t)
		x, err := onnx.TensorFromProto(&onnxpb.TensorProto{Dims: []int64{6}, DataType: dtype(F), DataLocation: ext, ExternalData: external("inside.bin")}, dir, a)
		if err != nil {
			t.Errorf("symbolic link inside the directory: %v", err)
		} else {
			x.Release()
		}
	}

	for _, tc := range []struct {
		name string
		tp   *onnxpb.TensorProto
		dir  string
		want string
	}{
		{"absolute", &onnxpb.TensorProto{Dims: []int64{6}, DataType: dtype(F), DataLocation: ext, ExternalData: external(filepath.Join(root, "secret.bin"))},
			dir, "is an absolute path"},
		{"slash", &onnxpb.TensorProto{Dims: []int64{6}, DataType: dtype(F), DataLocation: ext, ExternalData: external("/etc/passwd")},
			dir, `"/etc/passwd" is an absolute path`},
		{"dot dot", &onnxpb.TensorProto{Dims: []int64{6}, DataType: dtype(F), DataLocation: ext, ExternalData: external("../secret.bin")},
			dir, `"../secret.bin" is outside the model's directory`},
		{"dot dot inside", &onnxpb.TensorProto{Dims: []int64{6}, DataType: dtype(F), DataLocation: ext, ExternalData: external("sub/../../secret.bin")},
			dir, "is outside the model's directory"},
		{"no dir", &onnxpb.TensorProto{Dims: []int64{6}, DataType: dtype(F), DataLocation: ext, ExternalData: external("w.bin")},
			"", "no directory to resolve it against"},
		{"missing file", &onnxpb.TensorProto{Dims: []int64{6}, DataType: dtype(F), DataLocation: ext, ExternalData: external("nope.bin")},
			dir, "nope.bin: no such file"},
		{"directory", &onnxpb.TensorProto{Dims: []int64{6}, DataType: dtype(F), DataLocation: ext, ExternalData: external("sub")},
			dir, `"sub" is not a regular file`},
		{"no location", &onnxpb.TensorProto{Dims: []int64{6}, DataType: dtype(F), DataLocation: ext, ExternalData: external("", "offset", "0")},
			dir, `external_data has no "location"`},
		{"duplicate key", &onnxpb.TensorProto{Dims: []int64{6}, DataType: dtype(F), DataLocation: ext, ExternalData: external("w.bin", "offset", "0", "offset", "4")},
			dir, `external_data has key "offset" twice`},
		{"bad offset", &onnxpb.TensorProto{Dims: []int64{6}, DataType: dtype(F), DataLocation: ext, ExternalData: external("w.bin", "offset", "-4")},
			dir, `external_data offset "-4" is not a non-negative integer`},
		{"bad length", &onnxpb.TensorProto{Dims: []int64{6}, DataType: dtype(F), DataLocation: ext, ExternalData: external("w.bin", "length", "12x")},
			dir, `external_data length "12x"`},
		{"offset past end", &onnxpb.TensorProto{Dims: []int64{0}, DataType: dtype(F), DataLocation: ext, ExternalData: external("w.bin", "offset", "25")},
			dir, "offset 25 is past its end (24 bytes)"},
		{"length past end", &onnxpb.TensorProto{Dims: []int64{6}, DataType: dtype(F), DataLocation: ext, ExternalData: external("w.bin", "offset", "4", "length", "24")},
			dir, "length 24 at offset 4 runs past its end"},
		{"lying dims", &onnxpb.TensorProto{Dims: []int64{1 << 20, 1 << 20}, DataType: dtype(F), DataLocation: ext, ExternalData: external("w.bin")},
			dir, `external data "w.bin" has 24 bytes at offset 0, but dims [1048576 1048576] of f32 need 4398046511104`},
		{"length disagrees", &onnxpb.TensorProto{Dims: []int64{6}, DataType: dtype(F), DataLocation: ext, ExternalData: external("w.bin", "length", "20")},
			dir, "has 20 bytes at offset 0, but dims [6] of f32 need 24"},
		{"raw too", &onnxpb.TensorProto{Dims: []int64{1}, DataType: dtype(F), DataLocation: ext, ExternalData: external("w.bin"), RawData: le(float32(1))},
			dir, "data_location is EXTERNAL, but raw_data is set too"},
		{"typed too", &onnxpb.TensorProto{Dims: []int64{1}, DataType: dtype(F), DataLocation: ext, ExternalData: external("w.bin"), FloatData: []float32{1}},
			dir, "data_location is EXTERNAL, but float_data holds 1 values too"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAlloc(t)
			_, err := onnx.TensorFromProto(tc.tp, tc.dir, a)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if st := a.Stats(); st.Reserved.Peak != 0 {
				t.Errorf("the error reserved %d bytes", st.Reserved.Peak)
			}
		})
	}
	if symlinks {
		_, err := onnx.TensorFromProto(&onnxpb.TensorProto{Dims: []int64{6}, DataType: dtype(F), DataLocation: ext, ExternalData: external("escape.bin")}, dir, newAlloc(t))
		if err == nil || !strings.Contains(err.Error(), "escape.bin") {
			t.Errorf("symbolic link out of the directory: error %v", err)
		}
	}
	_, err := onnx.TensorFromProto(&onnxpb.TensorProto{Dims: []int64{6}, DataType: dtype(F), DataLocation: ext, ExternalData: external("nope.bin")}, dir, newAlloc(t))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: errors.Is(%v, fs.ErrNotExist) is false", err)
	}
}

// An allocator failure is returned with the tensor's name, still
// recognisable as *memory.ResourceExhausted, and leaves nothing behind.
func TestTensorFromProtoOOM(t *testing.T) {
	a := memory.New(memory.Options{Limit: 1024, ChunkSize: 1024})
	tp := &onnxpb.TensorProto{Name: proto.String("big"), Dims: []int64{512}, DataType: dtype(onnxpb.TensorProto_FLOAT), FloatData: make([]float32, 512)}
	_, err := onnx.TensorFromProto(tp, "", a)
	var oom *memory.ResourceExhausted
	if !errors.As(err, &oom) || !strings.Contains(err.Error(), `tensor "big"`) {
		t.Fatalf("error %v, want a *memory.ResourceExhausted naming the tensor", err)
	}
	if n := a.Stats().Allocated.Current; n != 0 {
		t.Errorf("%d bytes allocated after the failure", n)
	}
}
