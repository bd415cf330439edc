package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Fused ops: a convolution or a matrix product followed by its epilogue,
// which package optimize makes from conv2d / matmul, add, the activation
// ops and a residual add for inference.
//
//	conv2d_fused {strides, paddings, dilations, groups, bias, residual, activation, min, max, pool, winograd}
//	    (x, w[, b][, r]) -> out
//	matmul_fused {transpose_x, transpose_y, bias, residual, activation, min, max}
//	    (x, y[, b][, r]) -> out
//
// out = act(p + b + r), where p is conv2d(x, w) (conv2d's attributes and
// rules) or matmul(x, y) (matmul's, with x and y of rank >= 2), b is
// there when the bool attribute bias is true (default false) and r when
// residual is (default false), in that order among the operands. b is 1-D:
// one value per output channel of the convolution (O, added to each
// N×O×OH×OW plane as a [O,1,1] bias would be), or per column of the
// product (its last dim). r has the result's type and, at run time, its
// shape: no broadcasting (the executor checks run-time shapes with the
// op's Infer, so a residual whose dynamic dims differ is an error).
// activation is "none" (the default), "relu", "sigmoid", "silu", "swish"
// (x·sigmoid(x) with the sigmoid rounded first, as multiply(x, sigmoid(x))
// computes it) or "clip", whose bounds are the attributes min and max (as
// the clip op's; only clip takes them). conv2d_fused's pool is "none"
// (the default) or "max2x2": out is then max_pool2d_values of act(p + b)
// with a 2×2 window and stride 2 (floor: a last odd row or column is
// dropped), bit for bit, computed block by block so that the
// full-resolution result need not be written out (kernels.Conv2DParams'
// Pool2); it takes no residual. conv2d_fused's bool winograd (default
// false; conv_winograd.go) computes a float32 3×3 convolution with strides
// and dilations 1 and groups 1 by Winograd's F(2×2, 3×3): 16 products per
// 2×2 output tile and input channel instead of 36, the weights transformed
// once where they are constant (Pack, kernels.ConvPackWinograd). The
// results are within float32 rounding of the direct sums (2e-6 of each
// output's product magnitudes in the tests), not their bits; the epilogue
// and the pool then apply to them as above. The optimize pass winograd
// sets it where Def.Winograd (kernels.Conv2DWinogradOK) says it is faster.
//
// Each step rounds to the dtype as the separate ops do and the activation
// runs the same functions as its op, so out has the bits of the unfused
// ops. The kernel applies the epilogue to each block of the output as soon
// as the convolution or product has finished it (per sample, or per block
// of output channels; per product for matmul), while it is in cache
// (kernels.Epilogue), instead of passing over the whole output once per
// op. Workspace and threads are conv2d's and matmul's.
//
// They are inference ops: they have no gradient rule of their own, and
// differentiating one is an error that says to differentiate the program
// before optimizing it (the unfused ops have gradients).

func init() {
	register(&Def{Name: "conv2d_fused", Infer: inferConvFused, Compute: bindConvFused, Grad: fusedNoGrad, Flops: convFlops, NCHWc: nchwcConv, Winograd: convFusedWinograd})
	register(&Def{Name: "matmul_fused", Infer: inferMatmulFused, Compute: bindMatmulFused, Grad: fusedNoGrad, Flops: fusedMatmulFlops})
}

// Epilogue describes the epilogue of a fused op built with Conv2DFused or
// MatmulFused: an optional bias and residual and an activation (see the
// fused ops for the names), with clip's bounds.
type Epilogue struct {
	Bias, Residual *ir.Value
	Activation     string
	Min, Max       float64
}

// Attrs are e's attributes, to add to the convolution's or product's.
func (e Epilogue) Attrs(base ir.Attrs) ir.Attrs {
	attrs := base.With("bias", ir.Bool(e.Bias != nil)).With("residual", ir.Bool(e.Residual != nil))
	act := e.Activation
	if act == "" {
		act = "none"
	}
	attrs = attrs.With("activation", ir.Str(act))
	if act == "clip" {
		attrs = attrs.With("min", ir.Float(e.Min)).With("max", ir.Float(e.Max))
	}
	return attrs
}

func (e Epilogue) operands(x, w *ir.Value) []*ir.Value {
	in := []*ir.Value{x, w}
	if e.Bias != nil {
		in = append(in, e.Bias)
	}
	if e.Residual != nil {
		in = append(in, e.Residual)
	}
	return in
}

// Conv2DFused appends conv2d_fused of x and w with conv2d's attributes
// convAttrs and the epilogue e.
func Conv2DFused(b *ir.Builder, x, w *ir.Value, convAttrs ir.Attrs, e Epilogue) *ir.Value {
	return b.Op1("conv2d_fused", e.Attrs(convAttrs), e.operands(x, w)...)
}

// MatmulFused appends matmul_fused of x and y with matmul's attributes
// matmulAttrs and the epilogue e.
func MatmulFused(b *ir.Builder, x, y *ir.Value, matmulAttrs ir.Attrs, e Epilogue) *ir.Value {
	return b.Op1("matmul_fused", e.Attrs(matmulAttrs), e.operands(x, y)...)
}

// fusedActs maps the activation attribute to the kernels' activations.
var fusedActs = map[string]kernels.Activation{
	"none": kernels.ActNone, "relu": kernels.ActRelu, "sigmoid": kernels.ActSigmoid,
	"silu": kernels.ActSilu, "swish": kernels.ActSwish, "clip": kernels.ActClip,
}

// fusedEpi is a fused op's decoded epilogue attributes.
type fusedEpi struct {
	bias, residual bool
	act            kernels.Activation
	lo, hi         float64
}

func fusedDecode(attrs ir.Attrs) (e fusedEpi, err error) {
	if e.bias, err = nnBool(attrs, "bias", false); err != nil {
		return
	}
	if e.residual, err = nnBool(attrs, "residual", false); err != nil {
		return
	}
	name := "none"
	if attrs.Has("activation") {
		if name, err = attrs.Str("activation"); err != nil {
			return
		}
	}
	act, ok := fusedActs[name]
	if !ok {
		err = fmt.Errorf("attribute activation:%q: want none, relu, sigmoid, silu, swish or clip", name)
		return
	}
	e.act = act
	if act != kernels.ActClip {
		if attrs.Has("min") || attrs.Has("max") {
			err = fmt.Errorf("attributes min and max are clip's bounds; activation is %q", name)
		}
		return
	}
	if e.lo, err = attrs.Float("min"); err != nil {
		return
	}
	e.hi, err = attrs.Float("max")
	return
}

// operands is how many operands the op takes with this epilogue.
func (e fusedEpi) operands() int {
	n := 2
	if e.bias {
		n++
	}
	if e.residual {
		n++
	}
	return n
}

// check checks the epilogue's operands in[2:] against the product's
// result type out, whose bias dim is channels.
func (e fusedEpi) check(in []ir.Type, out ir.Type, channels int) error {
	if err := wantOperands(in, e.operands()); err != nil {
		return fmt.Errorf("%w (x, w, then bias:%v and residual:%v)", err, e.bias, e.residual)
	}
	i := 2
	if e.bias {
		b := in[i]
		if err := nnSameDType("bias", b, out.DType, "x", in[0]); err != nil {
			return err
		}
		if b.Rank() != 1 || !nnDimEq(b.Dims[0], channels) {
			return fmt.Errorf("bias %s must be 1-D with one value per output channel (%d)", b, channels)
		}
		i++
	}
	if e.residual {
		r := in[i]
		if err := nnSameDType("residual", r, out.DType, "x", in[0]); err != nil {
			return err
		}
		if r.Rank() != out.Rank() {
			return fmt.Errorf("residual %s must have the result's shape %s", r, dimsString(out.Dims))
		}
		for k, d := range r.Dims {
			if !nnDimEq(d, out.Dims[k]) {
				return fmt.Errorf("residual %s must have the result's shape %s", r, dimsString(out.Dims))
			}
		}
	}
	return nil
}

// shape is an epilogue with e's activation and, where e has them, a
// bias and a residual without values (empty, not nil): what the kernels'
// choice of path reads, to size a workspace from shapes alone.
func (e fusedEpi) shape() kernels.Epilogue {
	ep := kernels.Epilogue{Act: e.act, Min: e.lo, Max: e.hi}
	if e.bias {
		ep.Bias32 = noValues32
	}
	if e.residual {
		ep.Residual32 = noValues32
	}
	return ep
}

// noValues32 is an empty, non-nil slice.
var noValues32 = []float32{}

// epilogue is the kernels' epilogue for the run-time operands in[2:] and
// the result out.
func (e fusedEpi) epilogue(name string, in []*tensor.Tensor, out *tensor.Tensor, channels int) (kernels.Epilogue, error) {
	ep := kernels.Epilogue{Act: e.act, Min: e.lo, Max: e.hi}
	f32 := out.DType() == tensor.F32
	i := 2
	if e.bias {
		if f32 {
			ep.Bias32 = in[i].F32()
		} else {
			ep.Bias64 = in[i].F64()
		}
		i++
	}
	if e.residual {
		r := in[i] // Infer has checked its shape against the result's
		if f32 {
			ep.Residual32 = r.F32()
		} else {
			ep.Residual64 = r.F64()
		}
	}
	if err := ep.Check(out.Len(), channels, f32); err != nil {
		return ep, fmt.Errorf("%s: %w", name, err)
	}
	return ep, nil
}

// convPoolAttr decodes conv2d_fused's pool attribute: whether out is
// the 2×2 stride-2 max pool of the fused convolution.
func convPoolAttr(attrs ir.Attrs) (bool, error) {
	if !attrs.Has("pool") {
		return false, nil
	}
	name, err := attrs.Str("pool")
	if err != nil {
		return false, err
	}
	switch name {
	case "none":
		return false, nil
	case "max2x2":
		return true, nil
	}
	return false, fmt.Errorf("attribute pool:%q: want none or max2x2", name)
}

// convPool2x2 is the pool conv2d_fused's pool:"max2x2" applies.
var convPool2x2 = nnPoolAttrs{kernel: [2]int{2, 2}, strides: [2]int{2, 2}}

func inferConvFused(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	e, err := fusedDecode(attrs)
	if err != nil {
		return nil, err
	}
	pool, err := convPoolAttr(attrs)
	if err != nil {
		return nil, err
	}
	if len(in) < 2 {
		return nil, fmt.Errorf("takes %d operands, got %d", e.operands(), len(in))
	}
	out, err := inferConv2D(in[:2], attrs)
	if err != nil {
		return nil, err
	}
	if _, err := winogradAttr(attrs, in[0].DType, in[1]); err != nil {
		return nil, err
	}
	if err := e.check(in, out[0], out[0].Dims[1]); err != nil {
		return nil, err
	}
	if !pool {
		return out, nil
	}
	if e.residual {
		return nil, fmt.Errorf("pool:\"max2x2\" takes no residual (residual:true)")
	}
	dims, err := nnPoolShape(out[0], convPool2x2)
	if err != nil {
		return nil, fmt.Errorf("pool:\"max2x2\" on the convolution's result: %w", err)
	}
	return []ir.Type{ir.TensorOf(out[0].DType, dims...)}, nil
}

// convFusedDecode decodes a fused convolution's epilogue and
// convolution attributes (conv2d_fused's, conv2d_nchwc's).
func convFusedDecode(attrs ir.Attrs) (fusedEpi, nnConvAttrs, error) {
	e, err := fusedDecode(attrs)
	if err != nil {
		return e, nnConvAttrs{}, err
	}
	a, err := nnConvDecode(attrs)
	return e, a, err
}

func bindConvFused(op *ir.Op) (Compute, error) {
	e, a, err := convFusedDecode(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	pool, err := convPoolAttr(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	name, dts := op.Name(), ewOperandDTypes(op)
	dt := dts[0]
	f32 := dt == ir.F32
	wino, err := winogradAttr(op.Attrs, dt, op.Operand(1).Type())
	if err != nil {
		return Compute{}, err
	}
	return Compute{
		Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
			if err := ewCheckInputs(name, in, dts); err != nil {
				return err
			}
			x, w := in[0], in[1]
			p, th := nnConvParams(x.Shape(), w.Shape(), a), nnThreads(c)
			ep, err := e.epilogue(name, in, out[0], p.O)
			if err != nil {
				return err
			}
			p.Epilogue, p.Pool2, p.Winograd = ep, pool, wino
			p.Packed = convPacked(c, f32)
			n := kernels.Conv2DWorkspaceFor(p, th, f32)
			switch dt {
			case ir.F32:
				kernels.Conv2D(p, x.F32(), w.F32(), out[0].F32(), Scratch[float32](c, n), th)
			case ir.F64:
				kernels.Conv2D(p, x.F64(), w.F64(), out[0].F64(), Scratch[float64](c, n), th)
			}
			return nil
		},
		Work: func(shapes [][]int, threads int) int64 {
			p := nnConvParams(shapes[0], shapes[1], a)
			p.Pool2, p.Winograd = pool, wino
			if pool {
				// The kernel's path, and so its workspace, depends on
				// which epilogue it applies, not on its values.
				p.Epilogue = e.shape()
			}
			return nnConvWorkBytes(kernels.Conv2DWorkspaceFor(p, max(threads, 1), f32), dt)
		},
		Pack: convPack(a, dt, wino),
	}, nil
}

func inferMatmulFused(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	e, err := fusedDecode(attrs)
	if err != nil {
		return nil, err
	}
	if len(in) < 2 {
		return nil, fmt.Errorf("takes %d operands, got %d", e.operands(), len(in))
	}
	if in[0].Rank() < 2 || in[1].Rank() < 2 {
		return nil, fmt.Errorf("x %s and y %s must have rank >= 2", in[0], in[1])
	}
	out, err := inferMatmul(in[:2], attrs)
	if err != nil {
		return nil, err
	}
	if err := e.check(in, out[0], out[0].Dims[out[0].Rank()-1]); err != nil {
		return nil, err
	}
	return out, nil
}

func bindMatmulFused(op *ir.Op) (Compute, error) {
	e, err := fusedDecode(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	return nnBindMatmul(op, &e)
}

func fusedMatmulFlops(op *ir.Op, in, out []ir.Type) int64 {
	return matmulFlops(op, in[:min(len(in), 2)], out)
}

// fusedNoGrad is the gradient rule of the fused ops.
func fusedNoGrad(g *GradContext) ([]*ir.Value, error) {
	return nil, fmt.Errorf("%q is an inference op made by package optimize and has no gradient: differentiate the program before optimizing it", g.Op.Name())
}

// PoolsMax2x2 reports whether op is a max_pool2d_values that
// conv2d_fused's pool:"max2x2" can stand for: a 2×2 window, stride 2, no
// padding.
func PoolsMax2x2(op *ir.Op) bool {
	if op.Name() != "max_pool2d_values" || op.NumOperands() != 1 {
		return false
	}
	a, err := nnPoolDecode(op.Attrs)
	return err == nil && a == convPool2x2
}
