package tensor

import "fmt"

// DType is an element type.
type DType uint8

// The element types; names follow the IR ("f32", ..., "i1").
const (
	Invalid DType = iota
	F32
	F64
	I32
	I64
	Bool // i1, one byte per element
)

var dtypeNames = [...]string{Invalid: "invalid", F32: "f32", F64: "f64", I32: "i32", I64: "i64", Bool: "i1"}

// String returns the IR name: "f32", "f64", "i32", "i64" or "i1".
func (d DType) String() string {
	if int(d) < len(dtypeNames) {
		return dtypeNames[d]
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// ParseDType parses an IR dtype name.
func ParseDType(s string) (DType, error) {
	for d := F32; d <= Bool; d++ {
		if dtypeNames[d] == s {
			return d, nil
		}
	}
	return Invalid, fmt.Errorf("tensor: unknown dtype %q (want f32, f64, i32, i64 or i1)", s)
}

// Size is the size of one element in bytes; 0 for Invalid.
func (d DType) Size() int {
	switch d {
	case F32, I32:
		return 4
	case F64, I64:
		return 8
	case Bool:
		return 1
	}
	return 0
}

func (d DType) valid() bool { return d >= F32 && d <= Bool }
