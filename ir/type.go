package ir

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Dynamic marks a dimension whose size is known only at run time; it prints
// as '?'.
const Dynamic = -1

// Type is a tensor type: an element dtype and a shape whose dims are sizes
// or Dynamic. A rank-0 type is a scalar. Types are values; treat Dims as
// read-only.
//
// A type with Elem set is a stack type, stack<T>: a last-in first-out list
// of values of type *Elem, which reverse-mode differentiation uses to keep
// what a while loop's backward needs from each iteration. DType and Dims of
// a stack type are unused.
type Type struct {
	DType DType
	Dims  []int
	Elem  *Type
}

// StackOf returns the type of a stack of elem values.
func StackOf(elem Type) Type { return Type{Elem: &elem} }

// IsStack reports whether t is a stack type.
func (t Type) IsStack() bool { return t.Elem != nil }

// TensorOf returns the tensor type with the given dtype and dims.
func TensorOf(dt DType, dims ...int) Type {
	return Type{DType: dt, Dims: append([]int(nil), dims...)}
}

// Scalar returns the rank-0 type of dt.
func Scalar(dt DType) Type { return Type{DType: dt} }

// Rank is the number of dims.
func (t Type) Rank() int { return len(t.Dims) }

// IsValid reports whether t has a known dtype and well-formed dims.
func (t Type) IsValid() bool { return t.Check() == nil }

// Check says what is wrong with t, or returns nil if it is valid: a known
// dtype and dims that are sizes or Dynamic and can be addressed.
func (t Type) Check() error {
	if t.Elem != nil {
		return t.Elem.Check()
	}
	if t.DType == InvalidDType || t.DType.Size() == 0 {
		return fmt.Errorf("invalid dtype %s", t.DType)
	}
	return CheckDims(t.DType, t.Dims)
}

// CheckDims reports whether dims are sizes or Dynamic and a tensor of
// dtype dt and those dims (dynamic ones left out) could be addressed: the
// product of the non-zero dims, in bytes, fits in an int64 whatever the
// order of the dims.
func CheckDims(dt DType, dims []int) error {
	n := int64(max(dt.Size(), 1))
	for _, d := range dims {
		switch {
		case d == Dynamic || d == 0:
		case d < 0:
			return fmt.Errorf("shape %s: dims must be sizes >= 0 or ? (dynamic)", dimsText(dims))
		case n > math.MaxInt64/int64(d):
			return fmt.Errorf("shape %s has too many elements to address", dimsText(dims))
		default:
			n *= int64(d)
		}
	}
	return nil
}

func dimsText(dims []int) string {
	parts := make([]string, len(dims))
	for i, d := range dims {
		parts[i] = strconv.Itoa(d)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// IsStatic reports whether every dim is known; false for stacks.
func (t Type) IsStatic() bool {
	if t.Elem != nil {
		return false
	}
	for _, d := range t.Dims {
		if d == Dynamic {
			return false
		}
	}
	return true
}

// NumElements is the product of the dims, or -1 if any is dynamic or t is
// a stack.
func (t Type) NumElements() int {
	if t.Elem != nil {
		return -1
	}
	n := 1
	for _, d := range t.Dims {
		if d == Dynamic {
			return -1
		}
		n *= d
	}
	return n
}

// Equal reports whether t and u are the same type.
func (t Type) Equal(u Type) bool {
	if t.Elem != nil || u.Elem != nil {
		return t.Elem != nil && u.Elem != nil && t.Elem.Equal(*u.Elem)
	}
	if t.DType != u.DType || len(t.Dims) != len(u.Dims) {
		return false
	}
	for i := range t.Dims {
		if t.Dims[i] != u.Dims[i] {
			return false
		}
	}
	return true
}

// Refines reports whether every tensor of type t also has type u: same dtype
// and rank, and each dim of u is either Dynamic or equal to t's.
func (t Type) Refines(u Type) bool {
	if t.Elem != nil || u.Elem != nil {
		return t.Elem != nil && u.Elem != nil && t.Elem.Refines(*u.Elem)
	}
	if t.DType != u.DType || len(t.Dims) != len(u.Dims) {
		return false
	}
	for i := range t.Dims {
		if u.Dims[i] != Dynamic && u.Dims[i] != t.Dims[i] {
			return false
		}
	}
	return true
}

// Join returns the most specific type that both t and u refine, and false
// if they differ in dtype or rank.
func Join(t, u Type) (Type, bool) {
	if t.Elem != nil || u.Elem != nil {
		if t.Elem == nil || u.Elem == nil {
			return Type{}, false
		}
		e, ok := Join(*t.Elem, *u.Elem)
		return StackOf(e), ok
	}
	if t.DType != u.DType || len(t.Dims) != len(u.Dims) {
		return Type{}, false
	}
	j := TensorOf(t.DType, t.Dims...)
	for i, d := range u.Dims {
		if j.Dims[i] != d {
			j.Dims[i] = Dynamic
		}
	}
	return j, true
}

// String writes the type in the text format: tensor<2x?xf32>, tensor<i1>,
// stack<tensor<4xf32>>.
func (t Type) String() string {
	if t.Elem != nil {
		return "stack<" + t.Elem.String() + ">"
	}
	var sb strings.Builder
	sb.WriteString("tensor<")
	for _, d := range t.Dims {
		if d == Dynamic {
			sb.WriteByte('?')
		} else {
			sb.WriteString(strconv.Itoa(d))
		}
		sb.WriteByte('x')
	}
	sb.WriteString(t.DType.String())
	sb.WriteByte('>')
	return sb.String()
}
