package ir

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Dense is a constant tensor used as an attribute value: a static tensor
// type and its elements in row-major order, stored as the little-endian
// bytes of the type's dtype (one byte, 0 or 1, per i1). It prints as the
// type followed by the flat list of elements:
//
//	value:tensor<2x2xf32>[1.0, 2.0, 3.5, -inf]
//
// Floats print in the shortest form that reads back to the same value of
// their dtype, so print → parse is exact.
type Dense struct {
	Type Type
	raw  []byte
}

func (Dense) isAttr() {}

// NewDense returns the constant of type t whose elements are raw, the
// little-endian bytes of t's dtype. It copies raw.
func NewDense(t Type, raw []byte) (Dense, error) {
	if err := t.Check(); err != nil {
		return Dense{}, err
	}
	if t.IsStack() || !t.IsStatic() {
		return Dense{}, fmt.Errorf("a constant needs a static tensor type, not %s", t)
	}
	if want := t.NumElements() * t.DType.Size(); len(raw) != want {
		return Dense{}, fmt.Errorf("a constant of type %s needs %d bytes, got %d", t, want, len(raw))
	}
	if t.DType == I1 {
		for i, b := range raw {
			if b > 1 {
				return Dense{}, fmt.Errorf("i1 element %d is %d, not 0 or 1", i, b)
			}
		}
	}
	return Dense{Type: t, raw: append([]byte(nil), raw...)}, nil
}

// DenseOf returns the constant of type t with the given elements, which
// are converted to t's dtype; it fails when one does not fit exactly.
func DenseOf(t Type, elems []float64) (Dense, error) {
	if n := t.NumElements(); n != len(elems) {
		return Dense{}, fmt.Errorf("a constant of type %s needs %d elements, got %d", t, n, len(elems))
	}
	raw := make([]byte, len(elems)*t.DType.Size())
	for i, v := range elems {
		if err := putElem(raw, t.DType, i, v, int64(v), false); err != nil {
			return Dense{}, fmt.Errorf("element %d: %w", i, err)
		}
	}
	return NewDense(t, raw)
}

// Raw returns the constant's bytes. Do not modify them.
func (d Dense) Raw() []byte { return d.raw }

// Len is the number of elements.
func (d Dense) Len() int { return len(d.raw) / max(1, d.Type.DType.Size()) }

// Float64At returns element i as a float64 (exact for every dtype but
// i64 beyond 2^53).
func (d Dense) Float64At(i int) float64 {
	switch d.Type.DType {
	case F32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(d.raw[4*i:])))
	case F64:
		return math.Float64frombits(binary.LittleEndian.Uint64(d.raw[8*i:]))
	}
	return float64(d.Int64At(i))
}

// Int64At returns element i of an integer or i1 constant.
func (d Dense) Int64At(i int) int64 {
	switch d.Type.DType {
	case I32:
		return int64(int32(binary.LittleEndian.Uint32(d.raw[4*i:])))
	case I64:
		return int64(binary.LittleEndian.Uint64(d.raw[8*i:]))
	case I1:
		return int64(d.raw[i])
	}
	return int64(d.Float64At(i))
}

func (d Dense) String() string {
	var sb strings.Builder
	sb.WriteString(d.Type.String())
	sb.WriteByte('[')
	for i := range d.Len() {
		if i > 0 {
			sb.WriteString(", ")
		}
		switch d.Type.DType {
		case F32:
			sb.WriteString(floatText(d.Float64At(i), 32))
		case F64:
			sb.WriteString(floatText(d.Float64At(i), 64))
		case I1:
			sb.WriteString(strconv.FormatBool(d.raw[i] != 0))
		default:
			sb.WriteString(strconv.FormatInt(d.Int64At(i), 10))
		}
	}
	sb.WriteByte(']')
	return sb.String()
}

// floatText is Float's spelling with the shortest digits of the given bit
// size.
func floatText(f float64, bits int) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return Float(f).String()
	}
	s := strconv.FormatFloat(f, 'g', -1, bits)
	if !strings.ContainsAny(s, ".en") {
		s += ".0"
	}
	return s
}

// putElem stores element i of dtype dt into raw: from f for floats, from n
// (exact) for integers when isInt, else from f, which must then be an
// integer the dtype holds.
func putElem(raw []byte, dt DType, i int, f float64, n int64, isInt bool) error {
	if !isInt && (dt.IsInt() || dt == I1) {
		if f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
			return fmt.Errorf("%v is not an integer", f)
		}
		n = int64(f)
	}
	switch dt {
	case F32:
		if isInt {
			f = float64(n)
		}
		if !math.IsInf(f, 0) && math.IsInf(float64(float32(f)), 0) {
			return fmt.Errorf("%v overflows f32", f)
		}
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(float32(f)))
	case F64:
		if isInt {
			f = float64(n)
		}
		binary.LittleEndian.PutUint64(raw[8*i:], math.Float64bits(f))
	case I32:
		if n < math.MinInt32 || n > math.MaxInt32 {
			return fmt.Errorf("%d overflows i32", n)
		}
		binary.LittleEndian.PutUint32(raw[4*i:], uint32(int32(n)))
	case I64:
		binary.LittleEndian.PutUint64(raw[8*i:], uint64(n))
	case I1:
		if n != 0 && n != 1 {
			return fmt.Errorf("%d is not a bool", n)
		}
		raw[i] = byte(n)
	default:
		return fmt.Errorf("no constants of dtype %s", dt)
	}
	return nil
}

// Dense returns the constant attribute name.
func (as Attrs) Dense(name string) (Dense, error) {
	a, _ := as.Get(name)
	if v, ok := a.(Dense); ok {
		return v, nil
	}
	return Dense{}, &AttrError{Name: name, Want: "a constant tensor", Got: a}
}
