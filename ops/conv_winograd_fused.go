package ops

import (
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
)

// convFusedWinograd is conv2d_fused's Def.Winograd: a float32 3×3
// convolution with strides and dilations 1 and one group, static channels
// and map size, on which the kernel has the Winograd path and gains by it
// (kernels.Conv2DWinogradOK; a dynamic batch counts as one sample).
func convFusedWinograd(op *ir.Op) bool {
	if op.NumOperands() < 2 || op.NumResults() != 1 {
		return false
	}
	x, w := op.Operand(0).Type(), op.Operand(1).Type()
	if x.IsStack() || x.Unranked || x.DType != ir.F32 || x.Rank() != 4 || !w.IsStatic() || w.Rank() != 4 {
		return false
	}
	for _, d := range x.Dims[1:] {
		if d == ir.Dynamic {
			return false
		}
	}
	_, a, err := convFusedDecode(op.Attrs)
	if err != nil {
		return false
	}
	pool, err := convPoolAttr(op.Attrs)
	if err != nil {
		return false
	}
	xs := append([]int{max(x.Dims[0], 1)}, x.Dims[1:]...)
	p := nnConvParams(xs, w.Dims, a)
	p.Pool2 = pool
	return kernels.Conv2DWinogradOK(p)
}
