package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// conv2d_nchwc is conv2d_fused on the blocked layout (NCHWcForm):
//
//	conv2d_nchwc {strides, paddings, dilations, groups, bias, residual, activation, min, max}
//	    (x, w[, b][, r]) -> out
//
// x is blocked, N×(C/16)×H×W×16, or NCHW, N×C×H×W of any depth (the
// first layer's colours); w is OIHW; out is N×(O/16)×OH×OW×16, the
// convolution of x's NCHW values by w with conv2d_fused's epilogue: b has
// O values, r is laid out like out. The attributes are conv2d_fused's
// without pool; kernels.ConvNCHWcCheck says which convolutions the
// layout takes (groups 1, dilations 1, O a multiple of 16, for a blocked
// x its C too). The weights are packed once for the kernel
// (kernels.PackConvNCHWc) through Compute.Pack; without a packed copy
// the kernel packs one block of 16 filters at a time into its workspace
// (convNCHWcByBlock). No gradient.

func init() {
	register(&Def{Name: "conv2d_nchwc", Infer: inferConvNCHWc, Compute: bindConvNCHWc, Grad: fusedNoGrad, Flops: convNCHWcFlops})
}

// convNCHWcPlain is the NCHW type of conv2d_nchwc's x and whether x is
// blocked.
func convNCHWcPlain(x ir.Type) (ir.Type, bool, error) {
	if x.Rank() == 5 {
		if err := nchwcBlockedType("x", x); err != nil {
			return ir.Type{}, false, err
		}
		return nchwcUnblock(x), true, nil
	}
	if x.IsStack() || x.Unranked || x.DType != ir.F32 || x.Rank() != 4 {
		return ir.Type{}, false, fmt.Errorf("x %s must be f32, blocked (rank 5) or NCHW (rank 4)", x)
	}
	return x, false, nil
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
	x, blockedIn, err := convNCHWcPlain(in[0])
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
	if err := kernels.ConvNCHWcCheck(p, blockedIn); err != nil {
		return nil, err
	}
	out := nchwcBlock(plain[0])
	if err := e.check(in, out, p.O); err != nil {
		return nil, err
	}
	return []ir.Type{out}, nil
}

// convNCHWcParams is the kernels' description of conv2d_nchwc for
// operands of shapes xs and ws, and whether x is blocked.
func convNCHWcParams(xs, ws []int, a nnConvAttrs) (kernels.Conv2DParams, bool) {
	p := nnConvParams(xs, ws, a)
	if len(xs) == 5 {
		p.C *= kernels.NCHWcBlock
		return p, true
	}
	return p, false
}

func bindConvNCHWc(op *ir.Op) (Compute, error) {
	e, a, err := convFusedDecode(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	name := op.Name()
	return Compute{
		Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
			x, w := in[0], in[1]
			p, blockedIn := convNCHWcParams(x.Shape(), w.Shape(), a)
			th := nnThreads(c)
			ep, err := e.epilogue(name, in, out[0], p.O)
			if err != nil {
				return err
			}
			p.Epilogue = ep
			packed := convPacked(c, true)
			if packed == nil {
				convNCHWcByBlock(c, p, blockedIn, x.F32(), w.F32(), out[0].F32(), th)
				return nil
			}
			ws := Scratch[float32](c, kernels.ConvNCHWcWorkspace(p, blockedIn, th))
			kernels.ConvNCHWc(p, blockedIn, x.F32(), packed, out[0].F32(), ws, th)
			return nil
		},
		Work: func(shapes [][]int, threads int) int64 {
			p, blockedIn := convNCHWcParams(shapes[0], shapes[1], a)
			p.Epilogue = e.shape()
			th := max(threads, 1)
			q := convNCHWcBlockParams(p)
			whole := WorkBytes(kernels.ConvNCHWcWorkspace(p, blockedIn, th), 4)
			byBlock := WorkBytes(kernels.PackConvNCHWcLen(q), 4, kernels.ConvNCHWcWorkspace(q, blockedIn, th), 4)
			return max(whole, byBlock)
		},
		Pack: convNCHWcPack(a),
	}, nil
}

// convNCHWcBlockParams is p for one sample and one block of output
// channels: what convNCHWcByBlock runs.
func convNCHWcBlockParams(p kernels.Conv2DParams) kernels.Conv2DParams {
	p.N, p.O = 1, kernels.NCHWcBlock
	return p
}

// convNCHWcByBlock is ConvNCHWc without a packed copy of the weights
// (no pack cache, or no room in it): block by block of output channels,
// each block's filters packed into the workspace, then each sample's
// plane of that block, so that the scratch holds one block's weights
// rather than all of them (9.4 MB for a 512→512 3×3 layer, over the
// peak of the NCHW convolution, which packs panel by panel).
func convNCHWcByBlock(c *Ctx, p kernels.Conv2DParams, blockedIn bool, x, w, out []float32, th int) {
	const b = kernels.NCHWcBlock
	q := convNCHWcBlockParams(p)
	packed := Scratch[float32](c, kernels.PackConvNCHWcLen(q))
	ws := Scratch[float32](c, kernels.ConvNCHWcWorkspace(q, blockedIn, th))
	filters, plane, sample := len(packed), p.OutH()*p.OutW()*b, p.C*p.H*p.W
	for ob := range p.O / b {
		kernels.PackConvNCHWc(q, blockedIn, w[ob*filters:(ob+1)*filters], packed)
		if p.Epilogue.Bias32 != nil {
			q.Epilogue.Bias32 = p.Epilogue.Bias32[ob*b : (ob+1)*b]
		}
		for n := range p.N {
			at := (n*p.O/b + ob) * plane
			if p.Epilogue.Residual32 != nil {
				q.Epilogue.Residual32 = p.Epilogue.Residual32[at : at+plane]
			}
			kernels.ConvNCHWc(q, blockedIn, x[n*sample:(n+1)*sample], packed, out[at:at+plane], ws, th)
		}
	}
}

// convNCHWcPack is conv2d_nchwc's Compute.Pack: the weights reordered by
// kernels.PackConvNCHWc once while they stay the same, in the form x's
// layout chooses (1 blocked, 0 NCHW).
func convNCHWcPack(a nnConvAttrs) *Pack {
	return &Pack{
		Operand: 1,
		Bytes: func(shapes [][]int) int64 {
			p, _ := convNCHWcParams(shapes[0], shapes[1], a)
			return int64(kernels.PackConvNCHWcLen(p)) * 4
		},
		Form: func(shapes [][]int) uint64 {
			if _, blockedIn := convNCHWcParams(shapes[0], shapes[1], a); blockedIn {
				return 1
			}
			return 0
		},
		Fn: func(shapes [][]int, w *tensor.Tensor, dst []byte) {
			p, blockedIn := convNCHWcParams(shapes[0], shapes[1], a)
			kernels.PackConvNCHWc(p, blockedIn, w.F32(), nnBytesAs[float32](dst))
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
