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

// convStridedScatter sets d[o*ldd+i] = src[i*lds+o] for i < rows and
// o < cols, a multiple of 16: the strided product's block of Cᵀ written
// into the output planes, transposed 16×16 at a time in registers.
func convStridedScatter(d, src []float32, ldd, lds, rows, cols int) {
	if rows == 0 || cols == 0 {
		return
	}
	_ = d[(cols-1)*ldd+rows-1]
	_ = src[(rows-1)*lds+cols-1]
	convStridedScatterAVX512(&d[0], &src[0], ldd, lds, rows, cols)
}
