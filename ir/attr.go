package ir

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Attr is an attribute value: Int, Float, Str, Bool, DType, or a List of
// those.
type Attr interface {
	isAttr()
	// String writes the value in the text format.
	String() string
}

type (
	Int   int64
	Float float64
	Str   string
	Bool  bool
	List  []Attr
)

func (Int) isAttr()   {}
func (Float) isAttr() {}
func (Str) isAttr()   {}
func (Bool) isAttr()  {}
func (DType) isAttr() {}
func (List) isAttr()  {}

// TypeAttr is a type used as an attribute value, as in
// {elem:tensor<?x4xf32>}.
type TypeAttr struct{ Type Type }

func (TypeAttr) isAttr() {}

func (a TypeAttr) String() string { return a.Type.String() }

func (a Int) String() string { return strconv.FormatInt(int64(a), 10) }

// String keeps a '.' or an exponent in every finite float so that the parser
// reads it back as a Float, not an Int.
func (a Float) String() string {
	f := float64(a)
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".en") {
		s += ".0"
	}
	return s
}

func (a Str) String() string  { return strconv.Quote(string(a)) }
func (a Bool) String() string { return strconv.FormatBool(bool(a)) }

func (a List) String() string {
	var sb strings.Builder
	sb.WriteByte('[')
	for i, e := range a {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(attrString(e))
	}
	sb.WriteByte(']')
	return sb.String()
}

// attrString is a.String(), or "<nil>" for a nil Attr, which only a
// malformed dictionary built in Go can hold (Verify rejects it).
func attrString(a Attr) string {
	if a == nil {
		return "<nil>"
	}
	return a.String()
}

// NamedAttr is one entry of an attribute dictionary.
type NamedAttr struct {
	Name  string
	Value Attr
}

// Attrs is an attribute dictionary. It keeps the order in which entries were
// written, which is the order the printer uses.
type Attrs []NamedAttr

// A builds an Attrs from alternating names and Go values, for literal use in
// Go code: A("axes", []int{0, 1}, "keepdim", false). Values may be Attr,
// int, int64, float64, float32, string, bool, DType, Type, []int, []int64,
// []float64, []string, []bool or []DType. A panics on a malformed list, as
// regexp.MustCompile does on a bad literal.
func A(kv ...any) Attrs {
	if len(kv)%2 != 0 {
		panic("ir.A: odd number of arguments")
	}
	attrs := make(Attrs, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		name, ok := kv[i].(string)
		if !ok {
			panic(fmt.Sprintf("ir.A: argument %d is a %T, want a string name", i, kv[i]))
		}
		v, err := ToAttr(kv[i+1])
		if err != nil {
			panic(fmt.Sprintf("ir.A: attribute %q: %v", name, err))
		}
		attrs = attrs.With(name, v)
	}
	return attrs
}

// ToAttr converts a Go value to an Attr (see A for the accepted types).
func ToAttr(v any) (Attr, error) {
	switch v := v.(type) {
	case Attr:
		return v, nil
	case int:
		return Int(v), nil
	case int64:
		return Int(v), nil
	case float64:
		return Float(v), nil
	case float32:
		return Float(v), nil
	case string:
		return Str(v), nil
	case bool:
		return Bool(v), nil
	case []int:
		return listOf(v, func(x int) Attr { return Int(x) }), nil
	case []int64:
		return listOf(v, func(x int64) Attr { return Int(x) }), nil
	case []float64:
		return listOf(v, func(x float64) Attr { return Float(x) }), nil
	case []string:
		return listOf(v, func(x string) Attr { return Str(x) }), nil
	case []bool:
		return listOf(v, func(x bool) Attr { return Bool(x) }), nil
	case []DType:
		return listOf(v, func(x DType) Attr { return x }), nil
	case Type:
		return TypeAttr{v}, nil
	}
	return nil, fmt.Errorf("unsupported attribute value of type %T", v)
}

func listOf[T any](xs []T, f func(T) Attr) List {
	l := make(List, len(xs))
	for i, x := range xs {
		l[i] = f(x)
	}
	return l
}

// Get returns the attribute named name.
func (as Attrs) Get(name string) (Attr, bool) {
	for _, a := range as {
		if a.Name == name {
			return a.Value, true
		}
	}
	return nil, false
}

// With returns as with name set to v, replacing an existing entry in place
// or appending a new one. The receiver is not modified.
func (as Attrs) With(name string, v Attr) Attrs {
	out := make(Attrs, len(as), len(as)+1)
	copy(out, as)
	for i := range out {
		if out[i].Name == name {
			out[i].Value = v
			return out
		}
	}
	return append(out, NamedAttr{name, v})
}

// String writes the dictionary in the text format, or "" if it is empty.
func (as Attrs) String() string {
	if len(as) == 0 {
		return ""
	}
	var sb strings.Builder
	sb.WriteByte('{')
	for i, a := range as {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(a.Name)
		sb.WriteByte(':')
		sb.WriteString(attrString(a.Value))
	}
	sb.WriteByte('}')
	return sb.String()
}

// AttrError says that an attribute is missing or has the wrong kind.
type AttrError struct {
	Name string
	Want string // what was expected, e.g. "an int" or "a list of ints"
	Got  Attr   // nil if missing
}

func (e *AttrError) Error() string {
	if e.Got == nil {
		return fmt.Sprintf("missing attribute %q (%s)", e.Name, e.Want)
	}
	return fmt.Sprintf("attribute %s:%s is not %s", e.Name, e.Got, e.Want)
}

// Int returns the integer attribute name.
func (as Attrs) Int(name string) (int64, error) {
	a, ok := as.Get(name)
	if v, isInt := a.(Int); ok && isInt {
		return int64(v), nil
	}
	return 0, &AttrError{Name: name, Want: "an int", Got: a}
}

// Float returns the float attribute name; an Int is accepted and converted.
func (as Attrs) Float(name string) (float64, error) {
	a, _ := as.Get(name)
	switch v := a.(type) {
	case Float:
		return float64(v), nil
	case Int:
		return float64(v), nil
	}
	return 0, &AttrError{Name: name, Want: "a number", Got: a}
}

// Str returns the string attribute name.
func (as Attrs) Str(name string) (string, error) {
	a, _ := as.Get(name)
	if v, ok := a.(Str); ok {
		return string(v), nil
	}
	return "", &AttrError{Name: name, Want: "a string", Got: a}
}

// Bool returns the boolean attribute name.
func (as Attrs) Bool(name string) (bool, error) {
	a, _ := as.Get(name)
	if v, ok := a.(Bool); ok {
		return bool(v), nil
	}
	return false, &AttrError{Name: name, Want: "a bool", Got: a}
}

// DType returns the dtype attribute name.
func (as Attrs) DType(name string) (DType, error) {
	a, _ := as.Get(name)
	if v, ok := a.(DType); ok {
		return v, nil
	}
	return InvalidDType, &AttrError{Name: name, Want: "a dtype", Got: a}
}

// Ints returns the list-of-ints attribute name.
func (as Attrs) Ints(name string) ([]int, error) {
	a, _ := as.Get(name)
	l, ok := a.(List)
	if !ok {
		return nil, &AttrError{Name: name, Want: "a list of ints", Got: a}
	}
	out := make([]int, len(l))
	for i, e := range l {
		v, ok := e.(Int)
		if !ok {
			return nil, &AttrError{Name: name, Want: "a list of ints", Got: a}
		}
		out[i] = int(v)
	}
	return out, nil
}

// Type returns the type attribute name.
func (as Attrs) Type(name string) (Type, error) {
	a, _ := as.Get(name)
	if v, ok := a.(TypeAttr); ok {
		return v.Type, nil
	}
	return Type{}, &AttrError{Name: name, Want: "a type", Got: a}
}

// Has reports whether the dictionary has an entry name.
func (as Attrs) Has(name string) bool {
	_, ok := as.Get(name)
	return ok
}
