package onnx_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/onnx"
	"github.com/gopir/gopir/onnx/onnxpb"
)

// fuzzAlloc is a fresh allocator for one fuzz input: small chunks, and a
// limit far above anything honest input can ask for.
func fuzzAlloc() *memory.Allocator {
	return memory.New(memory.Options{ChunkSize: 1 << 12, Limit: 256 << 20})
}

// suiteSeeds returns up to n files of the installed backend tests whose
// names match pattern, for fuzz seeds; none when the suite is absent.
func suiteSeeds(pattern string, n int) [][]byte {
	files, _ := filepath.Glob(filepath.Join(onnx.DebianTestData, pattern))
	var out [][]byte
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && len(b) < 1<<16 {
			out = append(out, b)
		}
		if len(out) == n {
			break
		}
	}
	return out
}

// FuzzTensorFromProto unmarshals arbitrary bytes as a TensorProto and
// converts it, with external data resolved in a directory holding a 64-byte
// file. It must never panic, never keep allocator bytes after an error or
// after the release, and never make a tensor larger than the data present
// (at most 8 bytes per input byte: an int64 takes one varint byte at
// least, plus the external file).
func FuzzTensorFromProto(f *testing.F) {
	dir := f.TempDir()
	const extSize = 64
	if err := os.WriteFile(filepath.Join(dir, "w.bin"), make([]byte, extSize), 0o644); err != nil {
		f.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		f.Fatal(err)
	}
	ext := onnxpb.TensorProto_EXTERNAL.Enum()
	for _, tp := range []*onnxpb.TensorProto{
		{Dims: []int64{2, 2}, DataType: dtype(onnxpb.TensorProto_FLOAT), FloatData: []float32{1, 2, 3, 4}},
		{Dims: []int64{2}, DataType: dtype(onnxpb.TensorProto_DOUBLE), DoubleData: []float64{1, 2}},
		{Dims: []int64{3}, DataType: dtype(onnxpb.TensorProto_INT32), Int32Data: []int32{1, -2, 3}},
		{Dims: []int64{3}, DataType: dtype(onnxpb.TensorProto_BOOL), Int32Data: []int32{1, 0, 7}},
		{Dims: []int64{1}, DataType: dtype(onnxpb.TensorProto_INT64), Int64Data: []int64{-1}},
		{Dims: []int64{2}, DataType: dtype(onnxpb.TensorProto_INT64), RawData: le(int64(1), int64(2))},
		{Dims: []int64{1 << 40}, DataType: dtype(onnxpb.TensorProto_FLOAT), RawData: le(float32(1))},
		{Dims: []int64{2, -1}, DataType: dtype(onnxpb.TensorProto_FLOAT)},
		{Dims: []int64{2}, DataType: dtype(onnxpb.TensorProto_UINT64), Uint64Data: []uint64{1, 2}},
		{Dims: []int64{16}, DataType: dtype(onnxpb.TensorProto_FLOAT), DataLocation: ext, ExternalData: external("w.bin")},
		{Dims: []int64{2}, DataType: dtype(onnxpb.TensorProto_INT64), DataLocation: ext, ExternalData: external("w.bin", "offset", "8", "length", "16")},
		{Dims: []int64{1}, DataType: dtype(onnxpb.TensorProto_FLOAT), DataLocation: ext, ExternalData: external("../w.bin")},
		{Dims: []int64{1}, DataType: dtype(onnxpb.TensorProto_FLOAT), DataLocation: ext, ExternalData: external("sub")},
		{DataType: dtype(onnxpb.TensorProto_FLOAT), Segment: &onnxpb.TensorProto_Segment{Begin: proto.Int64(0), End: proto.Int64(1)}},
	} {
		b, err := proto.Marshal(tp)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, b := range suiteSeeds("node/test_[a-c]*/test_data_set_0/*.pb", 40) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		tp := new(onnxpb.TensorProto)
		if proto.Unmarshal(in, tp) != nil {
			return
		}
		a := fuzzAlloc()
		x, err := onnx.TensorFromProto(tp, dir, a)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "onnx: ") {
				t.Errorf("error without the onnx: prefix: %q", err)
			}
		} else {
			if x.Bytes() > 8*int64(len(in))+extSize {
				t.Errorf("%d input bytes made a tensor of %d bytes (%s)", len(in), x.Bytes(), x.Type())
			}
			n := int64(1)
			for _, d := range tp.Dims {
				n *= d
			}
			if int64(x.Len()) != n || x.Rank() != len(tp.Dims) {
				t.Errorf("dims %v made %s", tp.Dims, x.Type())
			}
			x.Release()
		}
		if got := a.Stats().Allocated.Current; got != 0 {
			t.Fatalf("%d bytes allocated after the conversion (error %v)", got, err)
		}
	})
}

// FuzzParseModel parses arbitrary bytes as a model and converts its
// initializers (external data refused: no directory): no panic, and
// nothing left allocated.
func FuzzParseModel(f *testing.F) {
	b, err := proto.Marshal(tinyModel())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte{})
	f.Add([]byte("not a model"))
	for _, b := range suiteSeeds("*/test_*/model.onnx", 40) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := onnx.ParseModel(in)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "onnx: ") {
				t.Errorf("error without the onnx: prefix: %q", err)
			}
			return
		}
		if m.GetGraph() == nil || m.GetIrVersion() < 1 {
			t.Fatalf("accepted a model without graph or IR version: %v", m)
		}
		a := fuzzAlloc()
		for i, tp := range m.GetGraph().GetInitializer() {
			if i == 16 {
				break
			}
			if x, err := onnx.TensorFromProto(tp, "", a); err == nil {
				x.Release()
			}
		}
		if got := a.Stats().Allocated.Current; got != 0 {
			t.Fatalf("%d bytes allocated after converting the initializers", got)
		}
	})
}
