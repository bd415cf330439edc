package models

import (
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/nn"
	"github.com/gopir/gopir/ops"
)

// Precisions is implemented by tasks that build in float64 as well as
// float32 (gopir train --dtype f64): their parameters and arithmetic take
// nn.Module.DType, and their feeds, float32 from the data sets, are cast
// to it where they enter the program. Float64 is slower and twice the
// memory; what it buys is rounding small enough that two runs that sum in
// different orders (one process and a data-parallel job) stay together
// for hundreds of steps instead of drifting apart as float32 runs of a
// detector do.
type Precisions interface {
	DTypes() []ir.DType
}

// SupportsDType reports whether t builds in dt: float32 always, others
// when t says so.
func SupportsDType(t Task, dt ir.DType) bool {
	if dt == ir.F32 {
		return true
	}
	p, ok := t.(Precisions)
	if !ok {
		return false
	}
	for _, d := range p.DTypes() {
		if d == dt {
			return true
		}
	}
	return false
}

// bothFloats is the DTypes of the tasks that build in either float type.
func bothFloats() []ir.DType { return []ir.DType{ir.F32, ir.F64} }

// floatFeed declares the float32 feed name of the given dims and returns
// it in m's dtype (cast where m is not float32).
func floatFeed(b *ir.Builder, m *nn.Module, name string, dims ...int) *ir.Value {
	x := ops.Data(b, name, ir.F32, dims...)
	if m.DType == ir.F32 {
		return x
	}
	return ops.Cast(b, x, m.DType)
}

// asFloat32 casts the fetches of an evaluation program to float32, which
// Evaluate reads, when m is not float32.
func asFloat32(b *ir.Builder, m *nn.Module, fetches map[string]*ir.Value) {
	if m.DType == ir.F32 {
		return
	}
	for k, v := range fetches {
		if v.Type().DType == m.DType {
			fetches[k] = ops.Cast(b, v, ir.F32)
		}
	}
}

// The zoo's models but ppyoloe_s build in either float type.
func (*mnistTask) DTypes() []ir.DType { return bothFloats() }
func (*rnnTask) DTypes() []ir.DType   { return bothFloats() }
func (*tinydet) DTypes() []ir.DType   { return bothFloats() }
