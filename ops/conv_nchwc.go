package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// conv2d_nchwc is conv2d_fused on the blocked layout (NCHWcForm):
//
//	conv2d_nchwc {strides, paddings, dilations, groups, bias, residual, activation, min, max, block?, winograd?}
//	    (x, w[, b][, r]) -> out
//
// x is blocked, N×(C/k)×H×W×k, or NCHW, N×C×H×W of any depth (the
// first layer's colours); w is OIHW; out is N×(O/k)×OH×OW×k, the
// convolution of x's NCHW values by w with conv2d_fused's epilogue: b has
// O values, r is laid out like out. The channel block k is a blocked x's;
// an NCHW x needs the attribute block to say it. The other attributes
// are conv2d_fused's without pool; kernels.ConvNCHWcCheck says which
// convolutions the layout takes (groups 1, dilations 1, O a multiple of
// k, for a blocked x its C too). The weights are packed once for the
// kernel (kernels.PackConvNCHWc) through Compute.Pack; without a packed
// copy the kernel packs one block of k filters at a time into its
// workspace (convNCHWcByBlock). winograd:true (winogradAttr; a blocked x
// of whole blocks, f32, 3×3, strides, dilations and groups 1) computes by
// Winograd's F(2×2, 3×3), within float32 rounding of the direct sums: the
// packed weights are then the 16 transformed C×O matrices, and
// Def.Winograd says yes where kernels.ConvNCHWcWinogradOK finds the path
// faster. No gradient.

func init() {
	register(&Def{Name: "conv2d_nchwc", Infer: inferConvNCHWc, Compute: bindConvNCHWc, Grad: fusedNoGrad, Flops: convNCHWcFlops, Winograd: convNCHWcWinograd})
}

// convNCHWcPlain is the NCHW type of conv2d_nchwc's x, its channel
// block and whether x is blocked.
func convNCHWcPlain(x ir.Type, attrs ir.Attrs) (ir.Type, int, bool, error) {
	if x.Rank() == 5 {
		if err := nchwcBlockedType("x", x); err != nil {
			return ir.Type{}, 0, false, err
		}
		if attrs.Has("block") {
			if b, err := nchwcBlockAttr(attrs); err != nil || b != x.Dims[4] {
				return ir.Type{}, 0, false, fmt.Errorf("attribute block: x %s is blocked by %d", x, x.Dims[4])
			}
		}
		return nchwcUnblock(x), x.Dims[4], true, nil
	}
	if x.IsStack() || x.Unranked || x.DType != ir.F32 || x.Rank() != 4 {
		return ir.Type{}, 0, false, fmt.Errorf("x %s must be f32, blocked (rank 5) or NCHW (rank 4)", x)
	}
	b, err := nchwcBlockAttr(attrs)
	if err != nil {
		return ir.Type{}, 0, false, fmt.Errorf("an NCHW x needs the output's channel block: %w", err)
	}
	return x, b, false, nil
}

func inferConvNCHWc(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	e, err := fusedDecode(attrs)
	if err != nil {
		return nil, err
	}
	if attrs.Has("pool") {
		return nil, fmt.Errorf("takes no attribute pool: the blocked convolution has no fused pool")
	}
	if len(in) < 2 {
		return nil, fmt.Errorf("takes %d operands, got %d", e.operands(), len(in))
	}
	x, b, blockedIn, err := convNCHWcPlain(in[0], attrs)
	if err != nil {
		return nil, err
	}
	plain, err := inferConv2D([]ir.Type{x, in[1]}, attrs)
	if err != nil {
		return nil, err
	}
	a, _ := nnConvDecode(attrs) // inferConv2D has decoded them
	p := kernels.Conv2DParams{C: x.Dims[1], O: in[1].Dims[0], DH: a.dilations[0], DW: a.dilations[1], Groups: a.groups}
	if p.C == ir.Dynamic || p.O == ir.Dynamic {
		return nil, fmt.Errorf("x %s and w %s must have static channels", in[0], in[1])
	}
	if p.Winograd, err = winogradAttr(attrs, x.DType, in[1]); err != nil {
		return nil, err
	}
	if p.Winograd {
		p.KH, p.KW, p.SH, p.SW = 3, 3, 1, 1 // winogradAttr has checked them
	}
	if err := kernels.ConvNCHWcCheck(p, b, blockedIn); err != nil {
		return nil, err
	}
	out := nchwcBlock(plain[0], b)
	if err := e.check(in, out, p.O); err != nil {
		return nil, err
	}
	return []ir.Type{out}, nil
}

// blockedConv is the kernels' description of a conv2d_nchwc: its
// convolution, channel block and whether x is blocked.
type blockedConv struct {
	p         kernels.Conv2DParams
	b         int
	blockedIn bool
}

// convNCHWcParams is conv2d_nchwc for operands of shapes xs and ws; b is
// the attribute block, which an NCHW x takes; wino its attribute winograd.
// A convolution marked winograd computes by Winograd only at the batches
// where kernels.ConvNCHWcWinogradRuns says so (enough output tiles), its
// packed form with it.
func convNCHWcParams(xs, ws []int, a nnConvAttrs, b int, wino bool) blockedConv {
	p := nnConvParams(xs, ws, a)
	p.Winograd = wino && kernels.ConvNCHWcWinogradRuns(p)
	if len(xs) == 5 {
		p.C *= xs[4]
		return blockedConv{p, xs[4], true}
	}
	return blockedConv{p, b, false}
}

// convNCHWcBlockAttr is conv2d_nchwc's attribute block, or 0 where it
// has none (inferConvNCHWc has checked it).
func convNCHWcBlockAttr(attrs ir.Attrs) int {
	b, err := nchwcBlockAttr(attrs)
	if err != nil {
		return 0
	}
	return b
}

func bindConvNCHWc(op *ir.Op) (Compute, error) {
	e, a, err := convFusedDecode(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	name, blk := op.Name(), convNCHWcBlockAttr(op.Attrs)
	wino, err := op.Attrs.Bool("winograd")
	if !op.Attrs.Has("winograd") {
		wino, err = false, nil
	}
	if err != nil {
		return Compute{}, err
	}
	return Compute{
		Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
			x, w := in[0], in[1]
			k := convNCHWcParams(x.Shape(), w.Shape(), a, blk, wino)
			th := nnThreads(c)
			ep, err := e.epilogue(name, in, out[0], k.p.O)
			if err != nil {
				return err
			}
			k.p.Epilogue = ep
			packed := convPacked(c, true)
			if packed == nil || k.p.Winograd && !kernels.ConvNCHWcWinogradPacked(k.p, k.b, packed) {
				convNCHWcByBlock(c, k, x.F32(), w.F32(), out[0].F32(), th)
				return nil
			}
			ws := Scratch[float32](c, kernels.ConvNCHWcWorkspace(k.p, k.b, k.blockedIn, th))
			kernels.ConvNCHWc(k.p, k.b, k.blockedIn, x.F32(), packed, out[0].F32(), ws, th)
			return nil
		},
		Work: func(shapes [][]int, threads int) int64 {
			k := convNCHWcParams(shapes[0], shapes[1], a, blk, wino)
			k.p.Epilogue = e.shape()
			th := max(threads, 1)
			q := k.oneBlock()
			whole := WorkBytes(kernels.ConvNCHWcWorkspace(k.p, k.b, k.blockedIn, th), 4)
			byBlock := WorkBytes(kernels.PackConvNCHWcLen(q), 4, kernels.ConvNCHWcWorkspace(q, k.b, k.blockedIn, th), 4)
			return max(whole, byBlock)
		},
		Pack: convNCHWcPack(a, blk, wino),
	}, nil
}

// oneBlock is k's convolution for one sample and one block of output
// channels: what convNCHWcByBlock runs.
func (k blockedConv) oneBlock() kernels.Conv2DParams {
	q := k.p
	q.N, q.O = 1, k.b
	return q
}

// convNCHWcByBlock is ConvNCHWc without a packed copy of the weights
// (no pack cache, or no room in it): block by block of output channels,
// each block's filters packed into the workspace, then each sample's
// plane of that block, so that the scratch holds one block's weights
// rather than all of them (9.4 MB for a 512→512 3×3 layer, over the
// peak of the NCHW convolution, which packs panel by panel).
func convNCHWcByBlock(c *Ctx, k blockedConv, x, w, out []float32, th int) {
	p, b := k.p, k.b
	q := k.oneBlock()
	packed := Scratch[float32](c, kernels.PackConvNCHWcLen(q))
	ws := Scratch[float32](c, kernels.ConvNCHWcWorkspace(q, b, k.blockedIn, th))
	filters, plane, sample := q.O*q.C*q.KH*q.KW, p.OutH()*p.OutW()*b, p.C*p.H*p.W
	for ob := range p.O / b {
		kernels.PackConvNCHWc(q, b, k.blockedIn, w[ob*filters:(ob+1)*filters], packed)
		if p.Epilogue.Bias32 != nil {
			q.Epilogue.Bias32 = p.Epilogue.Bias32[ob*b : (ob+1)*b]
		}
		for n := range p.N {
			at := (n*p.O/b + ob) * plane
			if p.Epilogue.Residual32 != nil {
				q.Epilogue.Residual32 = p.Epilogue.Residual32[at : at+plane]
			}
			kernels.ConvNCHWc(q, b, k.blockedIn, x[n*sample:(n+1)*sample], packed, out[at:at+plane], ws, th)
		}
	}
}

// convNCHWcPack is conv2d_nchwc's Compute.Pack: the weights reordered by
// kernels.PackConvNCHWc once while they stay the same, in the form the
// block, x's layout and winograd choose (the block times 2, plus 1 for a
// blocked x, plus convNCHWcWinogradForm for Winograd's).
func convNCHWcPack(a nnConvAttrs, blk int, wino bool) *Pack {
	return &Pack{
		Operand: 1,
		Bytes: func(shapes [][]int) int64 {
			k := convNCHWcParams(shapes[0], shapes[1], a, blk, wino)
			return int64(kernels.PackConvNCHWcLen(k.p)) * 4
		},
		Form: func(shapes [][]int) uint64 {
			k := convNCHWcParams(shapes[0], shapes[1], a, blk, wino)
			form := uint64(k.b) * 2
			if k.blockedIn {
				form++
			}
			if k.p.Winograd {
				form += convNCHWcWinogradForm
			}
			return form
		},
		Fn: func(shapes [][]int, w *tensor.Tensor, dst []byte) {
			k := convNCHWcParams(shapes[0], shapes[1], a, blk, wino)
			kernels.PackConvNCHWc(k.p, k.b, k.blockedIn, w.F32(), nnBytesAs[float32](dst))
		},
	}
}

// convNCHWcFlops is conv2d_fused's work, counted on the NCHW types.
func convNCHWcFlops(op *ir.Op, in, out []ir.Type) int64 {
	if len(in) < 2 || len(out) != 1 || in[0].Rank() < 4 || out[0].Rank() != 5 {
		return elements(in) + elements(out)
	}
	x := in[0]
	if x.Rank() == 5 {
		x = nchwcUnblock(x)
	}
	plain := append([]ir.Type{x}, in[1:]...)
	return convFlops(op, plain, []ir.Type{nchwcUnblock(out[0])})
}

// convNCHWcWinogradForm marks the packed form of Winograd's weights.
const convNCHWcWinogradForm = 1 << 16

// convNCHWcWinograd is conv2d_nchwc's Def.Winograd: a float32 3×3
// convolution at stride 1 of a blocked x with static height and width,
// where kernels.ConvNCHWcWinogradOK finds Winograd faster than the
// direct kernel.
func convNCHWcWinograd(op *ir.Op) bool {
	if op.NumOperands() < 2 {
		return false
	}
	x, w := op.Operand(0).Type(), op.Operand(1).Type()
	if x.Rank() != 5 || x.DType != ir.F32 || w.Rank() != 4 {
		return false
	}
	a, err := nnConvDecode(op.Attrs)
	if err != nil {
		return false
	}
	xs := []int{1, x.Dims[1], x.Dims[2], x.Dims[3], x.Dims[4]}
	for _, d := range append(xs, w.Dims...) {
		if d == ir.Dynamic {
			return false
		}
	}
	k := convNCHWcParams(xs, w.Dims, a, x.Dims[4], true)
	return kernels.ConvNCHWcWinogradOK(k.p, k.b)
}
