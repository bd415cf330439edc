//go:build !amd64 || purego

package kernels

// convStrided3Kernels: no three-vector strided kernels here.
func convStrided3Kernels(kern *gemmKernel[float32]) []convStrided3Kernel { return nil }

// convStridedScatter: without the strided kernels nothing calls it; the
// loop states what the assembly does.
func convStridedScatter(d, src []float32, ldd, lds, rows, cols int) {
	convStridedScatterGo(d, src, ldd, lds, rows, cols)
}
