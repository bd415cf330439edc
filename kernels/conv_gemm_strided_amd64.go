//go:build !purego

package kernels

// convStrided3Kernels returns the three-vector micro-kernels that read a
// column-strided convolution's A in place, [h-1] for h up to
// convStrided3Max rows, or nil for a kernel without them (as
// convStridedKernels).
func convStrided3Kernels(kern *gemmKernel[float32]) []convStrided3Kernel {
	if convStridedKernels(kern) == nil {
		return nil
	}
	return sgemmAVX512s2w3Kernels
}
