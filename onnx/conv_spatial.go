package onnx

import (
	"slices"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Ops over spatial dims: convolution (1-D, 2-D, 3-D), transposed
// convolution, windowed pooling, padding, and the moves between depth and
// space.
//
// gopir's conv2d pads both sides alike, so asymmetric padding is a pad op
// before it. 1-D convolutions run as 2-D ones over a size-1 dim; 3-D ones
// as a sum over the kernel's depth of 2-D convolutions of depth slices,
// and transposed ones through conv2d_grad_input (exactly a transposed
// convolution), so that everything differentiates with conv2d's kernels.

func init() {
	register(convConv, "Conv")
	register(convConvTranspose, "ConvTranspose")
	register(convPool, "MaxPool", "AveragePool")
	register(convPad, "Pad")
	register(convDepthToSpace, "DepthToSpace")
	register(convSpaceToDepth, "SpaceToDepth")
}

// spatial reads the attributes that Conv and the pools share, for spatial
// dims in and a window of size kernel: strides, dilations and pads (the k
// amounts before each dim, then the k after), resolving auto_pad.
func (n *node) spatial(in, kernel []int) (strides, dilations, pads []int, ok bool) {
	k := len(kernel)
	strides = n.ints(n.Ints("strides"))
	if strides == nil {
		strides = ones(k)
	}
	dilations = ones(k)
	if d := n.Ints("dilations"); d != nil {
		dilations = n.ints(d)
	}
	if len(strides) != k || len(dilations) != k {
		n.fail("strides %v and dilations %v do not match a %d-D window", strides, dilations, k)
		return nil, nil, nil, false
	}
	if slices.Min(append(slices.Clone(strides), dilations...)) < 1 {
		n.fail("strides %v and dilations %v must be at least 1", strides, dilations)
		return nil, nil, nil, false
	}
	pads = n.ints(n.Ints("pads"))
	switch ap := n.String("auto_pad", "NOTSET"); ap {
	case "NOTSET":
		if pads == nil {
			pads = make([]int, 2*k)
		}
	case "VALID":
		pads = make([]int, 2*k)
	case "SAME_UPPER", "SAME_LOWER":
		pads = make([]int, 2*k)
		for i := range k {
			if in[i] == ir.Dynamic {
				n.err = n.unsupported("auto_pad %s over dynamic spatial dims", ap)
				return nil, nil, nil, false
			}
			outDim := (in[i] + strides[i] - 1) / strides[i]
			total := max(0, (outDim-1)*strides[i]+(kernel[i]-1)*dilations[i]+1-in[i])
			small, big := total/2, total-total/2
			if ap == "SAME_UPPER" {
				pads[i], pads[i+k] = small, big
			} else {
				pads[i], pads[i+k] = big, small
			}
		}
	default:
		n.fail("auto_pad %q", ap)
		return nil, nil, nil, false
	}
	if len(pads) != 2*k {
		n.fail("pads %v do not match a %d-D window", pads, k)
		return nil, nil, nil, false
	}
	if slices.Min(pads) < 0 {
		n.fail("pads %v are negative", pads)
		return nil, nil, nil, false
	}
	return strides, dilations, pads, true
}

func ones(k int) []int { return slices.Repeat([]int{1}, k) }

// symmetric splits pads (befores, then afters) into what both sides share
// and the extra amounts a pad op must add first (in pad's layout, with
// zeros for the batch and channel dims).
func symmetric(pads []int) (sym, extra []int, any bool) {
	k := len(pads) / 2
	sym = make([]int, k)
	extra = make([]int, 2*(k+2))
	for i := range k {
		sym[i] = min(pads[i], pads[k+i])
		extra[2+i], extra[k+4+i] = pads[i]-sym[i], pads[k+i]-sym[i]
		any = any || extra[2+i] != 0 || extra[k+4+i] != 0
	}
	return sym, extra, any
}

// conv2d appends a 2-D convolution with possibly asymmetric pads.
func conv2d(b *ir.Builder, x, w *ir.Value, strides, dilations, pads []int, group int) *ir.Value {
	sym, extra, asym := symmetric(pads)
	if asym {
		x = ops.Pad(b, x, extra, "constant", 0)
	}
	return ops.Conv2D(b, x, w, strides, sym, dilations, group)
}

// convConv: 1-D, 2-D and 3-D convolution (N×C×…), with an optional bias.
func convConv(n *node) ([]*value, error) {
	x, w := n.In(0), n.In(1)
	xt, wt := x.Type(), w.Type()
	k := xt.Rank() - 2
	if k < 1 || k > 3 {
		return nil, n.unsupported("%d-D convolution", k)
	}
	if wt.Rank() != k+2 {
		n.fail("weights %s do not match input %s", wt, xt)
		return nil, nil
	}
	kernel := wt.Dims[2:]
	if slices.Contains(kernel, ir.Dynamic) {
		return nil, n.unsupported("weights %s of dynamic size", wt)
	}
	if ks := n.Ints("kernel_shape"); ks != nil && !slices.Equal(n.ints(ks), kernel) {
		n.fail("kernel_shape %v does not match the weights %s", ks, wt)
		return nil, nil
	}
	strides, dil, pads, ok := n.spatial(xt.Dims[2:], kernel)
	if !ok {
		return nil, nil
	}
	group := int(n.Int("group", 1))
	var y *ir.Value
	switch k {
	case 1:
		y = conv2d(n.b, ops.Unsqueeze(n.b, x, 2), ops.Unsqueeze(n.b, w, 2),
			[]int{1, strides[0]}, []int{1, dil[0]}, []int{0, pads[0], 0, pads[1]}, group)
		y = ops.Squeeze(n.b, y, 2)
	case 2:
		y = conv2d(n.b, x, w, strides, dil, pads, group)
	case 3:
		if y = n.conv3d(x, w, strides, dil, pads, group); y == nil {
			return nil, n.err
		}
	}
	if n.Has(2) {
		y = ops.Add(n.b, y, ops.Reshape(n.b, n.In(2), append([]int{-1}, ones(k)...)...))
	}
	return outv(y), nil
}

// conv3d: the sum over the kernel's depth index kd of the 2-D
// convolutions of the depth slices kd·dd, kd·dd+sd, … of the (padded)
// input, taken as a batch, with the weights' slice kd. It needs static
// channel and spatial dims.
func (n *node) conv3d(x, w *ir.Value, strides, dil, pads []int, group int) *ir.Value {
	xt, wt := x.Type(), w.Type()
	if slices.Contains(xt.Dims[1:], ir.Dynamic) || !wt.IsStatic() {
		n.err = n.unsupported("3-D convolution of %s with %s (dynamic dims)", xt, wt)
		return nil
	}
	// Pad depth on both sides, height and width by what conv2d cannot.
	hw := []int{pads[1], pads[2], pads[4], pads[5]}
	sym, extra, _ := symmetric(hw)
	all := []int{0, 0, pads[0], extra[2], extra[3], 0, 0, pads[3], extra[6], extra[7]}
	if slices.ContainsFunc(all, func(p int) bool { return p != 0 }) {
		x = ops.Pad(n.b, x, all, "constant", 0)
	}
	d := x.Type().Dims
	c, depth, h, wd := d[1], d[2], d[3], d[4]
	o, cg, kd, kh, kw := wt.Dims[0], wt.Dims[1], wt.Dims[2], wt.Dims[3], wt.Dims[4]
	span := dil[0]*(kd-1) + 1
	if depth < span {
		n.fail("the padded depth %d is smaller than the kernel's %d", depth, span)
		return nil
	}
	od := (depth-span)/strides[0] + 1
	xd := ops.Transpose(n.b, x, 0, 2, 1, 3, 4) // N×D×C×H×W
	var acc *ir.Value
	for i := range kd {
		start := i * dil[0]
		xs := ops.SliceStrided(n.b, xd, []int{1}, []int{start}, []int{start + (od-1)*strides[0] + 1}, []int{strides[0]})
		xs = ops.Reshape(n.b, xs, -1, c, h, wd)
		wi := ops.Reshape(n.b, ops.Slice(n.b, w, []int{2}, []int{i}, []int{i + 1}), o, cg, kh, kw)
		y := ops.Conv2D(n.b, xs, wi, strides[1:], sym, dil[1:], group)
		if acc == nil {
			acc = y
		} else {
			acc = ops.Add(n.b, acc, y)
		}
	}
	yd := acc.Type().Dims
	y := ops.Reshape(n.b, acc, -1, od, o, yd[2], yd[3])
	return ops.Transpose(n.b, y, 0, 2, 1, 3, 4)
}

// floorDiv2 is ⌊v/2⌋, for negative v too.
func floorDiv2(v int) int {
	if v < 0 {
		return -((-v + 1) / 2)
	}
	return v / 2
}

// convConvTranspose: 1-D, 2-D and 3-D transposed convolution. Window i of
// the input adds w·x[i] at output positions i·s + j·d − pads_begin; the
// output size comes from pads, auto_pad or output_shape (whose total
// padding ONNX splits as its spec says: half, rounded down, before for
// SAME_UPPER, after otherwise), plus output_padding.
func convConvTranspose(n *node) ([]*value, error) {
	x, w := n.In(0), n.In(1)
	xt, wt := x.Type(), w.Type()
	k := xt.Rank() - 2
	if k < 1 || k > 3 {
		return nil, n.unsupported("%d-D transposed convolution", k)
	}
	if wt.Rank() != k+2 {
		n.fail("weights %s do not match input %s", wt, xt)
		return nil, nil
	}
	if slices.Contains(xt.Dims[2:], ir.Dynamic) || !wt.IsStatic() {
		return nil, n.unsupported("transposed convolution of %s with %s (dynamic dims)", xt, wt)
	}
	in, kernel := xt.Dims[2:], wt.Dims[2:]
	if ks := n.Ints("kernel_shape"); ks != nil && !slices.Equal(n.ints(ks), kernel) {
		n.fail("kernel_shape %v does not match the weights %s", ks, wt)
		return nil, nil
	}
	strides := n.ints(n.Ints("strides"))
	if strides == nil {
		strides = ones(k)
	}
	dil := ones(k)
	if d := n.Ints("dilations"); d != nil {
		dil = n.ints(d)
	}
	outPad := make([]int, k)
	if op := n.Ints("output_padding"); op != nil {
		outPad = n.ints(op)
	}
	if len(strides) != k || len(dil) != k || len(outPad) != k || slices.Min(append(slices.Clone(strides), dil...)) < 1 || slices.Min(outPad) < 0 {
		n.fail("strides %v, dilations %v and output_padding %v do not fit a %d-D window", strides, dil, outPad, k)
		return nil, nil
	}
	pads := n.ints(n.Ints("pads"))
	outShape := n.ints(n.Ints("output_shape"))
	autoPad := n.String("auto_pad", "NOTSET")
	group := int(n.Int("group", 1))
	begin, out := make([]int, k), make([]int, k)
	for i := range k {
		full := strides[i]*(in[i]-1) + dil[i]*(kernel[i]-1) + 1 + outPad[i]
		var total int
		switch {
		case outShape != nil:
			if len(outShape) != k && len(outShape) != k+2 {
				n.fail("output_shape %v does not fit a %d-D input", outShape, k)
				return nil, nil
			}
			out[i] = outShape[len(outShape)-k+i]
			total = full - out[i]
		case autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER":
			out[i] = in[i] * strides[i]
			total = full - out[i]
		case autoPad == "VALID":
			out[i] = full
		case autoPad == "NOTSET":
			if pads == nil {
				out[i] = full
				break
			}
			if len(pads) != 2*k || pads[i] < 0 || pads[k+i] < 0 {
				n.fail("pads %v do not fit a %d-D window", pads, k)
				return nil, nil
			}
			begin[i] = pads[i]
			out[i] = full - pads[i] - pads[k+i]
			continue
		default:
			n.fail("auto_pad %q", autoPad)
			return nil, nil
		}
		if outShape != nil || autoPad != "VALID" {
			if autoPad == "SAME_UPPER" {
				begin[i] = floorDiv2(total)
			} else {
				begin[i] = total - floorDiv2(total)
			}
		}
		if out[i] < 0 {
			n.fail("output size %d is negative", out[i])
			return nil, nil
		}
	}
	var y *ir.Value
	switch k {
	case 1:
		y = convTranspose2d(n.b, ops.Unsqueeze(n.b, x, 2), ops.Unsqueeze(n.b, w, 2),
			[]int{1, strides[0]}, []int{1, dil[0]}, []int{0, begin[0]}, []int{1, out[0]}, group)
		y = ops.Squeeze(n.b, y, 2)
	case 2:
		y = convTranspose2d(n.b, x, w, strides, dil, begin, out, group)
	case 3:
		if y = n.convTranspose3d(x, w, strides, dil, begin, out, group); y == nil {
			return nil, n.err
		}
	}
	if n.Has(2) {
		y = ops.Add(n.b, y, ops.Reshape(n.b, n.In(2), append([]int{-1}, ones(k)...)...))
	}
	return outv(y), nil
}

// convTranspose2d appends a 2-D transposed convolution of x (N×C×H×W)
// with w (C×O/group×KH×KW) whose output has spatial size out and starts at
// position begin of the full result (negative: zeros first). It runs
// conv2d_grad_input with the padding both ends crop and an input size in
// its valid range, then crops or extends the rest with a pad op.
func convTranspose2d(b *ir.Builder, x, w *ir.Value, strides, dil, begin, out []int, group int) *ir.Value {
	in, kernel := x.Type().Dims[2:], w.Type().Dims[2:]
	p, size := make([]int, 2), make([]int, 2)
	pads := make([]int, 8)
	for i := range 2 {
		full := strides[i]*(in[i]-1) + dil[i]*(kernel[i]-1) + 1
		end := full - begin[i] - out[i] // what the end crops
		p[i] = max(0, min(begin[i], end))
		lo := full - 2*p[i]
		size[i] = min(max(out[i]+begin[i]-p[i], lo), lo+strides[i]-1)
		pads[2+i] = p[i] - begin[i]
		pads[6+i] = out[i] - size[i] - pads[2+i]
	}
	attrs := ir.A("strides", strides, "paddings", p, "dilations", dil, "groups", group, "input_size", size)
	y := b.Op1("conv2d_grad_input", attrs, x, w)
	if slices.ContainsFunc(pads, func(v int) bool { return v != 0 }) {
		y = ops.Pad(b, y, pads, "constant", 0)
	}
	return y
}

// convTranspose3d: for each depth index kd of the kernel, the 2-D
// transposed convolution of every input depth slice (as a batch) with the
// weights' slice kd, spread along depth with stride sd and shifted by
// kd·dd − begin; the sum over kd. It needs static dims but the batch.
func (n *node) convTranspose3d(x, w *ir.Value, strides, dil, begin, out []int, group int) *ir.Value {
	xt, wt := x.Type(), w.Type()
	if slices.Contains(xt.Dims[1:], ir.Dynamic) {
		n.err = n.unsupported("3-D transposed convolution of %s (dynamic dims)", xt)
		return nil
	}
	c, depth, h, wd := xt.Dims[1], xt.Dims[2], xt.Dims[3], xt.Dims[4]
	cw, og, kd, kh, kw := wt.Dims[0], wt.Dims[1], wt.Dims[2], wt.Dims[3], wt.Dims[4]
	if cw != c || group < 1 || c%group != 0 {
		n.fail("weights %s do not fit input %s with group %d", wt, xt, group)
		return nil
	}
	o := og * group
	xr := ops.Reshape(n.b, ops.Transpose(n.b, x, 0, 2, 1, 3, 4), -1, c, h, wd) // (N·D)×C×H×W
	sd := strides[0]
	var acc *ir.Value
	for i := range kd {
		shift := i*dil[0] - begin[0] // output position of input depth 0
		if shift >= out[0] || shift+(depth-1)*sd < 0 {
			continue // no input depth lands in the output
		}
		wi := ops.Reshape(n.b, ops.Slice(n.b, w, []int{2}, []int{i}, []int{i + 1}), c, og, kh, kw)
		y := convTranspose2d(n.b, xr, wi, strides[1:], dil[1:], begin[1:], out[1:], group)
		y = ops.Reshape(n.b, y, -1, depth, o, out[1], out[2]) // N×D×O×H'×W'
		if sd > 1 {
			// Interleave sd−1 zero slices after each depth slice.
			y = ops.Unsqueeze(n.b, y, 2)
			y = ops.Pad(n.b, y, []int{0, 0, 0, 0, 0, 0, 0, 0, sd - 1, 0, 0, 0}, "constant", 0)
			y = ops.Reshape(n.b, y, -1, depth*sd, o, out[1], out[2])
		}
		y = ops.Pad(n.b, y, []int{0, shift, 0, 0, 0, 0, out[0] - depth*sd - shift, 0, 0, 0}, "constant", 0)
		if acc == nil {
			acc = y
		} else {
			acc = ops.Add(n.b, acc, y)
		}
	}
	if acc == nil {
		n.err = n.unsupported("a transposed convolution whose output is all padding")
		return nil
	}
	return ops.Transpose(n.b, acc, 0, 2, 1, 3, 4)
}

// convPool: 1-D, 2-D and 3-D max and average pooling. 2-D pooling that
// max_pool2d and avg_pool2d do (symmetric padding smaller than the window,
// no dilation, ceil mode that changes nothing, padding left out of
// averages or absent) uses them; the rest the N-d ops. The Indices output
// is ONNX's flat index into the whole input (storage_order 0).
func convPool(n *node) ([]*value, error) {
	x := n.In(0)
	xt := x.Type()
	kernel := n.ints(n.Ints("kernel_shape"))
	k := len(kernel)
	if k == 0 || xt.Rank() != k+2 {
		n.fail("kernel_shape %v does not fit input %s", kernel, xt)
		return nil, nil
	}
	if k > 3 {
		return nil, n.unsupported("%d-D pooling", k)
	}
	isMax := n.p.GetOpType() == "MaxPool"
	ceil := n.Int("ceil_mode", 0) != 0
	countPad := false
	if isMax {
		if n.Int("storage_order", 0) != 0 {
			return nil, n.unsupported("storage_order=1 (column-major indices)")
		}
	} else {
		countPad = n.Int("count_include_pad", 0) != 0
	}
	strides, dil, pads, ok := n.spatial(xt.Dims[2:], kernel)
	if !ok {
		return nil, nil
	}
	outs := n.p.GetOutput()
	wantIndices := isMax && len(outs) > 1 && outs[1] != ""
	sym, _, asym := symmetric(pads)
	fast := k == 2 && !asym && slices.Equal(dil, ones(2)) && (!countPad || slices.Max(pads) == 0) &&
		sym[0] < kernel[0] && sym[1] < kernel[1] && (!ceil || !ceilMatters(xt.Dims[2:], kernel, strides, pads))
	var y, idx *ir.Value
	switch {
	case fast && isMax:
		y, idx = ops.MaxPool2D(n.b, x, kernel, strides, sym)
	case fast:
		y = ops.AvgPool2D(n.b, x, kernel, strides, sym)
	case isMax:
		y, idx = ops.MaxPool(n.b, x, kernel, ops.PoolOptions{Strides: strides, Pads: pads, Dilations: dil, CeilMode: ceil})
	default:
		y = ops.AvgPool(n.b, x, kernel, ops.PoolOptions{Strides: strides, Pads: pads, Dilations: dil, CeilMode: ceil, CountIncludePad: countPad})
	}
	if !wantIndices {
		return outv(y), nil
	}
	// gopir's indices count within each (sample, channel) volume.
	if !xt.IsStatic() {
		return nil, n.unsupported("the Indices output for input %s (dynamic dims)", xt)
	}
	vol := xt.NumElements() / max(1, xt.Dims[0]*xt.Dims[1])
	off := ops.Arange(n.b, ir.I64, 0, float64(xt.NumElements()), float64(vol))
	off = ops.Reshape(n.b, off, append([]int{xt.Dims[0], xt.Dims[1]}, ones(k)...)...)
	return out(y, ops.Add(n.b, idx, off)), nil
}

// ceilMatters reports whether ceil mode may give more windows than floor
// mode: always for dynamic dims.
func ceilMatters(in, kernel, strides, pads []int) bool {
	k := len(kernel)
	for i, d := range in {
		if d == ir.Dynamic {
			return true
		}
		if num := d + pads[i] + pads[k+i] - kernel[i]; num >= 0 && num%strides[i] != 0 {
			return true
		}
	}
	return false
}

// convPad: the pads (opset 1's paddings attribute, opset 2's pads
// attribute, later the pads input, for the axes input's dims in opset 18)
// and the constant, known when the program is built (pad) or read at run
// time (pad_dyn; the axes must be known).
func convPad(n *node) ([]*value, error) {
	x := n.In(0)
	r := n.rank(0)
	mode := n.String("mode", "constant")
	if mode != "constant" && mode != "reflect" && mode != "edge" {
		return nil, n.unsupported("mode %q", mode)
	}
	var pads []int
	var value *tensor.Tensor
	var fval float64
	switch {
	case n.Opset() < 2:
		pads = n.ints(n.Ints("paddings"))
		fval = n.Float("value", 0)
	case n.Opset() < 11:
		pads = n.ints(n.Ints("pads"))
		fval = n.Float("value", 0)
	default:
		ps, ok := n.KnownInts(1)
		_, valueKnown := n.Known(2)
		if !ok || n.Has(2) && !valueKnown {
			return n.padDyn(x, mode)
		}
		pads = n.ints(ps)
		if n.Has(2) {
			t, _ := n.Known(2)
			if t.Len() != 1 {
				n.fail("constant_value %s is not a scalar", t.Type())
				return nil, nil
			}
			value = t
		}
		if n.Has(3) {
			as, ok := n.KnownInts(3)
			if !ok {
				return nil, n.unsupported("axes computed at run time")
			}
			if len(pads) != 2*len(as) {
				n.fail("pads %v do not fit axes %v", pads, as)
				return nil, nil
			}
			full := make([]int, 2*r)
			for i, a := range as {
				ax := n.axis(a, r)
				full[ax], full[r+ax] = pads[i], pads[len(as)+i]
			}
			pads = full
		}
	}
	if len(pads) != 2*r {
		n.fail("pads %v do not fit rank %d", pads, r)
		return nil, nil
	}
	if n.err != nil {
		return nil, nil
	}
	attrs := ir.A("pads", pads, "mode", mode)
	dt := x.Type().DType
	switch {
	case value != nil && dt.IsFloat():
		attrs = attrs.With("value", ir.Float(value.Float64At(0)))
	case value != nil && value.DType() == tensor.I64:
		attrs = attrs.With("value", ir.Int(value.I64()[0]))
	case value != nil:
		attrs = attrs.With("value", ir.Float(value.Float64At(0)))
	case fval != 0:
		attrs = attrs.With("value", ir.Float(fval))
	}
	return outv(n.b.Op1("pad", attrs, x)), nil
}

// padDyn pads x with pad_dyn, which reads the amounts and the constant
// at run time (the axes must be known).
func (n *node) padDyn(x *ir.Value, mode string) ([]*value, error) {
	r := n.rank(0)
	var axes []int
	if n.Has(3) {
		as, ok := n.KnownInts(3)
		if !ok {
			return nil, n.unsupported("axes computed at run time")
		}
		for _, a := range as {
			axes = append(axes, n.axis(a, r))
		}
		if axes == nil {
			axes = []int{}
		}
	}
	k := r
	if axes != nil {
		k = len(axes)
	}
	if t := n.Type(1); t.IsStack() || t.Rank() != 1 || !t.DType.IsInt() || t.Dims[0] != ir.Dynamic && t.Dims[0] != 2*k {
		n.fail("pads %s do not fit %d axes", t, k)
	}
	var value *ir.Value
	if n.Has(2) {
		if mode == "constant" {
			value = n.In(2)
		}
		if t := n.Type(2); t.IsStack() || t.DType != x.Type().DType || t.IsStatic() && t.NumElements() != 1 {
			n.fail("constant_value %s is not one element of %s", t, x.Type().DType)
		}
	}
	if n.err != nil {
		return nil, nil
	}
	return outv(ops.PadDyn(n.b, x, n.In(1), value, axes, mode)), nil
}

// depthSpaceDims reads blocksize and the static dims of an N×C×H×W input
// (N may be dynamic).
func (n *node) depthSpaceDims(x *ir.Value) (bs, c, h, w int, ok bool) {
	t := x.Type()
	bs = int(n.Int("blocksize", 0))
	if bs < 1 {
		n.fail("blocksize %d must be at least 1", bs)
		return 0, 0, 0, 0, false
	}
	if t.Rank() != 4 {
		n.fail("input %s is not N×C×H×W", t)
		return 0, 0, 0, 0, false
	}
	if slices.Contains(t.Dims[1:], ir.Dynamic) {
		n.err = n.unsupported("input %s with dynamic channel or spatial dims", t)
		return 0, 0, 0, 0, false
	}
	return bs, t.Dims[1], t.Dims[2], t.Dims[3], true
}

// convDepthToSpace moves blocks of channels into space: mode DCR (the
// default) takes the block index as the outer part of the channel, CRD
// as the inner part.
func convDepthToSpace(n *node) ([]*value, error) {
	x := n.In(0)
	mode := n.String("mode", "DCR")
	bs, c, h, w, ok := n.depthSpaceDims(x)
	if !ok {
		return nil, n.err
	}
	if c%(bs*bs) != 0 {
		n.fail("%d channels are not divisible by blocksize² = %d", c, bs*bs)
		return nil, nil
	}
	oc := c / (bs * bs)
	var y *ir.Value
	switch mode {
	case "DCR":
		y = ops.Reshape(n.b, x, -1, bs, bs, oc, h, w)
		y = ops.Transpose(n.b, y, 0, 3, 4, 1, 5, 2)
	case "CRD":
		y = ops.Reshape(n.b, x, -1, oc, bs, bs, h, w)
		y = ops.Transpose(n.b, y, 0, 1, 4, 2, 5, 3)
	default:
		n.fail("mode %q is not DCR or CRD", mode)
		return nil, nil
	}
	return outv(ops.Reshape(n.b, y, -1, oc, h*bs, w*bs)), nil
}

// convSpaceToDepth is DepthToSpace's DCR inverse.
func convSpaceToDepth(n *node) ([]*value, error) {
	x := n.In(0)
	bs, c, h, w, ok := n.depthSpaceDims(x)
	if !ok {
		return nil, n.err
	}
	if h%bs != 0 || w%bs != 0 {
		n.fail("spatial dims %d×%d are not divisible by blocksize %d", h, w, bs)
		return nil, nil
	}
	y := ops.Reshape(n.b, x, -1, c, h/bs, bs, w/bs, bs)
	y = ops.Transpose(n.b, y, 0, 3, 5, 1, 2, 4)
	return outv(ops.Reshape(n.b, y, -1, c*bs*bs, h/bs, w/bs)), nil
}
