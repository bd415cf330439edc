package onnx

import (
	"slices"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// Neural-network ops: matrix products, convolution, pooling,
// normalization, softmax and dropout.

func init() {
	register(convMatMul, "MatMul")
	register(convGemm, "Gemm")
	register(convConv, "Conv")
	register(convPool, "MaxPool", "AveragePool")
	register(convGlobalPool, "GlobalAveragePool", "GlobalMaxPool")
	register(convBatchNorm, "BatchNormalization")
	register(convSoftmax, "Softmax", "LogSoftmax")
	register(convDropout, "Dropout")
	register(convLayerNorm, "LayerNormalization")
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

// spatial reads the attributes that Conv and the pools share, for a 2-D
// input of spatial dims hw and a window of size kernel (dilated): strides,
// dilations and pads, resolving auto_pad. gopir pads both sides alike, so
// asymmetric padding is refused.
func (n *node) spatial(hw, kernel []int, withDilations bool) (strides, dilations, pads []int, ok bool) {
	k := len(kernel)
	strides = n.ints(n.Ints("strides"))
	if strides == nil {
		strides = ones(k)
	}
	dilations = ones(k)
	if withDilations {
		if d := n.Ints("dilations"); d != nil {
			dilations = n.ints(d)
		}
	}
	p := n.ints(n.Ints("pads"))
	switch ap := n.String("auto_pad", "NOTSET"); ap {
	case "NOTSET":
		if p == nil {
			p = make([]int, 2*k)
		}
	case "VALID":
		p = make([]int, 2*k)
	case "SAME_UPPER", "SAME_LOWER":
		p = make([]int, 2*k)
		for i := range k {
			if hw[i] == ir.Dynamic {
				n.fail("auto_pad %s needs static spatial dims", ap)
				return nil, nil, nil, false
			}
			outDim := (hw[i] + strides[i] - 1) / strides[i]
			total := max(0, (outDim-1)*strides[i]+(kernel[i]-1)*dilations[i]+1-hw[i])
			small, big := total/2, total-total/2
			if ap == "SAME_UPPER" {
				p[i], p[i+k] = small, big
			} else {
				p[i], p[i+k] = big, small
			}
		}
	default:
		n.fail("auto_pad %q", ap)
		return nil, nil, nil, false
	}
	if len(strides) != k || len(dilations) != k || len(p) != 2*k {
		n.fail("strides, dilations and pads do not match a %d-D window", k)
		return nil, nil, nil, false
	}
	pads = p[:k]
	if !slices.Equal(p[:k], p[k:]) {
		n.err = n.unsupported("asymmetric pads %v", p)
		return nil, nil, nil, false
	}
	return strides, dilations, pads, true
}

func ones(k int) []int {
	s := make([]int, k)
	for i := range s {
		s[i] = 1
	}
	return s
}

// convConv: 2-D convolution (NCHW), with an optional bias.
func convConv(n *node) ([]*value, error) {
	x, w := n.In(0), n.In(1)
	xt, wt := x.Type(), w.Type()
	if xt.Rank() != 4 || wt.Rank() != 4 {
		return nil, n.unsupported("%d-D convolution", xt.Rank()-2)
	}
	kernel := wt.Dims[2:]
	if ks := n.Ints("kernel_shape"); ks != nil && !slices.Equal(n.ints(ks), kernel) {
		n.fail("kernel_shape %v does not match the weights %s", ks, wt)
		return nil, nil
	}
	strides, dil, pads, ok := n.spatial(xt.Dims[2:], kernel, true)
	if !ok {
		return nil, nil
	}
	y := ops.Conv2D(n.b, x, w, strides, pads, dil, int(n.Int("group", 1)))
	if n.Has(2) {
		y = ops.Add(n.b, y, ops.Reshape(n.b, n.In(2), -1, 1, 1))
	}
	return outv(y), nil
}

// convPool: 2-D max and average pooling. gopir's windows never cover only
// padding and average pooling leaves padding out of the count (ONNX's
// count_include_pad=0); ceil_mode, dilations and storage_order are not
// supported.
func convPool(n *node) ([]*value, error) {
	x := n.In(0)
	xt := x.Type()
	kernel := n.ints(n.Ints("kernel_shape"))
	if xt.Rank() != 4 || len(kernel) != 2 {
		return nil, n.unsupported("%d-D pooling", len(kernel))
	}
	if n.Int("ceil_mode", 0) != 0 {
		return nil, n.unsupported("ceil_mode=1")
	}
	isMax := n.p.GetOpType() == "MaxPool"
	if isMax {
		if n.Int("storage_order", 0) != 0 {
			return nil, n.unsupported("storage_order=1")
		}
	} else if n.Int("count_include_pad", 0) != 0 {
		return nil, n.unsupported("count_include_pad=1")
	}
	strides, dil, pads, ok := n.spatial(xt.Dims[2:], kernel, isMax)
	if !ok {
		return nil, nil
	}
	if !slices.Equal(dil, ones(2)) {
		return nil, n.unsupported("dilations %v", dil)
	}
	for i, p := range pads {
		if p > kernel[i]/2 {
			return nil, n.unsupported("pads %v larger than half the window %v", pads, kernel)
		}
	}
	if isMax {
		if len(n.p.GetOutput()) > 1 && n.p.GetOutput()[1] != "" {
			return nil, n.unsupported("the Indices output")
		}
		y, _ := ops.MaxPool2D(n.b, x, kernel, strides, pads)
		return outv(y), nil
	}
	return outv(ops.AvgPool2D(n.b, x, kernel, strides, pads)), nil
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

// convDropout: at inference (training_mode absent or false) the output is
// the input and the mask all true.
func convDropout(n *node) ([]*value, error) {
	if n.Has(2) {
		if t, ok := n.Known(2); !ok || t.Len() != 1 || t.Float64At(0) != 0 {
			return nil, n.unsupported("training mode")
		}
	}
	n.Int("seed", 0)
	n.Float("ratio", 0.5)
	if n.Opset() < 7 {
		n.Int("is_test", 0)
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
