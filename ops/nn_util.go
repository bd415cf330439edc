package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/tensor"
)

// Helpers of the neural-network op family (matmul, conv, pool, norm,
// dropout, softmax, losses).

// nnInt returns the int attribute name, or def when it is absent.
func nnInt(attrs ir.Attrs, name string, def int) (int, error) {
	if !attrs.Has(name) {
		return def, nil
	}
	v, err := attrs.Int(name)
	return int(v), err
}

// nnFloat returns the number attribute name, or def when it is absent.
func nnFloat(attrs ir.Attrs, name string, def float64) (float64, error) {
	if !attrs.Has(name) {
		return def, nil
	}
	return attrs.Float(name)
}

// nnBool returns the bool attribute name, or def when it is absent.
func nnBool(attrs ir.Attrs, name string, def bool) (bool, error) {
	if !attrs.Has(name) {
		return def, nil
	}
	return attrs.Bool(name)
}

// nnPair returns a two-int attribute (e.g. strides [sh, sw]), or def when it
// is absent; a single int n stands for [n, n]. Each entry must be >= lo.
func nnPair(attrs ir.Attrs, name string, def [2]int, lo int) ([2]int, error) {
	if !attrs.Has(name) {
		return def, nil
	}
	if v, err := attrs.Int(name); err == nil {
		if int(v) < lo {
			return def, fmt.Errorf("attribute %s:%d must be >= %d", name, v, lo)
		}
		return [2]int{int(v), int(v)}, nil
	}
	l, err := attrs.Ints(name)
	if err != nil {
		return def, err
	}
	if len(l) != 2 {
		return def, fmt.Errorf("attribute %s:%v must have 2 entries, got %d", name, l, len(l))
	}
	if l[0] < lo || l[1] < lo {
		return def, fmt.Errorf("attribute %s:%v entries must be >= %d", name, l, lo)
	}
	return [2]int{l[0], l[1]}, nil
}

// nnWantFloat checks that operand what has a float dtype.
func nnWantFloat(what string, t ir.Type) error {
	if !t.DType.IsFloat() {
		return fmt.Errorf("%s %s must be f32 or f64", what, t)
	}
	return nil
}

// nnSameDType checks that operand what has dtype dt.
func nnSameDType(what string, t ir.Type, dt ir.DType, ref string, rt ir.Type) error {
	if t.DType != dt {
		return fmt.Errorf("%s %s must have the dtype of %s %s", what, t, ref, rt)
	}
	return nil
}

// nnDimEq reports whether dims a and b may be equal (equal, or one of them
// dynamic).
func nnDimEq(a, b int) bool { return a == b || a == ir.Dynamic || b == ir.Dynamic }

// nnType is the run-time type of tensor x, for shape rules shared by Infer
// and the kernels.
func nnType(x *tensor.Tensor) ir.Type {
	return ir.Type{DType: ir.DType(x.DType()), Dims: x.Shape()}
}

// nnProd is the product of dims, all of which must be static.
func nnProd(dims []int) int {
	n := 1
	for _, d := range dims {
		n *= d
	}
	return n
}

// nnNewAll allocates one tensor per type, all or none: on failure the ones
// already made are released.
func nnNewAll(c *Ctx, types ...ir.Type) ([]*tensor.Tensor, error) {
	out := make([]*tensor.Tensor, 0, len(types))
	for _, t := range types {
		x, err := c.New(t.DType, t.Dims)
		if err != nil {
			nnRelease(out)
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

// nnRelease releases every non-nil tensor of ts.
func nnRelease(ts []*tensor.Tensor) {
	for _, t := range ts {
		if t != nil {
			t.Release()
		}
	}
}

// nnThreads is c.Threads, at least 1.
func nnThreads(c *Ctx) int { return max(c.Threads, 1) }

// nnIntList is the list attribute holding v.
func nnIntList(v []int) ir.Attr {
	l := make(ir.List, len(v))
	for i, x := range v {
		l[i] = ir.Int(x)
	}
	return l
}

// nnMatchShape returns the type of two operands that must have the same
// dtype and shape, with each dim taken from whichever is static, or false
// when they cannot match.
func nnMatchShape(t, u ir.Type) (ir.Type, bool) {
	if t.DType != u.DType || t.Rank() != u.Rank() || t.IsStack() || u.IsStack() {
		return ir.Type{}, false
	}
	j := ir.TensorOf(t.DType, t.Dims...)
	for i, d := range u.Dims {
		if !nnDimEq(j.Dims[i], d) {
			return ir.Type{}, false
		}
		if j.Dims[i] == ir.Dynamic {
			j.Dims[i] = d
		}
	}
	return j, true
}
