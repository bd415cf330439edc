package optimize

import (
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/tensor"
)

// known returns the elements of v, in row-major order, when they are
// known before a run: a parameter whose value the Params hold, a
// constant, a full, or a view of one of those. Only float values are
// read; f32 values come back exactly as the tensor holds them.
func known(v *ir.Value, params *Params) ([]float64, bool) {
	op := v.Def()
	t := v.Type()
	if op == nil || !isFloat(t) || !t.IsStatic() {
		return nil, false
	}
	switch {
	case op.Name() == "parameter":
		name, err := op.Attrs.Str("name")
		if err != nil {
			return nil, false
		}
		x, ok := params.value(name, t)
		if !ok {
			return nil, false
		}
		vals := make([]float64, x.Len())
		switch x.DType() {
		case tensor.F32:
			for i, v := range x.F32() {
				vals[i] = float64(v)
			}
		default:
			copy(vals, x.F64())
		}
		return vals, true
	case op.Name() == "constant":
		d, err := op.Attrs.Dense("value")
		if err != nil || !d.Type.Equal(t) {
			return nil, false
		}
		vals := make([]float64, d.Len())
		for i := range vals {
			vals[i] = d.Float64At(i)
		}
		return vals, true
	case op.Name() == "full":
		f, err := op.Attrs.Float("value")
		if err != nil {
			return nil, false
		}
		if t.DType == ir.F32 {
			f = float64(float32(f))
		}
		vals := make([]float64, t.NumElements())
		for i := range vals {
			vals[i] = f
		}
		return vals, true
	case isView(op):
		return known(op.Operand(0), params)
	}
	return nil, false
}

// perChannel returns the values of v, which an elementwise op combines
// with a value of type out, as one value per index of out's dim axis,
// when v is known and varies along no other dim of out: a scalar, or a
// vector laid out along axis ([C], [C,1,1] or [1,C,1,1] for an NCHW out
// and axis 1; [N] or [1,N] for the last axis of a matrix). v must not
// broadcast out to a larger shape.
func perChannel(v *ir.Value, out ir.Type, axis int, params *Params) ([]float64, bool) {
	vt := v.Type()
	if vt.IsStack() || vt.Unranked || vt.DType != out.DType || vt.Rank() > out.Rank() || !vt.IsStatic() {
		return nil, false
	}
	channels := out.Dims[axis]
	if channels == ir.Dynamic {
		return nil, false
	}
	// Align v's dims with out's from the right: each must be 1, except at
	// axis, where it may be the channel count.
	along := false
	for i, d := range vt.Dims {
		j := out.Rank() - vt.Rank() + i
		switch {
		case d == 1:
		case j == axis && d == channels:
			along = true
		default:
			return nil, false
		}
	}
	vals, ok := known(v, params)
	if !ok {
		return nil, false
	}
	if along {
		return vals, true
	}
	per := make([]float64, channels)
	for i := range per {
		per[i] = vals[0]
	}
	return per, true
}

// channelShaped reports whether a value of type vt, added to a value of
// type out, adds one value per index of out's dim axis without
// broadcasting out: vt is [C] aligned at axis from the right, with 1s
// around it ([C,1,1], [1,C,1,1] for NCHW and axis 1; [N], [1,N] for the
// last axis), or all 1s when C is 1. Unlike perChannel the values need
// not be known.
func channelShaped(vt, out ir.Type, axis int) bool {
	if vt.IsStack() || vt.Unranked || vt.DType != out.DType || vt.Rank() > out.Rank() || !vt.IsStatic() {
		return false
	}
	c := out.Dims[axis]
	if c == ir.Dynamic {
		return false
	}
	found := c == 1
	for i, d := range vt.Dims {
		j := out.Rank() - vt.Rank() + i
		switch {
		case d == 1:
		case j == axis && d == c:
			found = true
		default:
			return false
		}
	}
	return found
}
