package tensor_test

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"codeberg.org/sbinet/npyio"

	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

func roundTrip(t *testing.T, a *memory.Allocator, x *tensor.Tensor) *tensor.Tensor {
	t.Helper()
	var buf bytes.Buffer
	if err := tensor.WriteNpy(&buf, x); err != nil {
		t.Fatal(err)
	}
	if hdr := bytes.IndexByte(buf.Bytes(), '\n') + 1; hdr%64 != 0 {
		t.Fatalf("%s: data starts at %d, not 64-aligned", x.Type(), hdr)
	}
	y, err := tensor.ReadNpy(&buf, a)
	if err != nil {
		t.Fatalf("%s: %v", x.Type(), err)
	}
	if buf.Len() != 0 {
		t.Fatalf("%s: %d bytes left unread", x.Type(), buf.Len())
	}
	return y
}

func TestNpyRoundTrip(t *testing.T) {
	a := memory.New(memory.Options{})
	shapes := [][]int{{}, {1}, {5}, {2, 3}, {2, 1, 3, 2}, {0}, {2, 0, 3}}
	for _, dt := range []tensor.DType{tensor.F32, tensor.F64, tensor.I32, tensor.I64, tensor.Bool} {
		for _, shape := range shapes {
			x, err := tensor.New(a, dt, shape...)
			if err != nil {
				t.Fatal(err)
			}
			for i := range x.Len() {
				v := float64(i*7%5) - 1.5
				switch dt {
				case tensor.F32:
					x.F32()[i] = float32(v)
				case tensor.F64:
					x.F64()[i] = v / 3
				case tensor.I32:
					x.I32()[i] = int32(-i * 100003)
				case tensor.I64:
					x.I64()[i] = int64(i) << 40
				case tensor.Bool:
					x.Bool()[i] = i%3 == 0
				}
			}
			y := roundTrip(t, a, x)
			if y.DType() != dt || !slices.Equal(y.Shape(), x.Shape()) || !bytes.Equal(y.Raw(), x.Raw()) || y.Refs() != 1 {
				t.Errorf("round trip of %s gave %s", x, y)
			}
			x.Release()
			y.Release()
		}
	}
	if st := a.Stats(); st.Allocated.Current != 0 {
		t.Fatalf("leaked %d bytes", st.Allocated.Current)
	}
}

// handWritten is np.save of np.arange(1, 7, dtype='<f4').reshape(2, 3)
// spelled out: magic, version 1.0, header length 118 (0x76 'v'), the dict,
// numpy's 20 spaces of room for the first dimension to grow plus 38 to
// align the data at byte 128, a newline, then six little-endian floats.
const handWritten = "\x93NUMPY\x01\x00v\x00" +
	"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" +
	"                                                          \n" +
	"\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40\x00\x00\x80\x40\x00\x00\xa0\x40\x00\x00\xc0\x40"

func TestNpyHandWrittenHeader(t *testing.T) {
	if len(handWritten) != 128+24 {
		t.Fatalf("fixture is %d bytes", len(handWritten))
	}
	a := memory.New(memory.Options{})
	x, err := tensor.FromF32(a, []float32{1, 2, 3, 4, 5, 6}, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Release()
	var buf bytes.Buffer
	if err := tensor.WriteNpy(&buf, x); err != nil {
		t.Fatal(err)
	}
	if buf.String() != handWritten {
		t.Fatalf("WriteNpy wrote\n%q\nwant\n%q", buf.String(), handWritten)
	}
	y, err := tensor.ReadNpy(strings.NewReader(handWritten), a)
	if err != nil {
		t.Fatal(err)
	}
	defer y.Release()
	if y.Type() != "tensor<2x3xf32>" || !slices.Equal(y.F32(), []float32{1, 2, 3, 4, 5, 6}) {
		t.Fatalf("read %s", y)
	}
}

// npyFile lays out a .npy file of format major.0 around a header dict,
// without padding.
func npyFile(major byte, dict, data string) string {
	n := len(dict) + 1
	pre := "\x93NUMPY" + string([]byte{major, 0})
	if major == 1 {
		pre += string([]byte{byte(n), byte(n >> 8)})
	} else {
		pre += string([]byte{byte(n), byte(n >> 8), 0, 0})
	}
	return pre + dict + "\n" + data
}

func TestNpyOtherHeaders(t *testing.T) {
	a := memory.New(memory.Options{})
	for _, tc := range []struct {
		name, file, want string
	}{
		// Big-endian data, keys in another order, no trailing comma,
		// version 2.0, no padding at all.
		{"big-endian-v2", npyFile(2, "{'shape': (2,), 'descr': '>f8', 'fortran_order': False}",
			"\x3f\xf0\x00\x00\x00\x00\x00\x00\xc0\x00\x00\x00\x00\x00\x00\x00"), "tensor<2xf64>[1 -2]"},
		{"python2-long-dims", npyFile(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (1L, 2L), }",
			"\x05\x00\x00\x00\xfe\xff\xff\xff"), "tensor<1x2xi32>[5 -2]"},
		{"bool-nonzero-is-true", npyFile(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
			"\x00\x07\x01"), "tensor<3xi1>[false true true]"},
		{"fortran-1x1-is-c", npyFile(1, "{'descr': '<i8', 'fortran_order': True, 'shape': (1, 1), }",
			"\x09\x00\x00\x00\x00\x00\x00\x00"), "tensor<1x1xi64>[9]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, err := tensor.ReadNpy(strings.NewReader(tc.file), a)
			if err != nil {
				t.Fatal(err)
			}
			defer x.Release()
			if x.String() != tc.want {
				t.Fatalf("got %s, want %s", x, tc.want)
			}
		})
	}
}

func TestNpyErrors(t *testing.T) {
	a := memory.New(memory.Options{})
	hdr := func(dict string) string { return npyFile(1, dict, "") }
	for _, tc := range []struct {
		name, file, want string
		eof              bool
	}{
		{"empty", "", "truncated file: 0 of 8 preamble bytes", true},
		{"bad magic", "PK\x03\x04zipfile", "not a .npy file: bad magic", false},
		{"version", "\x93NUMPY\x04\x00\x00\x00", "unsupported format version 4.0", false},
		{"short header length", "\x93NUMPY\x01\x00\x10", "truncated file: 1 of 2 header-length bytes", true},
		{"short header", "\x93NUMPY\x01\x00\x40\x00{'descr'", "truncated header: 8 of 64 bytes", true},
		{"unsupported dtype", hdr("{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }"), `unsupported dtype "<u2"`, false},
		{"float16", hdr("{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }"), `unsupported dtype "<f2"`, false},
		{"structured", hdr("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }"), "structured (record) arrays are not supported", false},
		{"fortran", hdr("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }"), "Fortran-order (column-major) array of shape [2 3] is not supported", false},
		{"missing key", hdr("{'descr': '<f4', 'shape': (2, 3), }"), `missing key "fortran_order"`, false},
		{"extra key", hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}"), `unexpected key "x"`, false},
		{"negative dim", hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }"), "expected a non-negative dimension", false},
		{"bad bool", hdr("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }"), "fortran_order: expected True or False", false},
		{"truncated data", hdr("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }") + "\x00\x00\x00\x00\x00\x00\xf0\x3f\x01",
			"truncated data: tensor<2x2xf64> needs 32 bytes, got 9", true},
		{"no data", hdr("{'descr': '<i4', 'fortran_order': False, 'shape': (), }"), "truncated data: tensor<i32> needs 4 bytes, got 0", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, err := tensor.ReadNpy(strings.NewReader(tc.file), a)
			if err == nil {
				x.Release()
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.HasPrefix(err.Error(), "npy: ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want it to contain %q", err, tc.want)
			}
			if tc.eof != errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("errors.Is(%v, io.ErrUnexpectedEOF) = %v", err, !tc.eof)
			}
		})
	}
	if st := a.Stats(); st.Allocated.Current != 0 {
		t.Fatalf("failed reads leaked %d bytes", st.Allocated.Current)
	}
}

// TestNpyInteropWithNpyio checks both directions against an independent
// implementation: files npyio writes (format 2.0, unaligned) read here, and
// files written here read with npyio.
func TestNpyInteropWithNpyio(t *testing.T) {
	a := memory.New(memory.Options{})
	check := func(t *testing.T, v any, wantType string, read func(*tensor.Tensor) any) {
		var buf bytes.Buffer
		if err := npyio.Write(&buf, v); err != nil {
			t.Fatal(err)
		}
		x, err := tensor.ReadNpy(bytes.NewReader(buf.Bytes()), a)
		if err != nil {
			t.Fatal(err)
		}
		defer x.Release()
		if x.Type() != wantType {
			t.Fatalf("read %s, want %s", x.Type(), wantType)
		}
		got := read(x)
		var back bytes.Buffer
		if err := tensor.WriteNpy(&back, x); err != nil {
			t.Fatal(err)
		}
		r, err := npyio.NewReader(&back)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(r.Header.Descr.Shape, x.Shape()) && x.Rank() > 0 {
			t.Fatalf("npyio sees shape %v, want %v", r.Header.Descr.Shape, x.Shape())
		}
		switch want := v.(type) {
		case []float32:
			var out []float32
			if err := r.Read(&out); err != nil || !slices.Equal(out, want) || !slices.Equal(got.([]float32), want) {
				t.Fatalf("f32: npyio %v (%v), tensor %v, want %v", out, err, got, want)
			}
		case []float64:
			var out []float64
			if err := r.Read(&out); err != nil || !slices.Equal(out, want) || !slices.Equal(got.([]float64), want) {
				t.Fatalf("f64: npyio %v (%v), tensor %v, want %v", out, err, got, want)
			}
		case []int32:
			var out []int32
			if err := r.Read(&out); err != nil || !slices.Equal(out, want) || !slices.Equal(got.([]int32), want) {
				t.Fatalf("i32: npyio %v (%v), tensor %v, want %v", out, err, got, want)
			}
		case [2][2]int64:
			var out []int64
			flat := []int64{want[0][0], want[0][1], want[1][0], want[1][1]}
			if err := r.Read(&out); err != nil || !slices.Equal(out, flat) || !slices.Equal(got.([]int64), flat) {
				t.Fatalf("i64: npyio %v (%v), tensor %v, want %v", out, err, got, flat)
			}
		case []bool:
			var out []bool
			if err := r.Read(&out); err != nil || !slices.Equal(out, want) || !slices.Equal(got.([]bool), want) {
				t.Fatalf("bool: npyio %v (%v), tensor %v, want %v", out, err, got, want)
			}
		case float64:
			var out float64
			if err := r.Read(&out); err != nil || out != want || got.([]float64)[0] != want {
				t.Fatalf("scalar: npyio %v (%v), tensor %v, want %v", out, err, got, want)
			}
		}
	}
	t.Run("f32", func(t *testing.T) {
		check(t, []float32{1.5, -2, 3e-8}, "tensor<3xf32>", func(x *tensor.Tensor) any { return x.F32() })
	})
	t.Run("f64", func(t *testing.T) {
		check(t, []float64{0.1, 1e300}, "tensor<2xf64>", func(x *tensor.Tensor) any { return x.F64() })
	})
	t.Run("i32", func(t *testing.T) {
		check(t, []int32{-1, 1 << 30}, "tensor<2xi32>", func(x *tensor.Tensor) any { return x.I32() })
	})
	t.Run("i64-2d", func(t *testing.T) {
		check(t, [2][2]int64{{1, -2}, {3 << 40, 4}}, "tensor<2x2xi64>", func(x *tensor.Tensor) any { return x.I64() })
	})
	t.Run("bool", func(t *testing.T) {
		check(t, []bool{true, false, true}, "tensor<3xi1>", func(x *tensor.Tensor) any { return x.Bool() })
	})
	t.Run("scalar", func(t *testing.T) {
		check(t, 2.25, "tensor<f64>", func(x *tensor.Tensor) any { return x.F64() })
	})
}
