//go:build !amd64 || purego

package kernels

// Without assembly only the portable Go micro-kernel exists.

func archSgemmKernels() []*gemmKernel[float32] { return nil }

func archDgemmKernels() []*gemmKernel[float64] { return nil }
