package ops

import (
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// convPack is conv2d's and conv2d_fused's Compute.Pack: the float32
// weights packed into the convolution GEMM's panels, in the orientation
// the input's batch and map size choose, or reordered into the direct
// kernel's tiles (kernels.Conv2DPackForm), so that weights constant at
// inference are not packed again on every call, or with winograd (the
// fused convolution's winograd:true) transformed into Winograd's U = G g Gᵀ
// as the GEMM's panels. Convolutions that another kernel computes
// (depthwise, im2col) have nothing to pack: Bytes is 0.
func convPack(a nnConvAttrs, dt ir.DType, winograd bool) *Pack {
	if dt != ir.F32 {
		return nil
	}
	params := func(shapes [][]int) (kernels.Conv2DParams, bool) {
		if len(shapes) < 2 || len(shapes[0]) != 4 || len(shapes[1]) != 4 {
			return kernels.Conv2DParams{}, false
		}
		p := nnConvParams(shapes[0], shapes[1], a)
		p.Winograd = winograd
		return p, true
	}
	return &Pack{
		Operand: 1,
		Bytes: func(shapes [][]int) int64 {
			p, ok := params(shapes)
			if !ok {
				return 0
			}
			return int64(kernels.Conv2DPackedLen(p)) * 4
		},
		Form: func(shapes [][]int) uint64 {
			p, ok := params(shapes)
			if !ok {
				return 0
			}
			return uint64(kernels.Conv2DPackForm(p))
		},
		Fn: func(shapes [][]int, w *tensor.Tensor, dst []byte) {
			p, _ := params(shapes)
			kernels.PackConv2D(p, w.F32(), nnBytesAs[float32](dst))
		},
	}
}

// convPacked is the packed weights the executor gives this call, or nil.
func convPacked(c *Ctx, f32 bool) []float32 {
	if pb := c.Packed(); pb != nil && f32 {
		return nnBytesAs[float32](pb)
	}
	return nil
}
