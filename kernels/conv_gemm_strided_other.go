//go:build !amd64 || purego

package kernels

// convStrided3Kernels: no three-vector strided kernels here.
func convStrided3Kernels(kern *gemmKernel[float32]) []convStrided3Kernel { return nil }
