package tensor

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unsafe"
)

// Float64At returns element i (row-major) as a float64, for any dtype;
// true is 1. It panics when i is out of range.
func (t *Tensor) Float64At(i int) float64 {
	if i < 0 || i >= t.n {
		panic(fmt.Sprintf("tensor: index %d out of range for %s", i, t.Type()))
	}
	p := unsafe.Pointer(&t.Raw()[i*t.dt.Size()])
	switch t.dt {
	case F32:
		return float64(*(*float32)(p))
	case F64:
		return *(*float64)(p)
	case I32:
		return float64(*(*int32)(p))
	case I64:
		return float64(*(*int64)(p))
	case Bool:
		if *(*byte)(p) != 0 {
			return 1
		}
		return 0
	}
	return math.NaN()
}

// SetFloat64At sets element i (row-major) to v converted to t's dtype:
// rounded for f32, truncated toward zero for integers, v != 0 for i1. It
// panics when i is out of range.
func (t *Tensor) SetFloat64At(i int, v float64) {
	if i < 0 || i >= t.n {
		panic(fmt.Sprintf("tensor: index %d out of range for %s", i, t.Type()))
	}
	p := unsafe.Pointer(&t.Raw()[i*t.dt.Size()])
	switch t.dt {
	case F32:
		*(*float32)(p) = float32(v)
	case F64:
		*(*float64)(p) = v
	case I32:
		*(*int32)(p) = int32(v)
	case I64:
		*(*int64)(p) = int64(v)
	case Bool:
		*(*byte)(p) = 0
		if v != 0 {
			*(*byte)(p) = 1
		}
	}
}

// stringElems is how many elements String shows.
const stringElems = 6

// String is a short description for messages and debugging, e.g.
// "tensor<2x3xf32>[1 2 3 4 5 6]", with at most six elements and "..." for
// the rest. Released storage prints as "[released]" instead of its bytes.
func (t *Tensor) String() string {
	if t.s.Refs() <= 0 {
		return t.Type() + "[released]"
	}
	if t.stack {
		return fmt.Sprintf("stack[%d items]", len(t.s.items))
	}
	var b strings.Builder
	b.WriteString(t.Type())
	b.WriteByte('[')
	for i := range min(t.n, stringElems) {
		if i > 0 {
			b.WriteByte(' ')
		}
		v := t.Float64At(i)
		switch t.dt {
		case Bool:
			b.WriteString(strconv.FormatBool(v != 0))
		case F32:
			b.WriteString(strconv.FormatFloat(v, 'g', -1, 32))
		default:
			b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	if t.n > stringElems {
		b.WriteString(" ...")
	}
	b.WriteByte(']')
	return b.String()
}
