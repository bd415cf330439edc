package train

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/gopir/gopir/tensor"
)

// The checkpoint format is safetensors: an 8-byte little-endian header
// size, a JSON header naming each tensor's dtype, shape and byte range, and
// the raw little-endian data. Its "__metadata__" holds the run's state as
// strings and a SHA-256 of the data section, which loading verifies.

var stDTypes = map[tensor.DType]string{tensor.F32: "F32", tensor.F64: "F64", tensor.I32: "I32", tensor.I64: "I64", tensor.Bool: "BOOL"}

type stEntry struct {
	DType   string   `json:"dtype"`
	Shape   []int    `json:"shape"`
	Offsets [2]int64 `json:"data_offsets"`
}

// stTensor is one tensor read from a file: its bytes alias the file data.
type stTensor struct {
	dtype tensor.DType
	shape []int
	data  []byte
}

// writeSafetensors writes tensors (by name, in sorted order) and meta to w.
func writeSafetensors(w io.Writer, tensors map[string]*tensor.Tensor, meta map[string]string) error {
	names := make([]string, 0, len(tensors))
	for n := range tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	header := map[string]any{}
	var data bytes.Buffer
	for _, n := range names {
		t := tensors[n]
		dt, ok := stDTypes[t.DType()]
		if !ok {
			return fmt.Errorf("tensor %q: dtype %s cannot be saved", n, t.DType())
		}
		begin := int64(data.Len())
		data.Write(t.Raw())
		header[n] = stEntry{DType: dt, Shape: append([]int{}, t.Shape()...), Offsets: [2]int64{begin, int64(data.Len())}}
	}
	m := map[string]string{}
	for k, v := range meta {
		m[k] = v
	}
	sum := sha256.Sum256(data.Bytes())
	m["sha256"] = hex.EncodeToString(sum[:])
	header["__metadata__"] = m
	h, err := json.Marshal(header)
	if err != nil {
		return err
	}
	for len(h)%8 != 0 { // keep the data 8-byte aligned, as the format recommends
		h = append(h, ' ')
	}
	var size [8]byte
	binary.LittleEndian.PutUint64(size[:], uint64(len(h)))
	for _, part := range [][]byte{size[:], h, data.Bytes()} {
		if _, err := w.Write(part); err != nil {
			return err
		}
	}
	return nil
}

// readSafetensors parses a whole file, checking every offset and the
// checksum. It never panics on malformed input.
func readSafetensors(file []byte) (map[string]stTensor, map[string]string, error) {
	if len(file) < 8 {
		return nil, nil, fmt.Errorf("truncated: %d bytes, too short for the header size", len(file))
	}
	n := binary.LittleEndian.Uint64(file[:8])
	if n > uint64(len(file)-8) {
		return nil, nil, fmt.Errorf("truncated: the header says %d bytes, the file has %d after the size", n, len(file)-8)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(file[8:8+n], &raw); err != nil {
		return nil, nil, fmt.Errorf("corrupt header: %v", err)
	}
	data := file[8+n:]
	meta := map[string]string{}
	if m, ok := raw["__metadata__"]; ok {
		if err := json.Unmarshal(m, &meta); err != nil {
			return nil, nil, fmt.Errorf("corrupt header: __metadata__: %v", err)
		}
		delete(raw, "__metadata__")
	}
	want, ok := meta["sha256"]
	if !ok {
		return nil, nil, fmt.Errorf("no checksum in the metadata")
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != want {
		return nil, nil, fmt.Errorf("checksum mismatch: the data is corrupt or truncated")
	}
	out := map[string]stTensor{}
	for name, r := range raw {
		var e stEntry
		if err := json.Unmarshal(r, &e); err != nil {
			return nil, nil, fmt.Errorf("corrupt header: tensor %q: %v", name, err)
		}
		var dt tensor.DType
		for d, s := range stDTypes {
			if s == e.DType {
				dt = d
			}
		}
		if dt == tensor.Invalid {
			return nil, nil, fmt.Errorf("tensor %q: unsupported dtype %q", name, e.DType)
		}
		count := int64(1)
		for _, d := range e.Shape {
			if d < 0 || d > 1<<40 || count > 1<<40 {
				return nil, nil, fmt.Errorf("tensor %q: bad shape %v", name, e.Shape)
			}
			count *= int64(d)
		}
		b, end := e.Offsets[0], e.Offsets[1]
		if b < 0 || end < b || end > int64(len(data)) || end-b != count*int64(dt.Size()) {
			return nil, nil, fmt.Errorf("tensor %q: data offsets %v do not fit shape %v of %s in %d data bytes", name, e.Offsets, e.Shape, e.DType, len(data))
		}
		out[name] = stTensor{dtype: dt, shape: e.Shape, data: data[b:end]}
	}
	return out, meta, nil
}
