package main

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/tensor"
)

// jsonTensor is a tensor as --json prints it. Non-finite floats are the
// strings "NaN", "Inf" and "-Inf", since JSON has no numbers for them.
type jsonTensor struct {
	DType string            `json:"dtype"`
	Shape []int             `json:"shape"`
	Data  []json.RawMessage `json:"data"`
}

func toJSONTensor(t *tensor.Tensor) jsonTensor {
	jt := jsonTensor{DType: ir.DType(t.DType()).String(), Shape: append([]int{}, t.Shape()...), Data: make([]json.RawMessage, t.Len())}
	for i := range jt.Data {
		jt.Data[i] = json.RawMessage(elementText(t, i))
	}
	return jt
}

// elementText formats element i: integers exactly, bools as true/false,
// floats in the shortest form that reads back to the same value.
func elementText(t *tensor.Tensor, i int) string {
	switch t.DType() {
	case tensor.F32:
		return floatText(float64(t.F32()[i]), 32)
	case tensor.F64:
		return floatText(t.F64()[i], 64)
	case tensor.I32:
		return strconv.FormatInt(int64(t.I32()[i]), 10)
	case tensor.I64:
		return strconv.FormatInt(t.I64()[i], 10)
	case tensor.Bool:
		return strconv.FormatBool(t.Bool()[i])
	}
	return "null"
}

func floatText(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return `"NaN"`
	case math.IsInf(f, 1):
		return `"Inf"`
	case math.IsInf(f, -1):
		return `"-Inf"`
	}
	return strconv.FormatFloat(f, 'g', -1, bits)
}

// formatTensor writes a tensor for people: its type, then nested lists.
func formatTensor(t *tensor.Tensor) string {
	var sb strings.Builder
	sb.WriteString(ir.TensorOf(ir.DType(t.DType()), t.Shape()...).String())
	sb.WriteByte(' ')
	var idx int
	var rec func(dim int)
	rec = func(dim int) {
		if dim == t.Rank() {
			s := elementText(t, idx)
			sb.WriteString(strings.Trim(s, `"`))
			idx++
			return
		}
		sb.WriteByte('[')
		for j := range t.Shape()[dim] {
			if j > 0 {
				sb.WriteString(", ")
			}
			rec(dim + 1)
		}
		sb.WriteByte(']')
	}
	rec(0)
	return sb.String()
}

// human formats a byte count for people, in B, KB or MB (powers of 1024).
func human(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.2f MB", float64(n)/(1<<20))
}
