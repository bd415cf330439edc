package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// 2-D pooling over NCHW input.
//
//	max_pool2d {kernel_size, strides, paddings} (x) -> (out, indices)
//	avg_pool2d {kernel_size, strides, paddings} (x) -> out
//
// x is N×C×H×W, f32 or f64. kernel_size [kh, kw] is required; strides
// default to kernel_size; paddings [ph, pw] (default [0, 0]) pad each side
// and must be smaller than the window (ph < kh, pw < kw), and H and W must
// not be 0, so every window holds an input element. Each list may be a
// single int for both dims. out is N×C×OH×OW with
// OH = (H + 2·ph − kh)/sh + 1 (floor, no ceil mode). The N-d pools of
// pool_nd.go add what these lack (dilations, asymmetric padding, ceil mode,
// padding counted in averages).
//
// Padding never enters a result: max_pool2d ignores it, and avg_pool2d
// divides each window's sum by the number of input elements it covers —
// PyTorch's count_include_pad=False.
//
// max_pool2d has two results: the maxima and, for the backward, indices
// (i64, same shape) holding where each maximum came from as a flat index
// h·W + w into its (sample, channel) input plane, as PyTorch's
// return_indices gives. Among equal maxima the first in row-major window
// order wins; a NaN in a window is the result.
//
// For inference, where nothing reads the indices, there is
//
//	max_pool2d_values {kernel_size, strides, paddings} (x) -> out
//
// max_pool2d's first result alone, bit for bit, without writing the
// indices (kernels.MaxPool2DValues, a faster separable scan); package
// optimize rewrites a max_pool2d whose indices are unused to it. Its
// gradient is max_pool2d_grad_x, which finds each maximum again in x.
//
// Their gradients use two helper ops:
//
//	max_pool2d_grad {input_size?:[H,W]} (dy, indices[, x]) -> dx
//	avg_pool2d_grad {kernel_size, strides, paddings, input_size?} (dy[, x]) -> dx
//
//	max_pool2d_grad_x {kernel_size, strides, paddings} (dy, x) -> dx
//
// dx is N×C×H×W, with N and C from dy and H, W from input_size or, when
// it is absent, dims 2 and 3 of the optional x (only its shape is read);
// H and W must not be 0, as for the forward ops.
// max_pool2d_grad_x reads x itself and finds each window's maximum again
// (by max_pool2d's rule), so the indices need not be kept: max_pool2d's
// rule uses it when x is the result of an op whose own gradient rule keeps
// it anyway (relu and the like), so that the indices die with the forward
// op. Its dx is bitwise max_pool2d_grad's with the indices; dx has x's
// type and dy must have the shape max_pool2d gives for x.
// max_pool2d_grad adds each element of dy at the in-plane position its
// index (max_pool2d's second result, same shape as dy) names; an index
// outside [0, H·W) is an error. avg_pool2d_grad spreads each element of dy
// evenly over the input elements of its window, padding excluded; dy must
// have the shape avg_pool2d gives for dx's shape.

func init() {
	register(&Def{Name: "max_pool2d", Infer: inferPool(true), Compute: bindPool(true), Grad: nnGradMaxPool, PerSample: perSampleUnary})
	register(&Def{Name: "max_pool2d_values", Infer: inferPool(false), Compute: bindMaxPoolValues, Grad: nnGradMaxPoolValues, NCHWc: nchwcMaxPool})
	register(&Def{Name: "avg_pool2d", Infer: inferPool(false), Compute: bindPool(false), Grad: nnGradAvgPool, PerSample: perSampleUnary})
	register(&Def{Name: "max_pool2d_grad", Grad: noSecondOrder, Infer: nnInferMaxPoolGrad, Compute: nnBindMaxPoolGrad})
	register(&Def{Name: "max_pool2d_grad_x", Grad: noSecondOrder, Infer: nnInferMaxPoolGradX, Compute: nnBindMaxPoolGradX, PerSample: perSampleAll})
	register(&Def{Name: "avg_pool2d_grad", Grad: noSecondOrder, Infer: nnInferAvgPoolGrad, Compute: nnBindAvgPoolGrad})
}

type nnPoolAttrs struct{ kernel, strides, paddings [2]int }

func nnPoolDecode(attrs ir.Attrs) (a nnPoolAttrs, err error) {
	if !attrs.Has("kernel_size") {
		return a, &ir.AttrError{Name: "kernel_size", Want: "a list of ints"}
	}
	if a.kernel, err = nnPair(attrs, "kernel_size", [2]int{}, 1); err != nil {
		return
	}
	if a.strides, err = nnPair(attrs, "strides", a.kernel, 1); err != nil {
		return
	}
	if a.paddings, err = nnPair(attrs, "paddings", [2]int{0, 0}, 0); err != nil {
		return
	}
	if a.paddings[0] >= a.kernel[0] || a.paddings[1] >= a.kernel[1] {
		err = fmt.Errorf("paddings %v must be smaller than kernel_size %v", a.paddings[:], a.kernel[:])
	}
	return
}

// nnPoolShape applies the pooling shape rule.
func nnPoolShape(x ir.Type, a nnPoolAttrs) ([]int, error) {
	if x.Rank() != 4 {
		return nil, fmt.Errorf("x %s must be NCHW (rank 4)", x)
	}
	if x.Dims[2] == 0 || x.Dims[3] == 0 {
		return nil, fmt.Errorf("x %s has an empty spatial dim: every window would be padding", x)
	}
	oh, okH := nnConvOut(x.Dims[2], a.kernel[0], a.strides[0], a.paddings[0], 1)
	ow, okW := nnConvOut(x.Dims[3], a.kernel[1], a.strides[1], a.paddings[1], 1)
	if !okH || !okW {
		return nil, fmt.Errorf("x %s with paddings %v is smaller than kernel_size %v", x, a.paddings[:], a.kernel[:])
	}
	return []int{x.Dims[0], x.Dims[1], oh, ow}, nil
}

func inferPool(isMax bool) func([]ir.Type, ir.Attrs) ([]ir.Type, error) {
	return func(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
		if err := wantOperands(in, 1); err != nil {
			return nil, err
		}
		a, err := nnPoolDecode(attrs)
		if err != nil {
			return nil, err
		}
		if err := nnWantFloat("x", in[0]); err != nil {
			return nil, err
		}
		dims, err := nnPoolShape(in[0], a)
		if err != nil {
			return nil, err
		}
		out := []ir.Type{ir.TensorOf(in[0].DType, dims...)}
		if isMax {
			out = append(out, ir.TensorOf(ir.I64, dims...))
		}
		return out, nil
	}
}

// nnPoolParams is the kernels' description of a pooling of x, of static
// shape xs (N×C×H×W).
func nnPoolParams(xs []int, a nnPoolAttrs) kernels.Pool2DParams {
	return kernels.Pool2DParams{N: xs[0], C: xs[1], H: xs[2], W: xs[3],
		KH: a.kernel[0], KW: a.kernel[1], SH: a.strides[0], SW: a.strides[1],
		PH: a.paddings[0], PW: a.paddings[1]}
}

func bindPool(isMax bool) func(*ir.Op) (Compute, error) {
	return func(op *ir.Op) (Compute, error) {
		a, err := nnPoolDecode(op.Attrs)
		if err != nil {
			return Compute{}, err
		}
		return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
			x := in[0]
			p, th := nnPoolParams(x.Shape(), a), nnThreads(c)
			f32 := x.DType() == tensor.F32
			switch {
			case isMax && f32:
				kernels.MaxPool2D(p, x.F32(), out[0].F32(), out[1].I64(), th)
			case isMax:
				kernels.MaxPool2D(p, x.F64(), out[0].F64(), out[1].I64(), th)
			case f32:
				kernels.AvgPool2D(p, x.F32(), out[0].F32(), th)
			default:
				kernels.AvgPool2D(p, x.F64(), out[0].F64(), th)
			}
			return nil
		}}, nil
	}
}

func bindMaxPoolValues(op *ir.Op) (Compute, error) {
	a, err := nnPoolDecode(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		x := in[0]
		p, th := nnPoolParams(x.Shape(), a), nnThreads(c)
		if x.DType() == tensor.F32 {
			kernels.MaxPool2DValues(p, x.F32(), out[0].F32(), th)
		} else {
			kernels.MaxPool2DValues(p, x.F64(), out[0].F64(), th)
		}
		return nil
	}}, nil
}

// MaxPool2DValues appends a max pooling of x (NCHW) that gives the maxima
// alone (max_pool2d_values). strides nil means kernel; paddings nil means
// [0, 0].
func MaxPool2DValues(b *ir.Builder, x *ir.Value, kernel, strides, paddings []int) *ir.Value {
	return b.Op1("max_pool2d_values", nnPoolAttrList(kernel, strides, paddings), x)
}

// MaxPool2D appends a max pooling of x (NCHW) and returns the maxima and
// their flat in-plane indices (i64). strides nil means kernel; paddings nil
// means [0, 0].
func MaxPool2D(b *ir.Builder, x *ir.Value, kernel, strides, paddings []int) (out, indices *ir.Value) {
	op := b.Op("max_pool2d", nnPoolAttrList(kernel, strides, paddings), x)
	return op.Result(0), op.Result(1)
}

// AvgPool2D appends an average pooling of x (NCHW) that excludes padding
// from each window's divisor. strides nil means kernel; paddings nil means
// [0, 0].
func AvgPool2D(b *ir.Builder, x *ir.Value, kernel, strides, paddings []int) *ir.Value {
	return b.Op1("avg_pool2d", nnPoolAttrList(kernel, strides, paddings), x)
}

func nnPoolAttrList(kernel, strides, paddings []int) ir.Attrs {
	attrs := ir.Attrs{{Name: "kernel_size", Value: nnIntList(kernel)}}
	if strides != nil {
		attrs = attrs.With("strides", nnIntList(strides))
	}
	if paddings != nil {
		attrs = attrs.With("paddings", nnIntList(paddings))
	}
	return attrs
}

// nnGradMaxPool scatters dy by the indices result; only the indices (and
// the input's shape when it is not static) are kept for it. When x is kept
// for the backward anyway (see nnKeepsResult), it scatters by x instead
// (max_pool2d_grad_x), so that the indices die at once.
func nnGradMaxPool(g *GradContext) ([]*ir.Value, error) {
	if !g.Need(0) || g.DY[0] == nil {
		return []*ir.Value{nil}, nil
	}
	if nnKeepsResult(g.Op.Operand(0)) {
		return []*ir.Value{g.B.Op1("max_pool2d_grad_x", nnPoolAttrsOf(g.Op), g.DY[0], g.X(0))}, nil
	}
	attrs := ir.Attrs{}
	return []*ir.Value{nnGradPoolSize(g, "max_pool2d_grad", attrs, g.DY[0], g.Y(1))}, nil
}

// nnGradMaxPoolValues scatters dy to where max_pool2d_grad_x finds each
// window's maximum in x, as max_pool2d's rule does without indices.
func nnGradMaxPoolValues(g *GradContext) ([]*ir.Value, error) {
	if !g.Need(0) || g.DY[0] == nil {
		return []*ir.Value{nil}, nil
	}
	return []*ir.Value{g.B.Op1("max_pool2d_grad_x", nnPoolAttrsOf(g.Op), g.DY[0], g.X(0))}, nil
}

// nnPoolAttrsOf copies op's window attributes (kernel_size, strides,
// paddings), those it has.
func nnPoolAttrsOf(op *ir.Op) ir.Attrs {
	attrs := ir.Attrs{}
	for _, n := range []string{"kernel_size", "strides", "paddings"} {
		if v, ok := op.Attrs.Get(n); ok {
			attrs = attrs.With(n, v)
		}
	}
	return attrs
}

// nnKeepsResult reports whether v is the result of an op whose gradient
// rule reads that result (relu, sigmoid, tanh, exp, sqrt, rsqrt), so that
// the backward keeps v whatever else reads it.
func nnKeepsResult(v *ir.Value) bool {
	def := v.Def()
	if def == nil || !def.Result(0).Type().DType.IsFloat() {
		return false
	}
	switch def.Name() {
	case "relu", "sigmoid", "tanh", "exp", "sqrt", "rsqrt":
		return true
	}
	return false
}

func nnInferMaxPoolGradX(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 2); err != nil {
		return nil, err
	}
	a, err := nnPoolDecode(attrs)
	if err != nil {
		return nil, err
	}
	dy, x := in[0], in[1]
	if err := nnWantFloat("x", x); err != nil {
		return nil, err
	}
	if err := nnSameDType("dy", dy, x.DType, "x", x); err != nil {
		return nil, err
	}
	want, err := nnPoolShape(x, a)
	if err != nil {
		return nil, err
	}
	ok := dy.Rank() == 4
	for i := 0; ok && i < 4; i++ {
		ok = nnDimEq(dy.Dims[i], want[i])
	}
	if !ok {
		return nil, fmt.Errorf("dy %s does not have the shape %s of max_pool2d's output for x %s", dy, dimsString(want), x)
	}
	return []ir.Type{x}, nil
}

func nnBindMaxPoolGradX(op *ir.Op) (Compute, error) {
	a, err := nnPoolDecode(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		dy, x, dx := in[0], in[1], out[0]
		p := nnPoolParams(x.Shape(), a)
		switch dx.DType() {
		case tensor.F32:
			kernels.MaxPool2DGradX(p, dy.F32(), x.F32(), dx.F32(), nnThreads(c))
		case tensor.F64:
			kernels.MaxPool2DGradX(p, dy.F64(), x.F64(), dx.F64(), nnThreads(c))
		}
		return nil
	}}, nil
}

// nnGradAvgPool spreads dy over each window; it keeps nothing from the
// forward pass when the input's shape is static.
func nnGradAvgPool(g *GradContext) ([]*ir.Value, error) {
	if !g.Need(0) {
		return []*ir.Value{nil}, nil
	}
	return []*ir.Value{nnGradPoolSize(g, "avg_pool2d_grad", g.Op.Attrs, g.DY[0])}, nil
}

// nnGradPoolSize appends the helper op name with attrs plus the input's
// spatial size: as attribute input_size when static, else by passing x.
func nnGradPoolSize(g *GradContext, name string, attrs ir.Attrs, operands ...*ir.Value) *ir.Value {
	t := g.Op.Operand(0).Type()
	if t.Dims[2] != ir.Dynamic && t.Dims[3] != ir.Dynamic {
		return g.B.Op1(name, attrs.With("input_size", nnIntList(t.Dims[2:4])), operands...)
	}
	return g.B.Op1(name, attrs, append(operands, g.X(0))...)
}

// nnPoolGradDims returns dx's dims for dy and the optional x.
func nnPoolGradDims(dy ir.Type, attrs ir.Attrs, like *ir.Type) ([]int, error) {
	if err := nnWantFloat("dy", dy); err != nil {
		return nil, err
	}
	if dy.Rank() != 4 {
		return nil, fmt.Errorf("dy %s must be NCHW (rank 4)", dy)
	}
	size, err := nnSpatialSize(attrs, "input_size", like)
	if err != nil {
		return nil, err
	}
	if size[0] == 0 || size[1] == 0 {
		return nil, fmt.Errorf("input size %s has an empty spatial dim, which pooling rejects", dimsString(size[:]))
	}
	dims := []int{dy.Dims[0], dy.Dims[1], size[0], size[1]}
	for i := 0; like != nil && i < 2; i++ {
		if !nnDimEq(dims[i], like.Dims[i]) {
			return nil, fmt.Errorf("dy %s and x %s differ in dim %d", dy, *like, i)
		}
		if dims[i] == ir.Dynamic {
			dims[i] = like.Dims[i]
		}
	}
	return dims, nil
}

func nnInferMaxPoolGrad(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if len(in) != 2 && len(in) != 3 {
		return nil, fmt.Errorf("takes 2 or 3 operands, got %d", len(in))
	}
	var like *ir.Type
	if len(in) == 3 {
		like = &in[2]
	}
	dims, err := nnPoolGradDims(in[0], attrs, like)
	if err != nil {
		return nil, err
	}
	idx := in[1]
	ok := idx.DType == ir.I64 && idx.Rank() == 4
	for i := 0; ok && i < 4; i++ {
		ok = nnDimEq(idx.Dims[i], in[0].Dims[i])
	}
	if !ok {
		return nil, fmt.Errorf("indices %s must be i64 shaped like dy %s", idx, in[0])
	}
	return []ir.Type{ir.TensorOf(in[0].DType, dims...)}, nil
}

func nnBindMaxPoolGrad(op *ir.Op) (Compute, error) {
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		dy, idx, dx := in[0], in[1], out[0]
		xs := dx.Shape()
		hw := xs[2] * xs[3]
		if bad := kernels.OutOfRange(idx.I64(), 0, int64(hw)); bad >= 0 {
			return fmt.Errorf("index %d at position %v of indices %s is outside the %d×%d input plane",
				idx.I64()[bad], nnUnravel(bad, idx.Shape()), idx.Type(), xs[2], xs[3])
		}
		ds := dy.Shape()
		planes, ohw := ds[0]*ds[1], ds[2]*ds[3]
		switch dx.DType() {
		case tensor.F32:
			kernels.MaxPool2DGrad(planes, hw, ohw, dy.F32(), idx.I64(), dx.F32(), nnThreads(c))
		case tensor.F64:
			kernels.MaxPool2DGrad(planes, hw, ohw, dy.F64(), idx.I64(), dx.F64(), nnThreads(c))
		}
		return nil
	}}, nil
}

// nnAvgPoolGradCheck checks avg_pool2d_grad's operands and returns its
// attributes and dx's dims.
func nnAvgPoolGradCheck(in []ir.Type, attrs ir.Attrs) (nnPoolAttrs, []int, error) {
	if len(in) != 1 && len(in) != 2 {
		return nnPoolAttrs{}, nil, fmt.Errorf("takes 1 or 2 operands, got %d", len(in))
	}
	a, err := nnPoolDecode(attrs)
	if err != nil {
		return a, nil, err
	}
	var like *ir.Type
	if len(in) == 2 {
		like = &in[1]
	}
	dims, err := nnPoolGradDims(in[0], attrs, like)
	if err != nil {
		return a, nil, err
	}
	want, err := nnPoolShape(ir.TensorOf(in[0].DType, dims...), a)
	if err != nil {
		return a, nil, err
	}
	if err := poolCheckDY(in[0], want, dims, "avg_pool2d"); err != nil {
		return a, nil, err
	}
	return a, dims, nil
}

func nnInferAvgPoolGrad(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	_, dims, err := nnAvgPoolGradCheck(in, attrs)
	if err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(in[0].DType, dims...)}, nil
}

func nnBindAvgPoolGrad(op *ir.Op) (Compute, error) {
	a, err := nnPoolDecode(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		dy, dx := in[0], out[0]
		p := nnPoolParams(dx.Shape(), a)
		switch dx.DType() {
		case tensor.F32:
			kernels.AvgPool2DGrad(p, dy.F32(), dx.F32(), nnThreads(c))
		case tensor.F64:
			kernels.AvgPool2DGrad(p, dy.F64(), dx.F64(), nnThreads(c))
		}
		return nil
	}}, nil
}
