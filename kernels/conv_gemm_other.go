//go:build !amd64 || purego

package kernels

func convPackVec(d, x []float32, ktab []int32, kb int, cols []int32, s, w, h, wd int) bool {
	return false
}

func convPackVecOK() bool { return false }

// hasBMI2 is convPackPairsF32's CPU feature: none without the AVX-512 loops.
const hasBMI2 = false

func convStridedKernels(kern *gemmKernel[float32]) [][]convStridedKernel { return nil }
