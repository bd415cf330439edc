package tensor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/gopir/gopir/memory"
)

// .npy layout (NEP 1): magic, version, header length, a Python dict padded
// with spaces and ended by '\n' so that the data starts 64-byte aligned,
// then the raw elements.
const (
	npyMagic      = "\x93NUMPY"
	npyAlign      = 64
	npyMaxHeader  = 1 << 20 // refuse absurd header lengths before allocating
	npyGrowDigits = 21      // numpy's spare room for the first dimension to grow
)

var npyDescr = map[DType]string{F32: "<f4", F64: "<f8", I32: "<i4", I64: "<i8", Bool: "|b1"}

// nativeLittle is the host byte order; the typed views are native, .npy
// files as written here are little-endian.
var nativeLittle = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// npyDType maps a descr such as "<f4" to a dtype and whether the file's
// byte order is little-endian.
func npyDType(descr string) (DType, bool, error) {
	if len(descr) >= 2 && strings.IndexByte("<>|", descr[0]) >= 0 {
		order, code := descr[0], descr[1:]
		for dt, d := range npyDescr {
			if d[1:] != code {
				continue
			}
			if order == '|' && dt.Size() > 1 {
				break // "|f4" has no byte order: not valid numpy
			}
			return dt, order != '>', nil
		}
	}
	return Invalid, false, fmt.Errorf("npy: unsupported dtype %q (gopir reads <f4, <f8, <i4, <i8 and |b1, either byte order)", descr)
}

// NpyHeader is what a .npy file says of its array before the data: the
// dtype and shape. Checking it before ReadData lets a caller refuse a file
// that does not fit (a wrong dtype, a shape its input cannot take) before
// a byte is allocated.
type NpyHeader struct {
	DType  DType
	Shape  []int
	little bool // the data's byte order
}

// DataBytes is the size of the data the header announces, or an error if
// the shape cannot be addressed.
func (h NpyHeader) DataBytes() (int64, error) {
	_, n, err := numElems(h.DType, h.Shape)
	if err != nil {
		return 0, fmt.Errorf("npy: %w", err)
	}
	return n, nil
}

// ReadNpy reads one .npy array into a new tensor from a (refcount 1). It
// reads exactly the header and the data, so several arrays may follow one
// another in r. Allocator errors are returned as is.
func ReadNpy(r io.Reader, a *memory.Allocator) (*Tensor, error) {
	h, err := ReadNpyHeader(r)
	if err != nil {
		return nil, err
	}
	return h.ReadData(r, a)
}

// ReadNpyHeader reads the preamble and header of a .npy array from r,
// leaving r at the start of the data.
func ReadNpyHeader(r io.Reader) (NpyHeader, error) {
	var pre [12]byte
	if n, err := io.ReadFull(r, pre[:8]); err != nil {
		return NpyHeader{}, truncated(err, "npy: truncated file: %d of 8 preamble bytes", n)
	}
	if string(pre[:6]) != npyMagic {
		return NpyHeader{}, fmt.Errorf("npy: not a .npy file: bad magic %q", pre[:6])
	}
	var hlen int
	switch major, minor := pre[6], pre[7]; major {
	case 1:
		if n, err := io.ReadFull(r, pre[8:10]); err != nil {
			return NpyHeader{}, truncated(err, "npy: truncated file: %d of 2 header-length bytes", n)
		}
		hlen = int(binary.LittleEndian.Uint16(pre[8:10]))
	case 2, 3:
		if n, err := io.ReadFull(r, pre[8:12]); err != nil {
			return NpyHeader{}, truncated(err, "npy: truncated file: %d of 4 header-length bytes", n)
		}
		hlen = int(binary.LittleEndian.Uint32(pre[8:12]))
	default:
		return NpyHeader{}, fmt.Errorf("npy: unsupported format version %d.%d", major, minor)
	}
	if hlen > npyMaxHeader {
		return NpyHeader{}, fmt.Errorf("npy: header length %d exceeds %d bytes", hlen, npyMaxHeader)
	}
	hdr := make([]byte, hlen)
	if n, err := io.ReadFull(r, hdr); err != nil {
		return NpyHeader{}, truncated(err, "npy: truncated header: %d of %d bytes", n, hlen)
	}
	ph, err := parseNpyHeader(string(hdr))
	if err != nil {
		return NpyHeader{}, err
	}
	dt, little, err := npyDType(ph.descr)
	if err != nil {
		return NpyHeader{}, err
	}
	if ph.fortran && !sameInBothOrders(ph.shape) {
		return NpyHeader{}, fmt.Errorf("npy: Fortran-order (column-major) array of shape %v is not supported; save it with numpy.ascontiguousarray", ph.shape)
	}
	h := NpyHeader{DType: dt, Shape: ph.shape, little: little}
	if _, err := h.DataBytes(); err != nil {
		return NpyHeader{}, err
	}
	return h, nil
}

// ReadData reads the array's data from r, which ReadNpyHeader left at its
// start, into a new tensor from a. When r can tell how many bytes it has
// left (a file, a bytes or strings reader), a header that promises more
// data than there is fails before anything is allocated.
func (h NpyHeader) ReadData(r io.Reader, a *memory.Allocator) (*Tensor, error) {
	need, err := h.DataBytes()
	if err != nil {
		return nil, err
	}
	if left, ok := remaining(r); ok && left < need {
		return nil, fmt.Errorf("npy: truncated data: %s needs %d bytes, got %d: %w",
			typeString(h.DType, h.Shape), need, left, io.ErrUnexpectedEOF)
	}
	t, err := New(a, h.DType, h.Shape...)
	if err != nil {
		return nil, err
	}
	raw := t.Raw()
	if n, err := io.ReadFull(r, raw); err != nil {
		t.Release()
		return nil, truncated(err, "npy: truncated data: %s needs %d bytes, got %d", t.Type(), len(raw), n)
	}
	if h.DType == Bool {
		for i, v := range raw { // numpy reads any nonzero byte as True
			if v > 1 {
				raw[i] = 1
			}
		}
	}
	if h.little != nativeLittle {
		swapBytes(raw, h.DType.Size())
	}
	return t, nil
}

// remaining is how many bytes r has left to read, when it can say.
func remaining(r io.Reader) (int64, bool) {
	switch r := r.(type) {
	case interface{ Len() int }: // bytes.Reader, strings.Reader, bytes.Buffer
		return int64(r.Len()), true
	case io.Seeker:
		cur, err := r.Seek(0, io.SeekCurrent)
		if err != nil {
			return 0, false
		}
		end, err := r.Seek(0, io.SeekEnd)
		if err != nil {
			return 0, false
		}
		if _, err := r.Seek(cur, io.SeekStart); err != nil {
			return 0, false
		}
		return end - cur, true
	}
	return 0, false
}

// truncated wraps a short read: io.ErrUnexpectedEOF when the reader ran
// dry, the reader's own error otherwise.
func truncated(err error, format string, args ...any) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}

// sameInBothOrders reports whether row- and column-major layouts coincide:
// true when at most one dimension exceeds 1.
func sameInBothOrders(shape []int) bool {
	big := 0
	for _, d := range shape {
		if d == 0 {
			return true
		}
		if d > 1 {
			big++
		}
	}
	return big <= 1
}

func swapBytes(b []byte, size int) {
	if size <= 1 {
		return
	}
	for i := 0; i+size <= len(b); i += size {
		slices.Reverse(b[i : i+size])
	}
}

// WriteNpy writes t in .npy format 1.0 (2.0 if the header would not fit),
// laid out byte for byte as numpy.save does: little-endian, C order, the
// data 64-byte aligned.
func WriteNpy(w io.Writer, t *Tensor) error {
	var dict strings.Builder
	fmt.Fprintf(&dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", npyDescr[t.dt], npyShape(t.shape))
	if len(t.shape) > 0 {
		dict.WriteString(strings.Repeat(" ", max(0, npyGrowDigits-len(strconv.Itoa(t.shape[0])))))
	}
	var header []byte
	for _, v := range []struct {
		major byte
		pre   int
		max   int
	}{{1, 10, 1<<16 - 1}, {2, 12, 1<<32 - 1}} {
		hlen := dict.Len() + 1
		hlen += npyAlign - (v.pre+hlen)%npyAlign // numpy pads 1..64 spaces
		if hlen > v.max {
			continue
		}
		header = append([]byte(npyMagic), v.major, 0)
		if v.major == 1 {
			header = binary.LittleEndian.AppendUint16(header, uint16(hlen))
		} else {
			header = binary.LittleEndian.AppendUint32(header, uint32(hlen))
		}
		header = append(header, dict.String()...)
		for len(header) < v.pre+hlen-1 {
			header = append(header, ' ')
		}
		header = append(header, '\n')
		break
	}
	if _, err := w.Write(header); err != nil {
		return fmt.Errorf("npy: writing header: %w", err)
	}
	raw := t.Raw()
	if !nativeLittle && t.dt.Size() > 1 {
		raw = slices.Clone(raw)
		swapBytes(raw, t.dt.Size())
	}
	if _, err := w.Write(raw); err != nil {
		return fmt.Errorf("npy: writing %s data: %w", t.Type(), err)
	}
	return nil
}

// npyShape prints a shape as a Python tuple: (), (3,), (2, 3).
func npyShape(shape []int) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = strconv.Itoa(d)
	}
	if len(shape) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
