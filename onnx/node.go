package onnx

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/onnx/onnxpb"
	"github.com/gopir/gopir/tensor"
)

// A converter turns one ONNX node into gopir ops. Converters live one file
// per op family and register themselves in converters at init.
type converter struct {
	fn func(n *node) ([]*value, error)
	// noFold marks ops that must not run at import time even when every
	// input is known: random ops, and ops with subgraphs.
	noFold bool
}

var converters = map[string]converter{}

// register adds the converter of the ONNX ops named by opTypes.
func register(fn func(n *node) ([]*value, error), opTypes ...string) {
	for _, t := range opTypes {
		if _, dup := converters[t]; dup {
			panic("onnx: converter for " + t + " registered twice")
		}
		converters[t] = converter{fn: fn}
	}
}

// registerNoFold is register for ops that must run in the program.
func registerNoFold(fn func(n *node) ([]*value, error), opTypes ...string) {
	for _, t := range opTypes {
		register(fn, t)
		c := converters[t]
		c.noFold = true
		converters[t] = c
	}
}

// node is what a converter sees of the node it converts: its inputs, its
// attributes and the builder to append to. Attribute getters record the
// first problem (like bufio.Scanner) and finish reports it, together with
// any attribute the converter never read: an attribute gopir does not
// understand is refused, not ignored.
type node struct {
	im    *importer
	s     *scope
	b     *ir.Builder
	p     *onnxpb.NodeProto
	index int
	in    []*value
	used  map[string]bool
	err   error
}

// Opset is the model's version of the default domain.
func (n *node) Opset() int64 { return n.im.opset }

// NumIn is the number of inputs, counting absent optional ones.
func (n *node) NumIn() int { return len(n.in) }

// Has reports whether input i is given.
func (n *node) Has(i int) bool { return i < len(n.in) && n.in[i] != nil }

// In returns input i as a program value, or nil when it is absent.
func (n *node) In(i int) *ir.Value {
	if !n.Has(i) {
		return nil
	}
	return n.s.use(n.in[i])
}

// Ins returns every input as program values.
func (n *node) Ins() []*ir.Value {
	vs := make([]*ir.Value, len(n.in))
	for i := range n.in {
		vs[i] = n.In(i)
	}
	return vs
}

// Type is the type of input i (which must be given).
func (n *node) Type(i int) ir.Type { return n.in[i].typ() }

// Known returns the value of input i when it is known at import time: a
// constant, or a parameter's initial value (which an attribute-like input
// such as a shape or scales freezes).
func (n *node) Known(i int) (*tensor.Tensor, bool) {
	if !n.Has(i) {
		return nil, false
	}
	if x := n.in[i]; x.known != nil {
		return x.known, true
	} else if x.init != nil {
		return x.init, true
	}
	return nil, false
}

// KnownInts returns input i as int64s when it is a known integer tensor.
func (n *node) KnownInts(i int) ([]int64, bool) {
	t, ok := n.Known(i)
	if !ok || !ir.DType(t.DType()).IsInt() {
		return nil, false
	}
	if t.DType() == tensor.I64 {
		return slices.Clone(t.I64()), true
	}
	xs := make([]int64, t.Len())
	for j, v := range t.I32() {
		xs[j] = int64(v)
	}
	return xs, true
}

// KnownFloats returns input i as float64s when it is known.
func (n *node) KnownFloats(i int) ([]float64, bool) {
	t, ok := n.Known(i)
	if !ok {
		return nil, false
	}
	xs := make([]float64, t.Len())
	for j := range xs {
		xs[j] = t.Float64At(j)
	}
	return xs, true
}

// out wraps program values as the node's outputs.
func out(vs ...*ir.Value) []*value {
	out := make([]*value, len(vs))
	for i, v := range vs {
		if v != nil {
			out[i] = &value{v: v}
		}
	}
	return out
}

// unsupported says what of this node gopir does not support.
func (n *node) unsupported(format string, args ...any) error {
	return &UnsupportedError{What: fmt.Sprintf(format, args...), Reason: "not supported by gopir's " + n.p.GetOpType()}
}

// fail records the first problem with the node.
func (n *node) fail(format string, args ...any) {
	if n.err == nil {
		n.err = fmt.Errorf(format, args...)
	}
}

// finish reports the first recorded problem, or an attribute no getter
// read.
func (n *node) finish() error {
	if n.err != nil {
		return n.err
	}
	var unread []string
	for _, a := range n.p.GetAttribute() {
		if !n.used[a.GetName()] {
			unread = append(unread, a.GetName())
		}
	}
	if len(unread) > 0 {
		sort.Strings(unread)
		return &UnsupportedError{What: "attribute " + strings.Join(unread, ", "), Reason: "gopir does not implement it for " + n.p.GetOpType()}
	}
	return nil
}

func (n *node) attr(name string, want onnxpb.AttributeProto_AttributeType) *onnxpb.AttributeProto {
	if n.used == nil {
		n.used = map[string]bool{}
	}
	n.used[name] = true
	for _, a := range n.p.GetAttribute() {
		if a.GetName() != name {
			continue
		}
		if a.GetRefAttrName() != "" {
			n.fail("attribute %s refers to a function attribute, which gopir does not support", name)
			return nil
		}
		// Old exporters leave the type unset; trust the field then.
		if a.GetType() != want && a.GetType() != onnxpb.AttributeProto_UNDEFINED {
			n.fail("attribute %s is %s, want %s", name, a.GetType(), want)
			return nil
		}
		return a
	}
	return nil
}

// HasAttr reports whether the node sets attribute name (and marks it
// read).
func (n *node) HasAttr(name string) bool {
	if n.used == nil {
		n.used = map[string]bool{}
	}
	n.used[name] = true
	for _, a := range n.p.GetAttribute() {
		if a.GetName() == name {
			return true
		}
	}
	return false
}

// Int returns integer attribute name, or def when it is absent.
func (n *node) Int(name string, def int64) int64 {
	if a := n.attr(name, onnxpb.AttributeProto_INT); a != nil {
		return a.GetI()
	}
	return def
}

// Float returns float attribute name, or def.
func (n *node) Float(name string, def float64) float64 {
	if a := n.attr(name, onnxpb.AttributeProto_FLOAT); a != nil {
		return float64(a.GetF())
	}
	return def
}

// String returns string attribute name, or def.
func (n *node) String(name, def string) string {
	if a := n.attr(name, onnxpb.AttributeProto_STRING); a != nil {
		return string(a.GetS())
	}
	return def
}

// Ints returns list-of-ints attribute name, or nil when it is absent.
func (n *node) Ints(name string) []int64 {
	if a := n.attr(name, onnxpb.AttributeProto_INTS); a != nil {
		return slices.Clone(a.GetInts())
	}
	return nil
}

// Strings returns list-of-strings attribute name, or nil.
func (n *node) Strings(name string) []string {
	a := n.attr(name, onnxpb.AttributeProto_STRINGS)
	if a == nil {
		return nil
	}
	xs := make([]string, len(a.GetStrings()))
	for i, s := range a.GetStrings() {
		xs[i] = string(s)
	}
	return xs
}

// Floats returns list-of-floats attribute name, or nil.
func (n *node) Floats(name string) []float64 {
	if a := n.attr(name, onnxpb.AttributeProto_FLOATS); a != nil {
		xs := make([]float64, len(a.GetFloats()))
		for i, f := range a.GetFloats() {
			xs[i] = float64(f)
		}
		return xs
	}
	return nil
}

// Tensor returns tensor attribute name, read into a known value, or nil.
func (n *node) Tensor(name string) *tensor.Tensor {
	a := n.attr(name, onnxpb.AttributeProto_TENSOR)
	if a == nil {
		return nil
	}
	t, err := TensorFromProto(a.GetT(), n.im.opts.Dir, n.im.host)
	if err != nil {
		if n.err == nil {
			n.err = fmt.Errorf("attribute %s: %w", name, err)
		}
		return nil
	}
	return n.im.keep(t)
}

// TypeAttr returns type attribute name converted to a gopir type, and
// false when it is absent.
func (n *node) TypeAttr(name string) (ir.Type, bool) {
	a := n.attr(name, onnxpb.AttributeProto_TYPE_PROTO)
	if a == nil {
		return ir.Type{}, false
	}
	t, err := typeFromProto(a.GetTp())
	if err != nil {
		if n.err == nil {
			n.err = fmt.Errorf("attribute %s: %w", name, err)
		}
		return ir.Type{}, false
	}
	return t, true
}

// Graph returns graph attribute name, or nil.
func (n *node) Graph(name string) *onnxpb.GraphProto {
	if a := n.attr(name, onnxpb.AttributeProto_GRAPH); a != nil {
		return a.GetG()
	}
	return nil
}

// axis normalizes a possibly negative axis of a rank-r tensor.
func (n *node) axis(a int64, rank int) int {
	if a < -int64(rank) || a >= int64(rank) {
		n.fail("axis %d is out of range for rank %d", a, rank)
		return 0
	}
	if a < 0 {
		a += int64(rank)
	}
	return int(a)
}

// ints converts int64s to ints, refusing values beyond int's range.
func (n *node) ints(xs []int64) []int {
	if xs == nil {
		return nil
	}
	is := make([]int, len(xs))
	for i, x := range xs {
		if x > math.MaxInt || x < math.MinInt {
			n.fail("value %d is too large", x)
		}
		is[i] = int(x)
	}
	return is
}

// rank is the rank of input i, or fails if it has none (a sequence).
func (n *node) rank(i int) int {
	t := n.Type(i)
	if t.IsStack() {
		n.fail("input %d is a sequence, want a tensor", i)
		return 0
	}
	return t.Rank()
}
