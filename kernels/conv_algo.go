package kernels

// convAlgo is how Conv2D computes a convolution. Conv2D and
// Conv2DWorkspaceFor both ask fwdAlgo, so the workspace declared is the
// one the chosen kernel uses.
type convAlgo uint8

const (
	convIm2col    convAlgo = iota // per image im2col blocks and GEMM (conv.go)
	convDirect                    // float32 direct rows kernel (perf_conv.go)
	convGemm                      // float32 batched implicit-im2col GEMM (conv_gemm.go)
	convDepthwise                 // one plane per group (conv_depthwise.go)
	convWinograd                  // float32 F(2×2, 3×3) (winograd_nchw.go)
)

// convForce, when set, is the kernel fwdAlgo picks, for benchmarks that
// compare kernels on shapes all of them handle.
var convForce struct {
	set  bool
	algo convAlgo
}

// fwdAlgo picks Conv2D's kernel for float32 (f32) or float64 elements of
// a convolution with a non-empty output.
func (p Conv2DParams) fwdAlgo(f32 bool) convAlgo {
	switch {
	case convForce.set:
		return convForce.algo
	case p.depthwise():
		return convDepthwise
	case !f32:
		return convIm2col
	case p.winogradNCHW():
		return convWinograd
	case p.convDirectFwd():
		return convDirect
	case p.convGemmOK():
		return convGemm
	}
	return convIm2col
}

// conv2DFast runs Conv2D's kernels other than im2col and reports whether
// it did.
func conv2DFast[T nnFloat](p Conv2DParams, x, w, out, ws []T, threads int) bool {
	xf, f32 := any(x).([]float32)
	switch p.fwdAlgo(f32) {
	case convDepthwise:
		conv2DDepthwise(p, x, w, out, ws, threads)
	case convDirect:
		conv2DDirect(p, xf, any(w).([]float32), any(out).([]float32), any(ws).([]float32), threads)
	case convGemm:
		conv2DGemm(p, xf, any(w).([]float32), any(out).([]float32), threads)
	case convWinograd:
		conv2DWinograd(p, xf, any(w).([]float32), any(out).([]float32), any(ws).([]float32), threads)
	default:
		return false
	}
	return true
}
