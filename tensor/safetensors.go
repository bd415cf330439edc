package tensor

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/gopir/gopir/memory"
)

// safetensors files (checkpoints, imported parameters): an 8-byte
// little-endian header size, a JSON header naming each tensor's dtype,
// shape and byte range, and the raw little-endian data. Its
// "__metadata__" holds string metadata and a SHA-256 of the data section,
// which reading verifies.

var stDTypes = map[DType]string{F32: "F32", F64: "F64", I32: "I32", I64: "I64", Bool: "BOOL"}

type stEntry struct {
	DType   string   `json:"dtype"`
	Shape   []int    `json:"shape"`
	Offsets [2]int64 `json:"data_offsets"`
}

// SafetensorsEntry is one tensor of a parsed safetensors file: its data
// aliases the file's bytes.
type SafetensorsEntry struct {
	DType DType
	Shape []int
	Data  []byte
}

// Tensor copies the entry into a new tensor from a.
func (e SafetensorsEntry) Tensor(a *memory.Allocator) (*Tensor, error) {
	t, err := New(a, e.DType, e.Shape...)
	if err != nil {
		return nil, err
	}
	copy(t.Raw(), e.Data)
	return t, nil
}

// WriteSafetensors writes tensors (by name, in sorted order) and meta, with
// a SHA-256 of the data added as meta["sha256"], to w in the safetensors
// format.
func WriteSafetensors(w io.Writer, tensors map[string]*Tensor, meta map[string]string) error {
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

// ParseSafetensors parses a whole safetensors file, checking every offset
// and the checksum, and returns its entries (aliasing file) and metadata.
// It never panics on malformed input.
func ParseSafetensors(file []byte) (map[string]SafetensorsEntry, map[string]string, error) {
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
	out := map[string]SafetensorsEntry{}
	for name, r := range raw {
		var e stEntry
		if err := json.Unmarshal(r, &e); err != nil {
			return nil, nil, fmt.Errorf("corrupt header: tensor %q: %v", name, err)
		}
		var dt DType
		for d, s := range stDTypes {
			if s == e.DType {
				dt = d
			}
		}
		if dt == Invalid {
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
		out[name] = SafetensorsEntry{DType: dt, Shape: e.Shape, Data: data[b:end]}
	}
	return out, meta, nil
}
