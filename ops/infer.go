package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
)

// Helpers shared by the Infer hooks of the catalog.

// wantOperands checks the operand count.
func wantOperands(in []ir.Type, n int) error {
	if len(in) != n {
		return fmt.Errorf("takes %d operands, got %d", n, len(in))
	}
	return nil
}

// broadcastDims applies numpy broadcasting to two static-or-dynamic shapes.
// Dims are aligned from the right; a 1 stretches to the other dim. A
// dynamic dim against 1 or another dynamic dim stays dynamic (checked at run
// time); against a size k > 1 it becomes k.
func broadcastDims(a, b []int) ([]int, error) {
	n := max(len(a), len(b))
	out := make([]int, n)
	for i := range n { // i counts from the right
		x, y := fromRight(a, i), fromRight(b, i)
		var d int
		switch {
		case x == y:
			d = x
		case x == 1:
			d = y
		case y == 1:
			d = x
		case x == ir.Dynamic:
			d = y
		case y == ir.Dynamic:
			d = x
		default:
			return nil, fmt.Errorf("operand shapes %s and %s are not broadcastable", dimsString(a), dimsString(b))
		}
		out[n-1-i] = d
	}
	return out, nil
}

// fromRight returns the i-th dim counting from the right, or 1 past the
// left end.
func fromRight(dims []int, i int) int {
	if i >= len(dims) {
		return 1
	}
	return dims[len(dims)-1-i]
}

// dimsString formats dims as [2 ? 3].
func dimsString(dims []int) string {
	s := "["
	for i, d := range dims {
		if i > 0 {
			s += " "
		}
		if d == ir.Dynamic {
			s += "?"
		} else {
			s += fmt.Sprint(d)
		}
	}
	return s + "]"
}

// normAxis maps a possibly negative axis into [0, rank).
func normAxis(axis, rank int) (int, error) {
	if axis < -rank || axis >= rank || rank == 0 && axis != 0 {
		return 0, fmt.Errorf("axis %d is out of range for rank %d", axis, rank)
	}
	if axis < 0 {
		axis += rank
	}
	return axis, nil
}
