package ir

import "fmt"

// DType is an element type. The numbering matches package tensor's DType, so
// converting between the two is a plain conversion.
type DType uint8

const (
	InvalidDType DType = iota
	F32
	F64
	I32
	I64
	I1 // boolean
)

var dtypeNames = [...]string{InvalidDType: "invalid", F32: "f32", F64: "f64", I32: "i32", I64: "i64", I1: "i1"}

func (d DType) String() string {
	if int(d) < len(dtypeNames) {
		return dtypeNames[d]
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// ParseDType returns the dtype spelled s ("f32", "i64", ...).
func ParseDType(s string) (DType, bool) {
	for d, name := range dtypeNames {
		if d != int(InvalidDType) && name == s {
			return DType(d), true
		}
	}
	return InvalidDType, false
}

// IsFloat reports whether d is a floating-point dtype.
func (d DType) IsFloat() bool { return d == F32 || d == F64 }

// IsInt reports whether d is a (non-boolean) integer dtype.
func (d DType) IsInt() bool { return d == I32 || d == I64 }

// Size is the number of bytes of one element.
func (d DType) Size() int {
	switch d {
	case F32, I32:
		return 4
	case F64, I64:
		return 8
	case I1:
		return 1
	}
	return 0
}
