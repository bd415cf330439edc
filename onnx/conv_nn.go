package onnx

import (
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// Neural-network ops: matrix products, global pooling, normalization,
// softmax and dropout (convolution, windowed pooling and padding are in
// conv_spatial.go).

func init() {
	register(convMatMul, "MatMul")
	register(convGemm, "Gemm")
	register(convGlobalPool, "GlobalAveragePool", "GlobalMaxPool")
	register(convBatchNorm, "BatchNormalization")
	register(convSoftmax, "Softmax", "LogSoftmax")
	register(convDropout, "Dropout")
	register(convLayerNorm, "LayerNormalization")
	register(convInstanceNorm, "InstanceNormalization")
	register(convLRN, "LRN")
}

func convMatMul(n *node) ([]*value, error) {
	return outv(ops.Matmul(n.b, n.In(0), n.In(1), false, false)), nil
}

// convGemm: alpha·A'·B' + beta·C, with A' and B' optionally transposed and
// C broadcast.
func convGemm(n *node) ([]*value, error) {
	a, bm := n.In(0), n.In(1)
	alpha, beta := n.Float("alpha", 1), n.Float("beta", 1)
	ta, tb := n.Int("transA", 0) != 0, n.Int("transB", 0) != 0
	if n.Opset() < 7 {
		// broadcast=1 let C broadcast; numpy broadcasting accepts every C
		// that either rule does.
		n.Int("broadcast", 0)
	}
	dt := a.Type().DType
	y := ops.Matmul(n.b, a, bm, ta, tb)
	if alpha != 1 {
		y = ops.Multiply(n.b, y, scalar(n.b, dt, alpha))
	}
	if n.Has(2) && beta != 0 {
		c := n.In(2)
		if beta != 1 {
			c = ops.Multiply(n.b, c, scalar(n.b, dt, beta))
		}
		y = ops.Add(n.b, y, c)
	}
	return outv(y), nil
}

func convGlobalPool(n *node) ([]*value, error) {
	x := n.In(0)
	r := x.Type().Rank()
	axes := make([]int, 0, r-2)
	for i := 2; i < r; i++ {
		axes = append(axes, i)
	}
	if n.p.GetOpType() == "GlobalMaxPool" {
		return outv(ops.ReduceMax(n.b, x, axes, true)), nil
	}
	return outv(ops.ReduceMean(n.b, x, axes, true)), nil
}

// convBatchNorm: inference mode (the running statistics); training mode
// (opset 14's training_mode=1) is not supported by the importer.
func convBatchNorm(n *node) ([]*value, error) {
	if n.Int("training_mode", 0) != 0 {
		return nil, n.unsupported("training_mode=1")
	}
	eps := n.Float("epsilon", 1e-5)
	n.Float("momentum", 0.9) // only used in training mode
	if n.Opset() < 7 {
		n.Ints("consumed_inputs")
		n.Int("is_test", 0)
		n.Int("spatial", 1)
	} else if n.Opset() < 9 {
		if n.Int("spatial", 1) != 1 {
			return nil, n.unsupported("spatial=0")
		}
	}
	y, _, _, _, _ := ops.BatchNorm(n.b, n.In(0), n.In(1), n.In(2), n.In(3), n.In(4), eps, 0.1, false)
	return outv(y), nil
}

// convSoftmax: before opset 13 the input is seen as 2-D, the dims before
// axis times the dims from it; from 13 on softmax runs along one axis.
func convSoftmax(n *node) ([]*value, error) {
	x := n.In(0)
	r := x.Type().Rank()
	f := ops.Softmax
	if n.p.GetOpType() == "LogSoftmax" {
		f = ops.LogSoftmax
	}
	if n.Opset() >= 13 {
		return outv(f(n.b, x, n.axis(n.Int("axis", -1), r))), nil
	}
	axis := n.axis(n.Int("axis", 1), r)
	if axis == r-1 {
		return outv(f(n.b, x, -1)), nil
	}
	flat := ops.Flatten(n.b, x, axis, r-1)
	return outv(ops.ReshapeLike(n.b, f(n.b, flat, -1), x)), nil
}

// convDropout: at inference (training_mode absent or false), or in
// training mode with ratio 0, the output is the input and the mask all
// true. Training with a ratio above 0 draws random numbers that gopir
// cannot reproduce (ONNX's reference takes numpy's), so it is refused: at
// import when training_mode and ratio are known, else by a check that
// refuses the run when their values ask for it.
func convDropout(n *node) ([]*value, error) {
	n.Int("seed", 0)
	n.Float("ratio", 0.5)
	if n.Opset() < 7 {
		n.Int("is_test", 0)
	}
	const why = "Dropout in training mode with a ratio above 0 (its random draws cannot be reproduced)"
	if n.Has(2) {
		b := n.b
		training, trainingKnown := n.Known(2)
		ratio, ratioKnown := n.Known(1)
		switch {
		case trainingKnown && training.Len() != 1, ratioKnown && ratio.Len() != 1:
			n.fail("ratio and training_mode must hold one element each")
			return nil, nil
		case trainingKnown && training.Float64At(0) == 0:
		case !n.Has(1) || ratioKnown && ratio.Float64At(0) != 0:
			if trainingKnown {
				return nil, n.unsupported("%s", why)
			}
			ops.Check(b, scalarOf(b, n.In(2)), why)
		case ratioKnown:
			// Ratio 0: nothing is dropped.
		default:
			r := scalarOf(b, n.In(1))
			active := ops.GreaterThan(b, r, ops.Full(b, r.Type().DType, 0))
			if !trainingKnown {
				active = ops.LogicalAnd(b, active, scalarOf(b, n.In(2)))
			}
			ops.Check(b, active, why)
		}
	}
	x := n.In(0)
	outs := []*value{n.in[0]}
	if len(n.p.GetOutput()) > 1 {
		outs = append(outs, &value{v: ops.FullLike(n.b, x, 1, ir.I1)})
	}
	return outs, nil
}

// convLayerNorm: normalization over the dims from axis, with scale and an
// optional bias; Mean and InvStdDev outputs when asked.
func convLayerNorm(n *node) ([]*value, error) {
	x := n.In(0)
	r := x.Type().Rank()
	axis := n.axis(n.Int("axis", -1), r)
	eps := n.Float("epsilon", 1e-5)
	if n.Int("stash_type", 1) != 1 {
		return nil, n.unsupported("stash_type other than 1")
	}
	scale := n.In(1)
	var bias *ir.Value
	if n.Has(2) {
		bias = n.In(2)
	} else {
		bias = ops.FullLike(n.b, scale, 0, ir.InvalidDType)
	}
	y, mean, inv := ops.LayerNorm(n.b, x, scale, bias, eps, axis)
	// ONNX keeps the normalized dims as 1s in Mean and InvStdDev.
	keep := func(v *ir.Value) *ir.Value {
		axes := make([]int, 0, r-axis)
		for i := axis; i < r; i++ {
			axes = append(axes, i)
		}
		return ops.Unsqueeze(n.b, v, axes...)
	}
	outs := out(y)
	if o := n.p.GetOutput(); len(o) > 1 && o[1] != "" {
		outs = append(outs, &value{v: keep(mean)})
	}
	if o := n.p.GetOutput(); len(o) > 2 && o[2] != "" {
		for len(outs) < 2 {
			outs = append(outs, nil)
		}
		outs = append(outs, &value{v: keep(inv)})
	}
	return outs, nil
}

// convInstanceNorm normalizes each (sample, channel) over its spatial
// dims: (x − mean)/√(var + ε)·scale + bias, the variance biased, built
// from reductions.
func convInstanceNorm(n *node) ([]*value, error) {
	if n.Opset() < 6 {
		n.Ints("consumed_inputs")
	}
	x, scale, bias := n.In(0), n.In(1), n.In(2)
	r := n.rank(0)
	if r < 3 {
		n.fail("input %s has no spatial dims", x.Type())
		return nil, nil
	}
	eps := n.Float("epsilon", 1e-5)
	axes := make([]int, 0, r-2)
	for i := 2; i < r; i++ {
		axes = append(axes, i)
	}
	dt := x.Type().DType
	d := ops.Subtract(n.b, x, ops.ReduceMean(n.b, x, axes, true))
	v := ops.ReduceMean(n.b, ops.Square(n.b, d), axes, true)
	y := ops.Multiply(n.b, d, ops.Rsqrt(n.b, ops.Add(n.b, v, scalar(n.b, dt, eps))))
	shape := append([]int{-1}, ones(r-2)...)
	y = ops.Multiply(n.b, y, ops.Reshape(n.b, scale, shape...))
	return outv(ops.Add(n.b, y, ops.Reshape(n.b, bias, shape...))), nil
}

// convLRN: x / (bias + alpha/size · Σ x²)^beta, the sum over the channels
// c − ⌊(size−1)/2⌋ … c + ⌈(size−1)/2⌉ that exist, as a sum of shifted
// slices of the zero-padded squares. It needs a static channel dim.
func convLRN(n *node) ([]*value, error) {
	x := n.In(0)
	t := x.Type()
	size := int(n.Int("size", 0))
	alpha, beta, bias := n.Float("alpha", 1e-4), n.Float("beta", 0.75), n.Float("bias", 1)
	if size < 1 {
		n.fail("size %d must be at least 1", size)
		return nil, nil
	}
	if t.Rank() < 2 {
		n.fail("input %s has no channel dim", t)
		return nil, nil
	}
	c := t.Dims[1]
	if c == ir.Dynamic {
		return nil, n.unsupported("input %s with a dynamic channel dim", t)
	}
	r := t.Rank()
	before := (size - 1) / 2
	pads := make([]int, 2*r)
	pads[1], pads[r+1] = before, size-1-before
	sq := ops.Pad(n.b, ops.Square(n.b, x), pads, "constant", 0)
	var sum *ir.Value
	for i := range size {
		s := ops.Slice(n.b, sq, []int{1}, []int{i}, []int{i + c})
		if sum == nil {
			sum = s
		} else {
			sum = ops.Add(n.b, sum, s)
		}
	}
	den := ops.Scale(n.b, sum, alpha/float64(size), bias)
	den = ops.Pow(n.b, den, scalar(n.b, t.DType, beta))
	return outv(ops.Divide(n.b, x, den)), nil
}
