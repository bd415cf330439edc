package ops

import (
	"math"
	"slices"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
)

// NCHWcBlock is the channel block the blocked layout's vector kernels
// take on this machine and build (16 with AVX-512), or 0 where there are
// none: there the layout computes the same values, only slower.
func NCHWcBlock() int { return kernels.NCHWcBlock() }

// NCHWcForm is how an op computes its result on the blocked channel
// layout (NCHWc) with channel block b (8 or 16): a float32 value
// N×C×H×W, C a multiple of b, held as N×(C/b)×H×W×b, each pixel's
// channels of one block side by side. Def.NCHWc gives it; package
// optimize's nchwc pass uses it to keep the values between convolutions
// blocked and to reorder only at the edges of the blocked part of a
// program.
//
// Two kinds of ops have a form. Ops that do not care how channels are
// laid out run on blocked operands as they are, with their own name and
// attributes (or the attributes rewritten for rank 5): the elementwise
// ops on operands of one shape or with a [N,C,1,1]-style operand (which,
// blocked, is [N,C/b,1,1,b] and broadcasts the same way), concat along
// the channels of whole blocks, reduce_mean over the spatial axes. Ops
// with a blocked twin run as that op: conv2d and conv2d_fused as
// conv2d_nchwc, max_pool2d_values as max_pool2d_nchwc, resize nearest by
// whole factors as upsample_nearest_nchwc. Either way the form's result is
// op's result blocked.
type NCHWcForm struct {
	// Op and Attrs are the op that computes op's result blocked.
	Op    string
	Attrs ir.Attrs
	// Blocked lists the operands the form reads blocked; it reads the
	// others as op does (a convolution's weights and bias, or its input
	// when that has a channel count the layout does not hold: the first
	// layer's three colours).
	Blocked []int
	// Anchor marks forms worth their reorders: a blocked convolution reads
	// its input in place whatever the stride, with no im2col. The pass
	// makes a part of the program blocked around anchors only; the other
	// forms carry the layout between them.
	Anchor bool
}

// nchwcChannels reports whether t is an f32 NCHW tensor whose channels
// the blocked layout with block b holds: a static multiple of b.
func nchwcChannels(t ir.Type, b int) bool {
	return !t.IsStack() && !t.Unranked && t.DType == ir.F32 && t.Rank() == 4 &&
		t.Dims[1] != ir.Dynamic && t.Dims[1] > 0 && t.Dims[1]%b == 0
}

// nchwcSame is the form of an op that runs blocked as it is, reading
// every operand blocked.
func nchwcSame(op *ir.Op, attrs ir.Attrs) NCHWcForm {
	all := make([]int, op.NumOperands())
	for i := range all {
		all[i] = i
	}
	return NCHWcForm{Op: op.Name(), Attrs: attrs, Blocked: all}
}

// nchwcUnary is the form of an elementwise op of one operand.
func nchwcUnary(op *ir.Op, b int) (NCHWcForm, bool) {
	if op.NumOperands() != 1 || op.NumResults() != 1 || !nchwcChannels(op.Operand(0).Type(), b) {
		return NCHWcForm{}, false
	}
	return nchwcSame(op, op.Attrs), true
}

// nchwcBinary is the form of an elementwise op of two operands that both
// have the result's channels and, on the other axes, its size or 1: the
// blocked operands then broadcast as the NCHW ones did.
func nchwcBinary(op *ir.Op, b int) (NCHWcForm, bool) {
	if op.NumOperands() != 2 || op.NumResults() != 1 {
		return NCHWcForm{}, false
	}
	out := op.Result(0).Type()
	if !nchwcChannels(out, b) {
		return NCHWcForm{}, false
	}
	for _, v := range op.Operands() {
		t := v.Type()
		if !nchwcChannels(t, b) || t.Dims[1] != out.Dims[1] {
			return NCHWcForm{}, false
		}
		for _, k := range []int{0, 2, 3} {
			if t.Dims[k] != out.Dims[k] && t.Dims[k] != 1 {
				return NCHWcForm{}, false
			}
		}
	}
	return nchwcSame(op, op.Attrs), true
}

// nchwcConcat is the form of concat along the channels of operands whose
// channels are all whole blocks: the blocks concatenate along axis 1.
func nchwcConcat(op *ir.Op, b int) (NCHWcForm, bool) {
	if op.NumOperands() == 0 || op.NumResults() != 1 {
		return NCHWcForm{}, false
	}
	if axis, err := shpAxis(op.Attrs, "axis", 0, op.Operand(0).Type().Dims); err != nil || axis != 1 {
		return NCHWcForm{}, false
	}
	for _, v := range op.Operands() {
		if !nchwcChannels(v.Type(), b) {
			return NCHWcForm{}, false
		}
	}
	return nchwcSame(op, op.Attrs.With("axis", ir.Int(1))), true
}

// nchwcSpatialMean is the form of reduce_mean over the spatial axes,
// keeping them: blocked, the same axes of N×(C/b)×H×W×b.
func nchwcSpatialMean(op *ir.Op, b int) (NCHWcForm, bool) {
	if op.NumOperands() != 1 || op.NumResults() != 1 || !nchwcChannels(op.Operand(0).Type(), b) {
		return NCHWcForm{}, false
	}
	axes, err := redAxes(op.Attrs, op.Operand(0).Type())
	if err != nil {
		return NCHWcForm{}, false
	}
	if axes, err = shpAxes("axes", axes, 4); err != nil || !slices.Equal(axes, []int{2, 3}) {
		return NCHWcForm{}, false
	}
	if keep, err := ewOptBool(op.Attrs, "keepdim", false); err != nil || !keep {
		return NCHWcForm{}, false
	}
	return nchwcSame(op, op.Attrs.With("axes", nnIntList([]int{2, 3}))), true
}

// nchwcConv is the form of conv2d and conv2d_fused that
// kernels.ConvNCHWcCheck accepts: conv2d_nchwc with the same attributes,
// reading x blocked when its channels are whole blocks (else in NCHW) and
// a residual blocked.
func nchwcConv(op *ir.Op, b int) (NCHWcForm, bool) {
	if op.NumOperands() < 2 || op.NumResults() != 1 {
		return NCHWcForm{}, false
	}
	x, w := op.Operand(0).Type(), op.Operand(1).Type()
	if x.IsStack() || x.Unranked || x.DType != ir.F32 || x.Rank() != 4 || x.Dims[1] == ir.Dynamic ||
		!w.IsStatic() || w.Rank() != 4 {
		return NCHWcForm{}, false
	}
	e, a, err := convFusedDecode(op.Attrs)
	if err != nil {
		return NCHWcForm{}, false
	}
	if pool, err := convPoolAttr(op.Attrs); err != nil || pool {
		return NCHWcForm{}, false
	}
	blockedIn := nchwcChannels(x, b)
	p := kernels.Conv2DParams{C: x.Dims[1], O: w.Dims[0], DH: a.dilations[0], DW: a.dilations[1], Groups: a.groups}
	if kernels.ConvNCHWcCheck(p, b, blockedIn) != nil {
		return NCHWcForm{}, false
	}
	attrs := slices.DeleteFunc(slices.Clone(op.Attrs), func(a ir.NamedAttr) bool { return a.Name == "pool" })
	f := NCHWcForm{Op: "conv2d_nchwc", Attrs: attrs, Anchor: true}
	if blockedIn {
		f.Blocked = append(f.Blocked, 0)
	} else {
		f.Attrs = f.Attrs.With("block", ir.Int(b))
	}
	if e.residual {
		f.Blocked = append(f.Blocked, e.operands()-1)
	}
	return f, true
}

// nchwcMaxPool is the form of max_pool2d_values: max_pool2d_nchwc with
// the same window.
func nchwcMaxPool(op *ir.Op, b int) (NCHWcForm, bool) {
	if op.NumOperands() != 1 || op.NumResults() != 1 || !nchwcChannels(op.Operand(0).Type(), b) {
		return NCHWcForm{}, false
	}
	if _, err := nnPoolDecode(op.Attrs); err != nil {
		return NCHWcForm{}, false
	}
	return NCHWcForm{Op: "max_pool2d_nchwc", Attrs: op.Attrs, Blocked: []int{0}}, true
}

// nchwcResize is the form of resize that repeats each pixel over a
// whole-factor square: nearest, asymmetric coordinates, floor rounding,
// both spatial axes resized by integral scales to sizes that are the
// input's times the scales (the source row of output row o is then
// ⌊o/s⌋ = o div s exactly). It is upsample_nearest_nchwc by those
// factors.
func nchwcResize(op *ir.Op, b int) (NCHWcForm, bool) {
	if op.NumOperands() != 1 || op.NumResults() != 1 {
		return NCHWcForm{}, false
	}
	x := op.Operand(0).Type()
	if !nchwcChannels(x, b) || x.Dims[2] == ir.Dynamic || x.Dims[3] == ir.Dynamic {
		return NCHWcForm{}, false
	}
	a, err := resizeDecode(op.Attrs, 4)
	if err != nil || a.spec.Mode != kernels.ResizeNearest || a.spec.Transform != kernels.Asymmetric ||
		a.spec.Nearest != kernels.Floor || !slices.Equal(a.axes, []int{2, 3}) {
		return NCHWcForm{}, false
	}
	var factors [2]int
	for i, s := range a.scales {
		f := int(s)
		if s != math.Trunc(s) || f < 1 || a.sizes[i] != x.Dims[2+i]*f {
			return NCHWcForm{}, false
		}
		factors[i] = f
	}
	attrs := ir.Attrs{{Name: "factors", Value: nnIntList(factors[:])}}
	return NCHWcForm{Op: "upsample_nearest_nchwc", Attrs: attrs, Blocked: []int{0}}, true
}
