package ops

import (
	"fmt"
	"slices"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// N-d pooling over N×C×D1×…×Dk input, k ≥ 1 (ONNX's MaxPool and
// AveragePool).
//
//	max_pool {kernel_size, strides?, pads?, dilations?, ceil_mode?} (x) -> (out, indices)
//	avg_pool {kernel_size, strides?, pads?, dilations?, ceil_mode?, count_include_pad?} (x) -> out
//
// x is f32 or f64 of rank k+2. kernel_size lists the k window sizes;
// strides (default kernel_size) and dilations (default 1s) have k entries,
// pads 2k (the padding before each spatial dim, then after each; default
// 0s). Window o of dim i has the taps o·s − pb + j·d, j < k_i, where those
// in [0, D_i) are input elements and the others padding. The number of
// windows is ⌊(D + pb + pe − d·(k−1) − 1)/s⌋ + 1, or with ceil_mode ⌈·⌉ + 1
// less the last window when it would start beyond the input and its
// padding before (PyTorch's rule, so that windows start in the input or
// the padding before it). A dilated window larger than the padded input,
// or a window with no tap inside the input, is an error.
//
// max_pool gives the maximum of each window's input taps (the first in
// row-major window order among equal maxima; a NaN wins) and, as i64
// indices, where it came from: a flat row-major index into the spatial
// volume of its (sample, channel), as max_pool2d does. avg_pool divides
// the sum of a window's input taps by their count, or with
// count_include_pad by the count of its taps inside the padded input
// (those beyond, which ceil mode adds, never count).
//
// Their gradients use two helper ops:
//
//	max_pool_grad {input_size?} (dy, indices[, x]) -> dx
//	avg_pool_grad {avg_pool's attributes, input_size?} (dy[, x]) -> dx
//
// dx has N and C from dy and the spatial dims of input_size or, when it
// is absent, of the optional x (only its shape is read). max_pool_grad adds
// each element of dy at the position its index names (an index outside
// the volume is an error); avg_pool_grad spreads each element of dy, by
// the window's divisor, over the window's input taps.

func init() {
	register(&Def{Name: "max_pool", Infer: poolInfer(true), Compute: poolBind(true), Grad: poolGradMax})
	register(&Def{Name: "avg_pool", Infer: poolInfer(false), Compute: poolBind(false), Grad: poolGradAvg})
	register(&Def{Name: "max_pool_grad", Grad: noSecondOrder, Infer: poolInferMaxGrad, Compute: poolBindMaxGrad})
	register(&Def{Name: "avg_pool_grad", Grad: noSecondOrder, Infer: poolInferAvgGrad, Compute: poolBindAvgGrad})
}

// poolSpec is the decoded attributes of max_pool and avg_pool.
type poolSpec struct {
	kernel, strides, pads, dilations []int
	ceil, countPad                   bool
}

func poolDecode(attrs ir.Attrs, isMax bool) (s poolSpec, err error) {
	if s.kernel, err = attrs.Ints("kernel_size"); err != nil {
		return s, err
	}
	k := len(s.kernel)
	if k == 0 {
		return s, fmt.Errorf("kernel_size is empty")
	}
	ones := slices.Repeat([]int{1}, k)
	if s.strides, err = shpOptInts(attrs, "strides", s.kernel); err != nil {
		return s, err
	}
	if s.pads, err = shpOptInts(attrs, "pads", make([]int, 2*k)); err != nil {
		return s, err
	}
	if s.dilations, err = shpOptInts(attrs, "dilations", ones); err != nil {
		return s, err
	}
	if s.ceil, err = nnBool(attrs, "ceil_mode", false); err != nil {
		return s, err
	}
	if !isMax {
		if s.countPad, err = nnBool(attrs, "count_include_pad", false); err != nil {
			return s, err
		}
	}
	for _, l := range []struct {
		name string
		v    []int
		n    int
		lo   int
	}{{"kernel_size", s.kernel, k, 1}, {"strides", s.strides, k, 1}, {"pads", s.pads, 2 * k, 0}, {"dilations", s.dilations, k, 1}} {
		if len(l.v) != l.n {
			return s, fmt.Errorf("attribute %s:%v must have %d entries for kernel_size %v", l.name, l.v, l.n, s.kernel)
		}
		if slices.Min(l.v) < l.lo {
			return s, fmt.Errorf("attribute %s:%v entries must be >= %d", l.name, l.v, l.lo)
		}
	}
	return s, nil
}

// dim returns the kernels' description of spatial dim i of size n.
func (s poolSpec) dim(i, n int) kernels.PoolDim {
	k := len(s.kernel)
	return kernels.PoolDim{In: n, K: s.kernel[i], S: s.strides[i], Dil: s.dilations[i],
		PadBegin: s.pads[i], PadEnd: s.pads[k+i]}
}

// outSize is the number of windows along spatial dim i of size n, or an
// error when the window does not fit or a window has no input tap.
func (s poolSpec) outSize(i, n int) (int, error) {
	d := s.dim(i, n)
	span := d.Dil*(d.K-1) + 1
	num := n + d.PadBegin + d.PadEnd - span
	if num < 0 {
		return 0, fmt.Errorf("spatial dim %d of size %d with pads %v is smaller than the window of %d taps dilated by %d", i, n, s.pads, d.K, d.Dil)
	}
	out := num/d.S + 1
	if s.ceil {
		out = (num+d.S-1)/d.S + 1
		if (out-1)*d.S >= n+d.PadBegin {
			out--
		}
	}
	d.Out = out
	for o := range out {
		if _, c, _ := d.Taps(o); c == 0 {
			return 0, fmt.Errorf("window %d of spatial dim %d (size %d, pads %v, dilations %v) holds only padding", o, i, n, s.pads, s.dilations)
		}
	}
	return out, nil
}

// outDims applies the shape rule to x's dims (dynamic spatial dims stay
// dynamic).
func (s poolSpec) outDims(x ir.Type) ([]int, error) {
	k := len(s.kernel)
	if x.Rank() != k+2 {
		return nil, fmt.Errorf("x %s must have rank %d (N, C and the %d dims of kernel_size %v)", x, k+2, k, s.kernel)
	}
	out := slices.Clone(x.Dims)
	for i, n := range x.Dims[2:] {
		if n == ir.Dynamic {
			continue
		}
		o, err := s.outSize(i, n)
		if err != nil {
			return nil, fmt.Errorf("x %s: %w", x, err)
		}
		out[2+i] = o
	}
	return out, nil
}

// params is the kernels' description for static x dims in and out dims.
func (s poolSpec) params(in, out []int) kernels.PoolNDParams {
	p := kernels.PoolNDParams{Planes: in[0] * in[1]}
	for i, n := range in[2:] {
		d := s.dim(i, n)
		d.Out = out[2+i]
		p.Dims = append(p.Dims, d)
	}
	return p
}

func poolInfer(isMax bool) func([]ir.Type, ir.Attrs) ([]ir.Type, error) {
	return func(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
		if err := wantOperands(in, 1); err != nil {
			return nil, err
		}
		s, err := poolDecode(attrs, isMax)
		if err != nil {
			return nil, err
		}
		if err := nnWantFloat("x", in[0]); err != nil {
			return nil, err
		}
		dims, err := s.outDims(in[0])
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

func poolBind(isMax bool) func(*ir.Op) (Compute, error) {
	return func(op *ir.Op) (Compute, error) {
		s, err := poolDecode(op.Attrs, isMax)
		if err != nil {
			return Compute{}, err
		}
		return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
			x := in[0]
			p, th := s.params(x.Shape(), out[0].Shape()), nnThreads(c)
			f32 := x.DType() == tensor.F32
			switch {
			case isMax && f32:
				kernels.MaxPoolND(p, x.F32(), out[0].F32(), out[1].I64(), th)
			case isMax:
				kernels.MaxPoolND(p, x.F64(), out[0].F64(), out[1].I64(), th)
			case f32:
				kernels.AvgPoolND(p, s.countPad, x.F32(), out[0].F32(), th)
			default:
				kernels.AvgPoolND(p, s.countPad, x.F64(), out[0].F64(), th)
			}
			return nil
		}}, nil
	}
}

// PoolOptions are the attributes of MaxPool and AvgPool beyond the window:
// nil lists take their defaults (strides the window, no padding, no
// dilation).
type PoolOptions struct {
	Strides, Pads, Dilations []int
	CeilMode                 bool
	CountIncludePad          bool // avg_pool only
}

func (o PoolOptions) attrs(kernel []int, isMax bool) ir.Attrs {
	attrs := ir.A("kernel_size", kernel)
	for _, l := range []struct {
		name string
		v    []int
	}{{"strides", o.Strides}, {"pads", o.Pads}, {"dilations", o.Dilations}} {
		if l.v != nil {
			attrs = attrs.With(l.name, nnIntList(l.v))
		}
	}
	if o.CeilMode {
		attrs = attrs.With("ceil_mode", ir.Bool(true))
	}
	if o.CountIncludePad && !isMax {
		attrs = attrs.With("count_include_pad", ir.Bool(true))
	}
	return attrs
}

// MaxPool appends an N-d max pooling of x with the given window and
// returns the maxima and their flat indices into each input volume (i64).
func MaxPool(b *ir.Builder, x *ir.Value, kernel []int, o PoolOptions) (out, indices *ir.Value) {
	op := b.Op("max_pool", o.attrs(kernel, true), x)
	return op.Result(0), op.Result(1)
}

// AvgPool appends an N-d average pooling of x with the given window.
func AvgPool(b *ir.Builder, x *ir.Value, kernel []int, o PoolOptions) *ir.Value {
	return b.Op1("avg_pool", o.attrs(kernel, false), x)
}

// poolGradMax scatters dy by the indices.
func poolGradMax(g *GradContext) ([]*ir.Value, error) {
	if !g.Need(0) || g.DY[0] == nil {
		return []*ir.Value{nil}, nil
	}
	return []*ir.Value{poolGradSize(g, "max_pool_grad", nil, g.DY[0], g.Y(1))}, nil
}

// poolGradAvg spreads dy over the windows.
func poolGradAvg(g *GradContext) ([]*ir.Value, error) {
	if !g.Need(0) {
		return []*ir.Value{nil}, nil
	}
	return []*ir.Value{poolGradSize(g, "avg_pool_grad", g.Op.Attrs, g.DY[0])}, nil
}

// poolGradSize appends the helper op name with attrs plus the input's
// spatial size: as attribute input_size when static, else by passing x.
func poolGradSize(g *GradContext, name string, attrs ir.Attrs, operands ...*ir.Value) *ir.Value {
	t := g.Op.Operand(0).Type()
	if !slices.Contains(t.Dims[2:], ir.Dynamic) {
		return g.B.Op1(name, attrs.With("input_size", nnIntList(t.Dims[2:])), operands...)
	}
	return g.B.Op1(name, attrs, append(operands, g.X(0))...)
}

// poolGradDims returns dx's dims for dy and the optional x.
func poolGradDims(dy ir.Type, attrs ir.Attrs, like *ir.Type) ([]int, error) {
	if err := nnWantFloat("dy", dy); err != nil {
		return nil, err
	}
	if dy.Rank() < 3 {
		return nil, fmt.Errorf("dy %s must have rank 3 or more", dy)
	}
	var size []int
	switch {
	case attrs.Has("input_size") && like != nil:
		return nil, fmt.Errorf("takes attribute input_size or a last operand, not both")
	case attrs.Has("input_size"):
		var err error
		if size, err = attrs.Ints("input_size"); err != nil {
			return nil, err
		}
		if len(size) != dy.Rank()-2 || slices.Min(size) < 0 {
			return nil, fmt.Errorf("input_size %v must list %d sizes >= 0 for dy %s", size, dy.Rank()-2, dy)
		}
	case like == nil:
		return nil, fmt.Errorf("needs attribute input_size or a last operand to take it from")
	default:
		if like.Rank() != dy.Rank() {
			return nil, fmt.Errorf("x %s must have the rank of dy %s", *like, dy)
		}
		size = like.Dims[2:]
	}
	dims := append([]int{dy.Dims[0], dy.Dims[1]}, size...)
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

func poolInferMaxGrad(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if len(in) != 2 && len(in) != 3 {
		return nil, fmt.Errorf("takes 2 or 3 operands, got %d", len(in))
	}
	var like *ir.Type
	if len(in) == 3 {
		like = &in[len(in)-1]
	}
	dims, err := poolGradDims(in[0], attrs, like)
	if err != nil {
		return nil, err
	}
	idx := in[1]
	ok := idx.DType == ir.I64 && idx.Rank() == in[0].Rank()
	for i := 0; ok && i < idx.Rank(); i++ {
		ok = nnDimEq(idx.Dims[i], in[0].Dims[i])
	}
	if !ok {
		return nil, fmt.Errorf("indices %s must be i64 shaped like dy %s", idx, in[0])
	}
	return []ir.Type{ir.TensorOf(in[0].DType, dims...)}, nil
}

func poolBindMaxGrad(op *ir.Op) (Compute, error) {
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		dy, idx, dx := in[0], in[1], out[0]
		xs := dx.Shape()
		vol := nnProd(xs[2:])
		if bad := kernels.OutOfRange(idx.I64(), 0, int64(vol)); bad >= 0 {
			return fmt.Errorf("index %d at position %v of indices %s is outside the input volume %s",
				idx.I64()[bad], nnUnravel(bad, idx.Shape()), idx.Type(), dimsString(xs[2:]))
		}
		ds := dy.Shape()
		planes, ovol := ds[0]*ds[1], nnProd(ds[2:])
		switch dx.DType() {
		case tensor.F32:
			kernels.MaxPool2DGrad(planes, vol, ovol, dy.F32(), idx.I64(), dx.F32(), nnThreads(c))
		case tensor.F64:
			kernels.MaxPool2DGrad(planes, vol, ovol, dy.F64(), idx.I64(), dx.F64(), nnThreads(c))
		}
		return nil
	}}, nil
}

// poolAvgGradCheck checks avg_pool_grad's operands and returns its
// attributes and dx's dims.
func poolAvgGradCheck(in []ir.Type, attrs ir.Attrs) (poolSpec, []int, error) {
	if len(in) != 1 && len(in) != 2 {
		return poolSpec{}, nil, fmt.Errorf("takes 1 or 2 operands, got %d", len(in))
	}
	s, err := poolDecode(attrs, false)
	if err != nil {
		return s, nil, err
	}
	var like *ir.Type
	if len(in) == 2 {
		like = &in[len(in)-1]
	}
	dims, err := poolGradDims(in[0], attrs, like)
	if err != nil {
		return s, nil, err
	}
	want, err := s.outDims(ir.TensorOf(in[0].DType, dims...))
	if err != nil {
		return s, nil, err
	}
	if err := poolCheckDY(in[0], want, dims, "avg_pool"); err != nil {
		return s, nil, err
	}
	return s, dims, nil
}

// poolCheckDY checks that dy has the shape want of the output that op
// computes from an input of dims.
func poolCheckDY(dy ir.Type, want, dims []int, op string) error {
	for i, d := range want {
		if !nnDimEq(d, dy.Dims[i]) {
			return fmt.Errorf("dy %s does not have the shape %s of %s's output for input %s",
				dy, dimsString(want), op, dimsString(dims))
		}
	}
	return nil
}

func poolInferAvgGrad(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	_, dims, err := poolAvgGradCheck(in, attrs)
	if err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(in[0].DType, dims...)}, nil
}

func poolBindAvgGrad(op *ir.Op) (Compute, error) {
	s, err := poolDecode(op.Attrs, false)
	if err != nil {
		return Compute{}, err
	}
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		dy, dx := in[0], out[0]
		p := s.params(dx.Shape(), dy.Shape())
		switch dx.DType() {
		case tensor.F32:
			kernels.AvgPoolNDGrad(p, s.countPad, dy.F32(), dx.F32(), nnThreads(c))
		case tensor.F64:
			kernels.AvgPoolNDGrad(p, s.countPad, dy.F64(), dx.F64(), nnThreads(c))
		}
		return nil
	}}, nil
}
