package tensor_test

import (
	"bytes"
	"io"
	"slices"
	"testing"

	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

// FuzzReadNpy reads arbitrary bytes as .npy, from a reader that tells its
// length and from one that does not: nothing panics, a failed read leaves
// nothing allocated, a header that promises more data than there is fails
// before allocating when the length is known, and what reads back writes
// out and reads again to the same tensor.
func FuzzReadNpy(f *testing.F) {
	a := memory.New(memory.Options{})
	for _, dt := range []tensor.DType{tensor.F32, tensor.F64, tensor.I32, tensor.I64, tensor.Bool} {
		for _, shape := range [][]int{{}, {3}, {2, 0}, {2, 3}} {
			x, _ := tensor.Zeros(a, dt, shape...)
			var buf bytes.Buffer
			tensor.WriteNpy(&buf, x)
			x.Release()
			f.Add(buf.Bytes())
		}
	}
	f.Add([]byte("\x93NUMPY\x01\x00\x46\x00{'descr': '<f4', 'fortran_order': False, 'shape': (200000, 200000), }          \n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		a := memory.New(memory.Options{Limit: 64 << 20, ChunkSize: 1 << 20})
		x, err := tensor.ReadNpy(bytes.NewReader(data), a)
		if err != nil {
			if n := a.Stats().Allocated.Peak; n != 0 {
				t.Fatalf("a failed read of a %d-byte file allocated %d bytes: %v", len(data), n, err)
			}
			// Without a length the data may be allocated before the read
			// fails; it must be released.
			b := memory.New(memory.Options{Limit: 64 << 20, ChunkSize: 1 << 20})
			if y, err := tensor.ReadNpy(struct{ io.Reader }{bytes.NewReader(data)}, b); err == nil {
				y.Release()
				t.Fatalf("read from a plain reader, not from a bytes.Reader")
			}
			if n := b.Stats().Allocated.Current; n != 0 {
				t.Fatalf("%d bytes left allocated after a failed read", n)
			}
			return
		}
		var buf bytes.Buffer
		if err := tensor.WriteNpy(&buf, x); err != nil {
			t.Fatal(err)
		}
		y, err := tensor.ReadNpy(&buf, a)
		if err != nil {
			t.Fatalf("rereading what was written: %v", err)
		}
		if x.DType() != y.DType() || !slices.Equal(x.Shape(), y.Shape()) || !bytes.Equal(x.Raw(), y.Raw()) {
			t.Fatalf("round trip changed %s into %s", x.Type(), y.Type())
		}
		x.Release()
		y.Release()
		if n := a.Stats().Allocated.Current; n != 0 {
			t.Fatalf("%d bytes left allocated", n)
		}
	})
}
