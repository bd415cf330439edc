package onnx

import (
	"context"
	"fmt"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// foldLimit bounds the elements of a value computed at import time: shape
// arithmetic is tiny, and a large constant belongs in the program, where
// it is made when needed and freed after its last use.
const foldLimit = 1 << 16

// fold computes n at import time when every given input is a constant
// (not a parameter, which training changes): it converts n with the same
// converter into a scratch program whose inputs are constants, runs it,
// and returns the outputs as known values. It reports false, and the node
// is converted into the program instead, when an input is not known, the
// op may not be folded, or anything about the scratch run fails or is too
// large (the conversion into the program then reports the problem, if it
// is one).
func (im *importer) fold(n *node, conv converter) ([]*value, bool) {
	if conv.noFold {
		return nil, false
	}
	for _, x := range n.in {
		if x != nil && (x.known == nil || x.known.Len() > foldLimit) {
			return nil, false
		}
	}
	p := ir.NewProgram()
	b := ir.NewBuilder(p)
	s := &scope{path: n.s.path, b: b, names: map[string]*value{}, consts: map[*tensor.Tensor]*ir.Value{}}
	scratch := &node{im: im, s: s, b: b, p: n.p, index: n.index, in: n.in}
	outs, err := conv.fn(scratch)
	if err != nil || scratch.finish() != nil || b.Err() != nil {
		return nil, false
	}
	for i, o := range outs {
		if o == nil {
			continue
		}
		if o.v == nil { // the converter found the answer itself
			continue
		}
		if o.v.Type().IsStack() {
			return nil, false
		}
		ops.Fetch(b, fmt.Sprint(i), o.v)
	}
	x, err := exec.Compile(p, exec.Options{Alloc: im.host, Threads: 1})
	if err != nil {
		return nil, false
	}
	res, err := x.Run(context.Background(), nil)
	if err != nil {
		return nil, false
	}
	defer res.Release()
	vals := make([]*value, len(outs))
	for i, o := range outs {
		switch {
		case o == nil:
		case o.v == nil:
			vals[i] = o
		default:
			t := res[fmt.Sprint(i)]
			if t.Len() > foldLimit {
				return nil, false
			}
			c, err := t.Clone(im.host)
			if err != nil {
				return nil, false
			}
			vals[i] = &value{known: im.keep(c)}
		}
	}
	return vals, true
}
