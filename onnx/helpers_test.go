package onnx_test

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

// newAlloc returns an allocator with small chunks whose allocated bytes
// must be back to zero when the test ends.
func newAlloc(t testing.TB) *memory.Allocator {
	t.Helper()
	a := memory.New(memory.Options{ChunkSize: 1 << 16})
	t.Cleanup(func() {
		if n := a.Stats().Allocated.Current; n != 0 {
			t.Errorf("%d bytes still allocated at the end of the test: %v", n, a.Live())
		}
	})
	return a
}

// values copies a tensor's elements into a Go slice of its dtype.
func values(x *tensor.Tensor) any {
	switch x.DType() {
	case tensor.F32:
		return append([]float32{}, x.F32()...)
	case tensor.F64:
		return append([]float64{}, x.F64()...)
	case tensor.I32:
		return append([]int32{}, x.I32()...)
	case tensor.I64:
		return append([]int64{}, x.I64()...)
	case tensor.Bool:
		return append([]bool{}, x.Bool()...)
	}
	return nil
}

// le encodes values little-endian, as raw_data holds them.
func le(vs ...any) []byte {
	var b []byte
	for _, v := range vs {
		switch v := v.(type) {
		case float32:
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		case float64:
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		case int32:
			b = binary.LittleEndian.AppendUint32(b, uint32(v))
		case int64:
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		case byte:
			b = append(b, v)
		default:
			panic("le: unexpected type")
		}
	}
	return b
}

// writeProto marshals m into dir/name and returns the path.
func writeProto(t testing.TB, dir, name string, m proto.Message) string {
	t.Helper()
	data, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
