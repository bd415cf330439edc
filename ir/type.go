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
// A type with Elem set is a stack type, stack<T>: a list of values of
// type *Elem, which reverse-mode differentiation uses as a last-in
// first-out stack to keep what a while loop's backward needs from each
// iteration, and which holds ONNX's sequences. DType and Dims of a stack
// type are unused.
//
// An unranked type, tensor<*xf32>, knows its dtype but not its rank: the
// items of a sequence may have different ranks. Only ops that handle
// stacks (OpSpec.Stacks) take unranked operands.
type Type struct {
	DType    DType
	Dims     []int
	Elem     *Type
	Unranked bool // the rank is unknown; Dims is nil
}

// UnrankedOf returns the type of tensors of dtype dt and any rank.
func UnrankedOf(dt DType) Type { return Type{DType: dt, Unranked: true} }

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

// Rank is the number of dims, -1 for an unranked type.
func (t Type) Rank() int {
	if t.Unranked {
		return -1
	}
	return len(t.Dims)
}

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
	if t.Unranked && t.Dims != nil {
		return fmt.Errorf("an unranked type has no dims")
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

// IsStatic reports whether every dim is known; false for stacks and
// unranked types.
func (t Type) IsStatic() bool {
	if t.Elem != nil || t.Unranked {
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
// a stack or unranked.
func (t Type) NumElements() int {
	if t.Elem != nil || t.Unranked {
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
	if t.DType != u.DType || t.Unranked != u.Unranked || len(t.Dims) != len(u.Dims) {
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
// and rank, and each dim of u is either Dynamic or equal to t's; any type
// of u's dtype refines an unranked u.
func (t Type) Refines(u Type) bool {
	if t.Elem != nil || u.Elem != nil {
		return t.Elem != nil && u.Elem != nil && t.Elem.Refines(*u.Elem)
	}
	if u.Unranked {
		return t.DType == u.DType
	}
	if t.DType != u.DType || t.Unranked || len(t.Dims) != len(u.Dims) {
		return false
	}
	for i := range t.Dims {
		if u.Dims[i] != Dynamic && u.Dims[i] != t.Dims[i] {
			return false
		}
	}
	return true
}

// Join returns the most specific type that both t and u refine: for
// tensors of one dtype and rank, dims that differ become Dynamic. It
// reports false when the dtypes or ranks differ or only one is a stack.
// The items of stacks join with JoinAnyRank: a sequence may hold tensors
// of different ranks.
func Join(t, u Type) (Type, bool) {
	if t.Unranked != u.Unranked || (!t.IsStack() && len(t.Dims) != len(u.Dims)) {
		return Type{}, false
	}
	return JoinAnyRank(t, u)
}

// JoinAnyRank is Join, except that tensors of one dtype and different
// ranks join to the unranked type.
func JoinAnyRank(t, u Type) (Type, bool) {
	if t.Elem != nil || u.Elem != nil {
		if t.Elem == nil || u.Elem == nil {
			return Type{}, false
		}
		e, ok := JoinAnyRank(*t.Elem, *u.Elem)
		return StackOf(e), ok
	}
	if t.DType != u.DType {
		return Type{}, false
	}
	if t.Unranked || u.Unranked || len(t.Dims) != len(u.Dims) {
		return UnrankedOf(t.DType), true
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
	if t.Unranked {
		sb.WriteString("*x")
	}
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
