package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

// FuzzFeedValue parses arbitrary --feed values for every dtype: nothing
// panics, a failure leaves nothing allocated, and a value that parses has
// the shape its nesting gives and prints back (as the fetch JSON does) to
// a value that parses to the same tensor.
func FuzzFeedValue(f *testing.F) {
	for _, s := range []string{"1", "-2.5e3", "[1,2,3]", "[[1,2],[3,4]]", "[]", "[[]]", "[[1],[2,3]]", "true", "[true,0,1]", "1e400", "9223372036854775808", `"x"`, "null", "[1,]", "[[[[[[1]]]]]]", "1 2"} {
		for dt := range 5 {
			f.Add(s, uint8(dt))
		}
	}
	dtypes := []ir.DType{ir.F32, ir.F64, ir.I32, ir.I64, ir.I1}
	f.Fuzz(func(t *testing.T, value string, d uint8) {
		dt := dtypes[int(d)%len(dtypes)]
		a := memory.New(memory.Options{Limit: 64 << 20, ChunkSize: 1 << 20})
		x, err := parseJSONTensor(value, dt, a)
		if err != nil {
			if n := a.Stats().Allocated.Current; n != 0 {
				t.Fatalf("%d bytes left after a failed parse: %v", n, err)
			}
			return
		}
		if ir.DType(x.DType()) != dt {
			t.Fatalf("parsed %q as %s, want %s", value, x.Type(), dt)
		}
		text := jsonText(t, x)
		y, err := parseJSONTensor(text, dt, a)
		if err != nil {
			t.Fatalf("%q parsed to %s, printed as %s, which does not parse: %v", value, x.Type(), text, err)
		}
		if !slices.Equal(x.Shape(), y.Shape()) || !sameValues(x, y) {
			t.Fatalf("%q: %s printed as %s reads back as %s", value, x.Type(), text, y.Type())
		}
		x.Release()
		y.Release()
		if n := a.Stats().Allocated.Current; n != 0 {
			t.Fatalf("%d bytes left allocated", n)
		}
	})
}

// sameValues compares two tensors of one dtype element by element, NaN
// equal to NaN.
func sameValues(x, y *tensor.Tensor) bool {
	for i := range x.Len() {
		a, b := x.Float64At(i), y.Float64At(i)
		if a != b && !(a != a && b != b) {
			return false
		}
	}
	return true
}

// jsonText prints x as a nested JSON array, the form --feed reads.
func jsonText(t *testing.T, x *tensor.Tensor) string {
	var sb strings.Builder
	i := 0
	var walk func(dims []int)
	walk = func(dims []int) {
		if len(dims) == 0 {
			sb.WriteString(elementText(x, i))
			i++
			return
		}
		sb.WriteByte('[')
		for j := range dims[0] {
			if j > 0 {
				sb.WriteByte(',')
			}
			walk(dims[1:])
		}
		sb.WriteByte(']')
	}
	walk(x.Shape())
	return sb.String()
}
