package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"strings"
	"testing"
)

// idxBytes encodes an unsigned-byte IDX array.
func idxBytes(dims []int, data []byte) []byte {
	var b bytes.Buffer
	b.Write([]byte{0, 0, idxUByte, byte(len(dims))})
	for _, d := range dims {
		binary.Write(&b, binary.BigEndian, uint32(d))
	}
	b.Write(data)
	return b.Bytes()
}

func gz(t testing.TB, raw []byte) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestReadIDX(t *testing.T) {
	data := []byte{1, 2, 3, 4, 5, 6}
	raw := idxBytes([]int{2, 3}, data)
	for name, in := range map[string][]byte{"raw": raw, "gzip": gz(t, raw)} {
		x, err := ReadIDX(bytes.NewReader(in))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(x.Dims) != 2 || x.Dims[0] != 2 || x.Dims[1] != 3 || !bytes.Equal(x.Data, data) {
			t.Errorf("%s: got dims %v data %v", name, x.Dims, x.Data)
		}
	}
	// A zero dimension is a valid, empty array.
	x, err := ReadIDX(bytes.NewReader(idxBytes([]int{0, 28, 28}, nil)))
	if err != nil || len(x.Data) != 0 {
		t.Errorf("empty array: %v, %v", x, err)
	}
}

func TestReadIDXErrors(t *testing.T) {
	good := idxBytes([]int{2, 3}, []byte{1, 2, 3, 4, 5, 6})
	corrupt := gz(t, good)
	corrupt[len(corrupt)-6] ^= 0xff // CRC-32 of the gzip trailer
	for _, c := range []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "truncated header"},
		{"one byte", []byte{0}, "truncated header"},
		{"short magic", []byte{0, 0, 8}, "truncated header"},
		{"bad magic", []byte{1, 2, 8, 1, 0, 0, 0, 0}, "bad magic number 0x01020801"},
		{"float type", []byte{0, 0, 0x0d, 1, 0, 0, 0, 0}, "unsupported element type 0x0d"},
		{"rank 0", []byte{0, 0, 8, 0}, "rank 0"},
		{"short dims", []byte{0, 0, 8, 2, 0, 0, 0, 1, 0, 0}, "truncated header: 2 dimensions needs 8 bytes, found 6"},
		{"short data", good[:len(good)-2], "truncated: header announces 6 bytes, file has 4"},
		{"trailing", append(good[:len(good):len(good)], 9), "unexpected bytes after the 6 data bytes"},
		{"huge", idxBytes([]int{1 << 16, 1 << 16}, nil), "announce more than"},
		{"huge truncated", idxBytes([]int{1 << 15, 1 << 15}, []byte{1}), "header announces 1073741824 bytes, file has 1"},
		{"bad gzip header", []byte{0x1f, 0x8b, 0, 0}, "bad gzip stream"},
		{"gzip checksum", corrupt, "checksum"},
		{"truncated gzip", gz(t, good)[:20], "idx:"},
	} {
		x, err := ReadIDX(bytes.NewReader(c.in))
		if err == nil {
			t.Errorf("%s: no error, got %v", c.name, x)
			continue
		}
		if !strings.HasPrefix(err.Error(), "idx: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q, want it to start with \"idx: \" and contain %q", c.name, err, c.want)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error is not one line: %q", c.name, err)
		}
	}
}

// FuzzIDX checks that ReadIDX never panics and that what it accepts is
// consistent: the data has exactly the announced number of bytes.
func FuzzIDX(f *testing.F) {
	good := idxBytes([]int{2, 3}, []byte{1, 2, 3, 4, 5, 6})
	f.Add(good)
	f.Add(gz(f, good))
	f.Add(good[:7])
	f.Add(idxBytes([]int{3}, []byte{7, 8, 9}))
	f.Add(idxBytes([]int{1 << 20, 1 << 20}, nil))
	f.Add([]byte{0, 0, 8, 255})
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, in []byte) {
		x, err := ReadIDX(bytes.NewReader(in))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "idx: ") {
				t.Errorf("error without the idx: prefix: %q", err)
			}
			return
		}
		n := 1
		for _, d := range x.Dims {
			n *= d
		}
		if len(x.Dims) == 0 || len(x.Data) != n {
			t.Errorf("dims %v but %d data bytes", x.Dims, len(x.Data))
		}
	})
}
