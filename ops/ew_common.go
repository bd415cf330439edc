package ops

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Helpers shared by the elementwise, unary, comparison, cast and
// reduction families.

// ewData returns t's elements as a []T; T must match t's dtype.
func ewData[T kernels.Element](t *tensor.Tensor) []T {
	var z T
	switch any(z).(type) {
	case float32:
		return any(t.F32()).([]T)
	case float64:
		return any(t.F64()).([]T)
	case int32:
		return any(t.I32()).([]T)
	case int64:
		return any(t.I64()).([]T)
	default:
		return any(t.Bool()).([]T)
	}
}

// ewView returns t's elements as a []T without checking the dtype, for
// the elementwise kernels, whose operand dtypes ewCheckInputs has checked
// and whose results they made themselves; it saves ewData's checks on
// every call. In debug mode it checks all the same.
func ewView[T kernels.Element](t *tensor.Tensor) []T {
	if tensor.Debug() {
		return ewData[T](t)
	}
	raw := t.Raw()
	if len(raw) == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(raw))), t.Len())
}

// ewSameDType checks that all operand types share one dtype, naming the
// first pair that differs.
func ewSameDType(in []ir.Type) error {
	for _, t := range in[1:] {
		if t.DType != in[0].DType {
			return fmt.Errorf("operand types %s and %s have different dtypes", in[0], t)
		}
	}
	return nil
}

// ewDTypeSet is a set of accepted dtypes with a phrase for errors.
type ewDTypeSet struct {
	what string
	ok   func(ir.DType) bool
}

var (
	ewFloats   = ewDTypeSet{"f32 or f64", ir.DType.IsFloat}
	ewNumbers  = ewDTypeSet{"f32, f64, i32 or i64", func(d ir.DType) bool { return d.IsFloat() || d.IsInt() }}
	ewBools    = ewDTypeSet{"i1", func(d ir.DType) bool { return d == ir.I1 }}
	ewAnyDType = ewDTypeSet{"any dtype", func(d ir.DType) bool { return d.Size() > 0 }}
	ewEquality = ewDTypeSet{"f32, f64, i32, i64 or i1", func(d ir.DType) bool { return d.Size() > 0 }}
)

// check returns an error naming t unless its dtype is in s.
func (s ewDTypeSet) check(t ir.Type) error {
	if !s.ok(t.DType) {
		return fmt.Errorf("operand type %s is not supported (want %s)", t, s.what)
	}
	return nil
}

// ewCheckInputs verifies at run time that the operands have the dtypes the
// op was compiled for, so that a mismatch is an error rather than a panic.
func ewCheckInputs(name string, in []*tensor.Tensor, dts []ir.DType) error {
	if len(in) != len(dts) {
		return fmt.Errorf("%s: got %d operands, want %d", name, len(in), len(dts))
	}
	for i, x := range in {
		if ir.DType(x.DType()) != dts[i] {
			return fmt.Errorf("%s: operand %d is %s, compiled for %s", name, i, x.Type(), dts[i])
		}
	}
	return nil
}

// ewOperandDTypes lists the dtypes of op's operands.
func ewOperandDTypes(op *ir.Op) []ir.DType {
	dts := make([]ir.DType, op.NumOperands())
	for i, v := range op.Operands() {
		dts[i] = v.Type().DType
	}
	return dts
}

// ewOptFloat returns the number attribute name, or def if absent.
func ewOptFloat(attrs ir.Attrs, name string, def float64) (float64, error) {
	if !attrs.Has(name) {
		return def, nil
	}
	return attrs.Float(name)
}

// ewOptBool returns the bool attribute name, or def if absent.
func ewOptBool(attrs ir.Attrs, name string, def bool) (bool, error) {
	if !attrs.Has(name) {
		return def, nil
	}
	return attrs.Bool(name)
}

// ewIntRange is the range of the integer dtype dt as float64s.
func ewIntRange(dt ir.DType) (lo, hi float64) {
	if dt == ir.I32 {
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

// ewIntegral checks that v is an integer representable in dt.
func ewIntegral(name string, v float64, dt ir.DType) error {
	lo, hi := ewIntRange(dt)
	if v != math.Trunc(v) || v < lo || v > hi || dt == ir.I64 && v >= 1<<63 {
		return fmt.Errorf("attribute %s:%v is not an integer in the range of %s", name, v, dt)
	}
	return nil
}

// ewConvert converts v to T; for integers it clamps into T's range.
func ewConvert[T kernels.Numeric](v float64) T {
	var z T
	switch any(z).(type) {
	case int32:
		return T(max(math.MinInt32, min(math.MaxInt32, v)))
	case int64:
		if v >= 1<<63 {
			return any(int64(math.MaxInt64)).(T)
		}
		return T(max(math.MinInt64, v))
	}
	return T(v)
}

// ewKernel returns the kernel of an elementwise op: it checks the operand
// dtypes and fills the result, of dtype outDT and the numpy broadcast of
// the operands' shapes, with run. The result may take over the buffer of
// an operand of its dtype that dies at the op (Compute.InPlace), so run
// must allow out to be one of its operands, reading each element before
// writing it.
func ewKernel(op *ir.Op, outDT ir.DType, run func(c *Ctx, out *tensor.Tensor, in []*tensor.Tensor) error) Compute {
	name, dts := op.Name(), ewOperandDTypes(op)
	var same []int
	for i, dt := range dts {
		if dt == outDT {
			same = append(same, i)
		}
	}
	return Compute{
		Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
			if err := ewCheckInputs(name, in, dts); err != nil {
				return err
			}
			if err := run(c, out[0], in); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			return nil
		},
		InPlace: [][]int{same},
	}
}

// ewMapKernel is ewKernel for a one-operand op whose result has the
// operand's shape.
func ewMapKernel(op *ir.Op, run func(c *Ctx, out, x *tensor.Tensor) error) Compute {
	return ewKernel(op, op.Result(0).Type().DType, func(c *Ctx, out *tensor.Tensor, in []*tensor.Tensor) error {
		return run(c, out, in[0])
	})
}
