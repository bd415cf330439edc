package onnx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/onnx/onnxpb"
	"github.com/gopir/gopir/tensor"
)

// field is one of TensorProto's typed data fields.
type field uint8

const (
	floatData field = iota + 1
	doubleData
	int32Data
	int64Data
	uint64Data
	stringData
)

var fieldNames = [...]string{floatData: "float_data", doubleData: "double_data", int32Data: "int32_data",
	int64Data: "int64_data", uint64Data: "uint64_data", stringData: "string_data"}

func (f field) String() string { return fieldNames[f] }

// count is the number of values tp holds in field f.
func (f field) count(tp *onnxpb.TensorProto) int {
	switch f {
	case floatData:
		return len(tp.FloatData)
	case doubleData:
		return len(tp.DoubleData)
	case int32Data:
		return len(tp.Int32Data)
	case int64Data:
		return len(tp.Int64Data)
	case uint64Data:
		return len(tp.Uint64Data)
	case stringData:
		return len(tp.StringData)
	}
	return 0
}

// elemType says how tensors of one ONNX data type become gopir tensors:
// the gopir dtype, whose Size is also the width of one element in raw_data
// and external data, and the typed field that holds the elements otherwise
// (ONNX's TensorProto documentation says which).
type elemType struct {
	dtype tensor.DType
	field field
}

// elemTypes lists the ONNX data types gopir reads. Supporting another one
// (once package tensor has a dtype for it) is one entry here, e.g.
// {tensor.I8, int32Data} for INT8; TestElemTypesConsistent checks that
// the dtype's width suits the field.
var elemTypes = map[onnxpb.TensorProto_DataType]elemType{
	onnxpb.TensorProto_FLOAT:  {tensor.F32, floatData},
	onnxpb.TensorProto_DOUBLE: {tensor.F64, doubleData},
	onnxpb.TensorProto_INT32:  {tensor.I32, int32Data},
	onnxpb.TensorProto_INT64:  {tensor.I64, int64Data},
	onnxpb.TensorProto_BOOL:   {tensor.Bool, int32Data},
}

// supportedTypes lists elemTypes for error messages, in ONNX's order:
// "FLOAT (f32), INT32 (i32), ...".
var supportedTypes = func() string {
	var dts []onnxpb.TensorProto_DataType
	for dt := range elemTypes {
		dts = append(dts, dt)
	}
	slices.Sort(dts)
	var names []string
	for _, dt := range dts {
		names = append(names, fmt.Sprintf("%v (%v)", dt, elemTypes[dt].dtype))
	}
	return strings.Join(names, ", ")
}()

// lookupType maps TensorProto.data_type to an elemType.
func lookupType(code int32) (elemType, error) {
	if et, ok := elemTypes[onnxpb.TensorProto_DataType(code)]; ok {
		return et, nil
	}
	if code == int32(onnxpb.TensorProto_UNDEFINED) {
		return elemType{}, errors.New("data_type is missing or UNDEFINED")
	}
	if code < 0 {
		return elemType{}, fmt.Errorf("invalid data_type %d", code)
	}
	name, known := onnxpb.TensorProto_DataType_name[code]
	if !known {
		name = strconv.Itoa(int(code)) + " (newer than ONNX 1.12, whose schema gopir uses)"
	}
	return elemType{}, &UnsupportedError{What: "data type " + name, Reason: "gopir reads " + supportedTypes}
}

// TensorFromProto converts tp to a new tensor from alloc (refcount 1),
// which the caller releases. dir is the directory that external data
// locations are relative to (the model's directory); external data is
// refused when dir is empty.
//
// The elements come from raw_data (little-endian), from the typed field
// that ONNX assigns to the data type (float_data, double_data, int32_data
// for BOOL, int64_data, ...) or, when data_location is EXTERNAL, from the
// file named by external_data's "location", at "offset", "length" bytes
// ("checksum" is not verified). The location must be a relative path that
// stays inside dir (symbolic links included).
//
// The element count from dims must match the data present exactly; it is
// checked before anything is allocated. Data types gopir has no dtype for
// and segmented tensors are *UnsupportedError. On any error nothing stays
// allocated. Allocator errors are wrapped, so errors.As finds
// *memory.ResourceExhausted.
func TensorFromProto(tp *onnxpb.TensorProto, dir string, alloc *memory.Allocator) (*tensor.Tensor, error) {
	t, err := tensorFromProto(tp, dir, alloc)
	if err != nil {
		return nil, fmt.Errorf("onnx: %s: %w", describe(tp), err)
	}
	return t, nil
}

// describe names a tensor in errors.
func describe(tp *onnxpb.TensorProto) string {
	if name := tp.GetName(); name != "" {
		return fmt.Sprintf("tensor %q", name)
	}
	return "tensor"
}

func tensorFromProto(tp *onnxpb.TensorProto, dir string, alloc *memory.Allocator) (*tensor.Tensor, error) {
	if tp == nil {
		return nil, errors.New("nil TensorProto")
	}
	if alloc == nil {
		return nil, errors.New("nil allocator")
	}
	if s := tp.Segment; s != nil {
		return nil, &UnsupportedError{
			What: "segmented tensor",
			Reason: fmt.Sprintf("this proto holds elements [%d, %d) of a larger tensor; gopir reads whole tensors only "+
				"(a SequenceProto or OptionalProto read as a TensorProto looks like this too)", s.GetBegin(), s.GetEnd()),
		}
	}
	et, err := lookupType(tp.GetDataType())
	if err != nil {
		return nil, err
	}
	shape, n, err := shapeOf(tp.Dims)
	if err != nil {
		return nil, err
	}
	size := int64(et.dtype.Size())
	if n > math.MaxInt64/size {
		return nil, fmt.Errorf("dims %s: %d elements of %d bytes overflow int64", fmtDims(tp.Dims), n, size)
	}
	need := n * size
	switch loc := tp.GetDataLocation(); loc {
	case onnxpb.TensorProto_DEFAULT:
		return inlineTensor(tp, et, shape, n, need, alloc)
	case onnxpb.TensorProto_EXTERNAL:
		return externalTensor(tp, et, shape, need, dir, alloc)
	default:
		return nil, fmt.Errorf("invalid data_location %d", loc)
	}
}

// shapeOf checks dims and returns them as a shape with its element count.
func shapeOf(dims []int64) ([]int, int64, error) {
	shape := make([]int, len(dims))
	n := int64(1)
	for i, d := range dims {
		if d < 0 {
			return nil, 0, fmt.Errorf("negative dimension %d at axis %d of dims %s", d, i, fmtDims(dims))
		}
		if d > math.MaxInt || (d != 0 && n > math.MaxInt/d) {
			return nil, 0, fmt.Errorf("dims %s: element count overflows", fmtDims(dims))
		}
		n *= d
		shape[i] = int(d)
	}
	return shape, n, nil
}

// fmtDims prints dims, eliding the middle of very long lists.
func fmtDims(dims []int64) string {
	const most = 16
	if len(dims) <= most {
		return fmt.Sprint(dims)
	}
	return fmt.Sprintf("%v ... %v (rank %d)", dims[:most/2], dims[len(dims)-most/2:], len(dims))
}

// inlineFields checks that only want (and raw_data) of tp's data fields
// may be set, and returns the number of values in want.
func inlineFields(tp *onnxpb.TensorProto, et elemType) (int, error) {
	for f := floatData; f <= stringData; f++ {
		if f != et.field && f.count(tp) > 0 {
			return 0, fmt.Errorf("%v holds %d values, but data type %v keeps its elements in %v or raw_data",
				f, f.count(tp), onnxpb.TensorProto_DataType(tp.GetDataType()), et.field)
		}
	}
	return et.field.count(tp), nil
}

func inlineTensor(tp *onnxpb.TensorProto, et elemType, shape []int, n, need int64, alloc *memory.Allocator) (*tensor.Tensor, error) {
	typed, err := inlineFields(tp, et)
	if err != nil {
		return nil, err
	}
	raw := tp.RawData
	switch {
	case raw != nil && typed > 0:
		return nil, fmt.Errorf("both raw_data (%d bytes) and %v (%d values) are set", len(raw), et.field, typed)
	case raw != nil:
		if int64(len(raw)) != need {
			return nil, fmt.Errorf("raw_data has %d bytes, but dims %s of %v need %d", len(raw), fmtDims(tp.Dims), et.dtype, need)
		}
	case int64(typed) != n:
		if typed == 0 {
			return nil, fmt.Errorf("no data, but dims %s need %d elements", fmtDims(tp.Dims), n)
		}
		return nil, fmt.Errorf("%v has %d values, but dims %s need %d", et.field, typed, fmtDims(tp.Dims), n)
	}
	t, err := tensor.New(alloc, et.dtype, shape...)
	if err != nil {
		return nil, err
	}
	if raw != nil {
		copy(t.Raw(), raw)
		fromLittleEndian(t.Raw(), et.dtype)
		return t, nil
	}
	if err := fillTyped(t.Raw(), tp, et); err != nil {
		t.Release()
		return nil, err
	}
	return t, nil
}

// nativeLittle reports whether this machine is little-endian, as raw_data
// is.
var nativeLittle = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// fromLittleEndian turns raw_data's little-endian bytes into the native
// layout the tensor's typed views read, and makes booleans 0 or 1.
func fromLittleEndian(b []byte, dt tensor.DType) {
	if size := dt.Size(); !nativeLittle && size > 1 {
		for i := 0; i+size <= len(b); i += size {
			slices.Reverse(b[i : i+size])
		}
	}
	if dt == tensor.Bool {
		for i, v := range b {
			if v > 1 {
				b[i] = 1
			}
		}
	}
}

// fillTyped writes the values of et's typed field into dst, one element
// of et.dtype.Size() bytes each. Booleans are 0 or 1 (any nonzero value is
// true); narrower integer types must hold values that fit.
func fillTyped(dst []byte, tp *onnxpb.TensorProto, et elemType) error {
	size := et.dtype.Size()
	ne := binary.NativeEndian
	switch et.field {
	case floatData:
		for i, v := range tp.FloatData {
			ne.PutUint32(dst[4*i:], math.Float32bits(v))
		}
	case doubleData:
		for i, v := range tp.DoubleData {
			ne.PutUint64(dst[8*i:], math.Float64bits(v))
		}
	case int32Data:
		for i, v := range tp.Int32Data {
			if et.dtype == tensor.Bool && v != 0 {
				v = 1
			}
			if !putInt(dst[size*i:], int64(v), size) {
				return fmt.Errorf("int32_data[%d] = %d does not fit a %d-byte %v", i, v, size, et.dtype)
			}
		}
	case int64Data:
		for i, v := range tp.Int64Data {
			ne.PutUint64(dst[8*i:], uint64(v))
		}
	case uint64Data:
		for i, v := range tp.Uint64Data {
			if size == 8 {
				ne.PutUint64(dst[8*i:], v)
			} else if v > math.MaxInt64 || !putInt(dst[size*i:], int64(v), size) {
				return fmt.Errorf("uint64_data[%d] = %d does not fit a %d-byte %v", i, v, size, et.dtype)
			}
		}
	default:
		return fmt.Errorf("no typed field for %v", et.dtype)
	}
	return nil
}

// putInt stores v in size bytes, native order, if it fits the signed or
// the unsigned integer of that width.
func putInt(dst []byte, v int64, size int) bool {
	bits := 8 * size
	if size < 8 && (v < -1<<(bits-1) || v > 1<<bits-1) {
		return false
	}
	ne := binary.NativeEndian
	switch size {
	case 1:
		dst[0] = byte(v)
	case 2:
		ne.PutUint16(dst, uint16(v))
	case 4:
		ne.PutUint32(dst, uint32(v))
	case 8:
		ne.PutUint64(dst, uint64(v))
	default:
		return false
	}
	return true
}

// externalRef is a parsed external_data list.
type externalRef struct {
	location string
	offset   int64
	length   int64 // -1: to the end of the file
}

func parseExternal(entries []*onnxpb.StringStringEntryProto) (externalRef, error) {
	ref := externalRef{length: -1}
	seen := map[string]bool{}
	for _, e := range entries {
		k, v := e.GetKey(), e.GetValue()
		if seen[k] {
			return ref, fmt.Errorf("external_data has key %q twice", k)
		}
		seen[k] = true
		switch k {
		case "location":
			ref.location = v
		case "offset", "length":
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil || x < 0 {
				return ref, fmt.Errorf("external_data %s %q is not a non-negative integer", k, v)
			}
			if k == "offset" {
				ref.offset = x
			} else {
				ref.length = x
			}
		}
		// "checksum" (SHA-1 of the file) and unknown keys are ignored.
	}
	if ref.location == "" {
		return ref, errors.New(`data_location is EXTERNAL but external_data has no "location"`)
	}
	return ref, nil
}

// openExternal opens location inside dir, refusing paths that are absolute
// or leave dir, also through symbolic links.
func openExternal(dir, location string) (*os.File, error) {
	if dir == "" {
		return nil, fmt.Errorf("external data %q: no directory to resolve it against", location)
	}
	name := filepath.FromSlash(location)
	if strings.HasPrefix(location, "/") || strings.HasPrefix(location, `\`) || filepath.IsAbs(name) {
		return nil, fmt.Errorf("external data location %q is an absolute path; it must be relative to the model's directory", location)
	}
	if !filepath.IsLocal(name) {
		return nil, fmt.Errorf("external data location %q is outside the model's directory", location)
	}
	f, err := os.OpenInRoot(dir, name)
	if err != nil {
		return nil, fmt.Errorf("external data %q in %s: %w", location, dir, err)
	}
	return f, nil
}

func externalTensor(tp *onnxpb.TensorProto, et elemType, shape []int, need int64, dir string, alloc *memory.Allocator) (*tensor.Tensor, error) {
	if tp.RawData != nil {
		return nil, fmt.Errorf("data_location is EXTERNAL, but raw_data is set too")
	}
	for f := floatData; f <= stringData; f++ {
		if c := f.count(tp); c > 0 {
			return nil, fmt.Errorf("data_location is EXTERNAL, but %v holds %d values too", f, c)
		}
	}
	ref, err := parseExternal(tp.ExternalData)
	if err != nil {
		return nil, err
	}
	f, err := openExternal(dir, ref.location)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("external data: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("external data %q is not a regular file (%v)", ref.location, fi.Mode().Type())
	}
	if ref.offset > fi.Size() {
		return nil, fmt.Errorf("external data %q: offset %d is past its end (%d bytes)", ref.location, ref.offset, fi.Size())
	}
	have := fi.Size() - ref.offset
	if ref.length >= 0 {
		if ref.length > have {
			return nil, fmt.Errorf("external data %q: length %d at offset %d runs past its end (%d bytes)", ref.location, ref.length, ref.offset, fi.Size())
		}
		have = ref.length
	}
	if have != need {
		return nil, fmt.Errorf("external data %q has %d bytes at offset %d, but dims %s of %v need %d",
			ref.location, have, ref.offset, fmtDims(tp.Dims), et.dtype, need)
	}
	t, err := tensor.New(alloc, et.dtype, shape...)
	if err != nil {
		return nil, err
	}
	if _, err := f.ReadAt(t.Raw(), ref.offset); err != nil {
		t.Release()
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // the file shrank since Stat
		}
		return nil, fmt.Errorf("external data %q: %w", ref.location, err)
	}
	fromLittleEndian(t.Raw(), et.dtype)
	return t, nil
}
