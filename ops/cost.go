package ops

import (
	"github.com/gopir/gopir/ir"
)

// What an op costs and what it reads, for passes that move or repeat work
// (package remat recomputes values instead of keeping them).

// Flops estimates the work of one execution of op on operands of the
// static types in, giving results of types out: two per multiply-add for
// the ops that declare Def.Flops (matrix products and convolutions), and
// one per element read or written for every other op, whose kernels are
// bound by memory rather than arithmetic.
func Flops(op *ir.Op, in, out []ir.Type) int64 {
	if d, ok := defs[op.Name()]; ok && d.Flops != nil {
		return d.Flops(op, in, out)
	}
	return elements(in) + elements(out)
}

// elements counts the elements of the static tensors among ts.
func elements(ts []ir.Type) int64 {
	var n int64
	for _, t := range ts {
		if !t.IsStack() && t.IsStatic() {
			n += int64(t.NumElements())
		}
	}
	return n
}

// matmulFlops: 2·K per element of the product.
func matmulFlops(op *ir.Op, in, out []ir.Type) int64 {
	tx, ty, err := nnMatmulAttrs(op.Attrs)
	if err != nil || len(in) != 2 {
		return elements(in) + elements(out)
	}
	d, err := nnMatmulShape(in[0], in[1], tx, ty)
	if err != nil || d.k < 0 {
		return elements(in) + elements(out)
	}
	return 2 * int64(d.k) * elements(out)
}

// convFlops is the work of conv2d and its two gradients: each output
// element of the convolution (dy's elements for the gradients) takes
// C/groups·KH·KW multiply-adds, the filter's elements over O. The filter
// is operand 1 of conv2d and conv2d_grad_input, and the result of
// conv2d_grad_filter; the activation is conv2d's result and the
// gradients' operand 0.
func convFlops(op *ir.Op, in, out []ir.Type) int64 {
	if len(in) < 2 || len(out) != 1 {
		return elements(in) + elements(out)
	}
	act, filter := in[0], in[1]
	switch op.Name() {
	case "conv2d", "conv2d_fused", "conv2d_nchwc":
		act = out[0]
	case "conv2d_grad_filter":
		filter = out[0]
	}
	if act.Rank() != 4 || filter.Rank() != 4 || !act.IsStatic() || !filter.IsStatic() || filter.Dims[0] == 0 {
		return elements(in) + elements(out)
	}
	perOut := int64(filter.NumElements() / filter.Dims[0])
	if pool, _ := convPoolAttr(op.Attrs); pool && op.Name() == "conv2d_fused" {
		return 2 * perOut * int64(act.NumElements()) * 4 // out is the 2×2 pool of the convolution's result
	}
	return 2 * perOut * int64(act.NumElements())
}

// Reads returns the operands that result i of op reads: those that
// Def.Reads lists for it, or else every operand.
func Reads(op *ir.Op, i int) []int {
	if d, ok := defs[op.Name()]; ok && d.Reads != nil {
		if r := d.Reads(op); r != nil && i < len(r) {
			return r[i]
		}
	}
	all := make([]int, op.NumOperands())
	for j := range all {
		all[j] = j
	}
	return all
}

// batchNormReads: in training mode y reads x, scale and bias, the saved
// statistics x alone, and only the new running statistics read the old
// ones; in inference mode every result reads every operand.
func batchNormReads(op *ir.Op) [][]int {
	a, err := nnBNDecode(op.Attrs)
	if err != nil || !a.training {
		return nil
	}
	return [][]int{{0, 1, 2}, {0, 3}, {0, 4}, {0}, {0}}
}

// Pin returns op's attributes with its random stream fixed where the
// stream is keyed by the op's position in the program (Def.Pin), so that
// a copy placed elsewhere draws the same numbers; the attributes as they
// are for any other op.
func Pin(op *ir.Op) ir.Attrs {
	if d, ok := defs[op.Name()]; ok && d.Pin != nil {
		return d.Pin(op)
	}
	return op.Attrs
}

// Random reports whether op draws from a random stream (Def.Pin).
func Random(op *ir.Op) bool {
	d, ok := defs[op.Name()]
	return ok && d.Pin != nil
}

// streamAttr names the attribute that fixes a random op's stream key in
// place of its position.
const streamAttr = "stream"

// pinStream is the Def.Pin of an op whose key is key(op) unless pinned.
func pinStream(key func(*ir.Op) uint64) func(*ir.Op) ir.Attrs {
	return func(op *ir.Op) ir.Attrs {
		if op.Attrs.Has(streamAttr) {
			return op.Attrs
		}
		return op.Attrs.With(streamAttr, ir.Int(int64(key(op))))
	}
}

// streamKey is the stream attribute of op when it has one, else
// position(op).
func streamKey(op *ir.Op, position func(*ir.Op) uint64) (uint64, error) {
	if !op.Attrs.Has(streamAttr) {
		return position(op), nil
	}
	k, err := op.Attrs.Int(streamAttr)
	return uint64(k), err
}
