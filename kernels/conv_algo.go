package kernels

// convAlgo is how Conv2D computes a convolution. Conv2D and
// Conv2DWorkspaceFor both ask fwdAlgo, so the workspace declared is the
// one the chosen kernel uses.
type convAlgo uint8

const (
	convIm2col convAlgo = iota // per image im2col blocks and GEMM (conv.go)
	convDirect                 // float32 direct rows kernel (perf_conv.go)
	convGemm                   // float32 batched implicit-im2col GEMM (conv_gemm.go)
)

// fwdAlgo picks Conv2D's kernel for float32 (f32) or float64 elements of
// a convolution with a non-empty output.
func (p Conv2DParams) fwdAlgo(f32 bool) convAlgo {
	switch {
	case !f32:
		return convIm2col
	case p.convDirectFwd():
		return convDirect
	case p.convGemmOK():
		return convGemm
	}
	return convIm2col
}

// conv2DFast runs Conv2D's float32 kernels other than im2col and reports
// whether it did.
func conv2DFast[T nnFloat](p Conv2DParams, x, w, out, ws []T, threads int) bool {
	xf, ok := any(x).([]float32)
	if !ok {
		return false
	}
	wf, of, wsf := any(w).([]float32), any(out).([]float32), any(ws).([]float32)
	switch p.fwdAlgo(true) {
	case convDirect:
		conv2DDirect(p, xf, wf, of, wsf, threads)
	case convGemm:
		conv2DGemm(p, xf, wf, of, threads)
	default:
		return false
	}
	return true
}
