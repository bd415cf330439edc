package onnx

import (
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/tensor"
)

// Partially known shapes. A model with a dynamic batch computes shapes at
// run time: x.view(x.size(0), -1) exports as Shape -> Gather -> Unsqueeze
// -> Concat -> Reshape. The importer builds those ops, and beside each
// small integer vector they compute it records what it knows of every
// element: a number, the run-time dim of a program value (a symbol), or
// nothing. Shape makes symbols from dynamic dims; Gather, Slice, Concat,
// Squeeze, Unsqueeze, Reshape and Identity move elements about. A vector
// whose elements all become known is a value known at import time, and
// folding goes on from there. The ops that take shapes use the elements
// for their result types (Reshape to [?, 784]) and, where that is exact,
// build their static form: Reshape(x, [x.dim0, -1]) of x of type
// tensor<?x28x28xf32> is reshape {shape = [-1, 784]}. The shape arithmetic
// that nothing uses then is erased at the end of the import (prune).

// elemLimit bounds the vectors whose elements are tracked as they move
// about (shapes, mostly).
const elemLimit = 64

// elem is what the importer knows of one element of a small integer
// vector: its value when known, else, when of is set, that it equals the
// run-time size of dim axis of the program value of.
type elem struct {
	known bool
	val   int64
	of    *ir.Value
	axis  int
}

// knownElem is an element whose value is known.
func knownElem(v int64) elem { return elem{known: true, val: v} }

// sameSym reports whether e and f stand for the same run-time dim.
func (e elem) sameSym(f elem) bool {
	return !e.known && !f.known && e.of != nil && e.of == f.of && e.axis == f.axis
}

// dimElems describes the dims of x: known sizes, or symbols.
func dimElems(x *ir.Value) []elem {
	dims := x.Type().Dims
	es := make([]elem, len(dims))
	for i, d := range dims {
		if d == ir.Dynamic {
			es[i] = elem{of: x, axis: i}
		} else {
			es[i] = knownElem(int64(d))
		}
	}
	return es
}

// allKnown returns the values of es when every one is known.
func allKnown(es []elem) ([]int64, bool) {
	vs := make([]int64, len(es))
	for i, e := range es {
		if !e.known {
			return nil, false
		}
		vs[i] = e.val
	}
	return vs, true
}

// knownDims is es as result dims: known values, -1 elsewhere.
func knownDims(es []elem) []int {
	dims := make([]int, len(es))
	for i, e := range es {
		dims[i] = ir.Dynamic
		if e.known && e.val >= 0 && e.val <= 1<<62 {
			dims[i] = int(e.val)
		}
	}
	return dims
}

// Elems returns what is known of the elements of input i, a rank-0 or
// rank-1 integer tensor of static length: all of them when it is known at
// import time, what its converter recorded, or nothing of each. It reports
// false for other inputs.
func (n *node) Elems(i int) ([]elem, bool) {
	if !n.Has(i) {
		return nil, false
	}
	t := n.Type(i)
	if t.IsStack() || t.Unranked || !t.DType.IsInt() || t.Rank() > 1 || !t.IsStatic() {
		return nil, false
	}
	if vs, ok := n.KnownInts(i); ok {
		es := make([]elem, len(vs))
		for j, v := range vs {
			es[j] = knownElem(v)
		}
		return es, true
	}
	if es := n.in[i].elems; es != nil {
		return es, true
	}
	return make([]elem, t.NumElements()), true
}

// smallElems is Elems for the inputs whose elements the converters that
// move elements about track: at most elemLimit of them.
func (n *node) smallElems(i int) ([]elem, bool) {
	if !n.Has(i) || n.Type(i).IsStatic() && n.Type(i).NumElements() > elemLimit {
		return nil, false
	}
	return n.Elems(i)
}

// vector reports whether input i is a 1-D integer tensor of static
// length, as the ops that read shapes, axes or sizes at run time need.
func (n *node) vector(i int) bool {
	t := n.Type(i)
	return !t.IsStack() && !t.Unranked && t.DType.IsInt() && t.Rank() == 1 && t.Dims[0] != ir.Dynamic
}

// partial is the node's result v, a small integer vector, with what is
// known of its elements; the ops made for it (v's and made) are erased at
// the end of the import if nothing uses them. When every element is
// known, use knownElems instead and build nothing.
func (n *node) partial(v *ir.Value, es []elem, made ...*ir.Op) *value {
	n.im.speculative = append(n.im.speculative, made...)
	n.im.speculative = append(n.im.speculative, v.Def())
	return &value{v: v, elems: es}
}

// knownElems makes the known integer tensor of dtype dt and the given
// shape (rank 0 or 1) holding vs.
func (n *node) knownElems(dt ir.DType, shape []int, vs []int64) *value {
	shape = append([]int{}, shape...) // not nil: nil means 1-D to tensor.From*
	var t *tensor.Tensor
	var err error
	if dt == ir.I32 {
		v32 := make([]int32, len(vs))
		for i, v := range vs {
			v32[i] = int32(v)
		}
		t, err = tensor.FromI32(n.im.host, v32, shape...)
	} else {
		t, err = tensor.FromI64(n.im.host, vs, shape...)
	}
	if err != nil {
		n.fail("%v", err)
		return nil
	}
	return &value{known: n.im.keep(t)}
}

// elemsResult is the value of a node that moves elements about: es, the
// elements of its result v (built by build unless they are all known), of
// dtype dt and the given shape.
func (n *node) elemsResult(dt ir.DType, shape []int, es []elem, build func() *ir.Value) *value {
	switch vs, ok := allKnown(es); {
	case ok:
		return n.knownElems(dt, shape, vs)
	case len(es) > elemLimit:
		return &value{v: build()}
	}
	return n.partial(build(), es)
}

// prune erases the ops made speculatively for partially known vectors
// (see partial) that nothing uses, newest first, with the constants only
// they used.
func (im *importer) prune() {
	for i := len(im.speculative) - 1; i >= 0; i-- {
		pruneOp(im.speculative[i])
	}
	im.speculative = nil
}

// pruneOp erases op when it is in a block and its results are unused,
// then the constants it alone used.
func pruneOp(op *ir.Op) {
	if op.Block() == nil {
		return
	}
	for _, r := range op.Results() {
		if len(r.Uses()) > 0 {
			return
		}
	}
	operands := append([]*ir.Value(nil), op.Operands()...)
	if op.Erase() != nil {
		return
	}
	for _, v := range operands {
		if d := v.Def(); d != nil && d.Name() == "constant" {
			pruneOp(d)
		}
	}
}
