//go:build !purego

package kernels

// convPackVec packs a panel of up to 32 columns with the AVX-512 loops and
// reports whether it did (not without AVX-512): convPackRowsF32 when each
// vector's columns are consecutive input elements (convPackRuns),
// convPackPairsF32 when each half of a vector reads every other one
// (column stride 2, with BMI2: convPackHalves), else the gathering
// convPackF32. Each reads 16·nv entries of each
// column array (convColsStride leaves room) and stores w floats per row;
// the lanes they read from x are the ones convPackGo reads, which the
// tables keep inside x.
func convPackVec(d, x []float32, ktab []int32, kb int, cols []int32, s, w, h, wd int) bool {
	if !hasPerfAVX512 || w > 32 || w <= 0 || kb <= 0 {
		return false
	}
	nv := (w + 15) / 16
	if len(d) < kb*w || len(ktab) < 4*kb || len(cols) < 2*s+16*nv || len(x) == 0 {
		panic("kernels: convolution panel out of range")
	}
	mask := 1<<(w-16*(nv-1)) - 1
	switch {
	case convPackRuns(cols, s, nv, 1):
		if nv == 1 {
			convPackRowsF32_1(&d[0], &x[0], &ktab[0], kb, &cols[0], s, w, mask, h, wd)
		} else {
			convPackRowsF32_2(&d[0], &x[0], &ktab[0], kb, &cols[0], s, w, mask, h, wd)
		}
	case hasBMI2 && convPackHalves(cols, s, nv):
		if nv == 1 {
			convPackPairsF32_1(&d[0], &x[0], &ktab[0], kb, &cols[0], s, w, mask, h, wd, &convPairsIdx[0])
		} else {
			convPackPairsF32_2(&d[0], &x[0], &ktab[0], kb, &cols[0], s, w, mask, h, wd, &convPairsIdx[0])
		}
	case nv == 1:
		convPackF32_1(&d[0], &x[0], &ktab[0], kb, &cols[0], s, w, mask, h, wd)
	default:
		convPackF32_2(&d[0], &x[0], &ktab[0], kb, &cols[0], s, w, mask, h, wd)
	}
	return true
}

// convPairsIdx picks the even elements of two vectors (VPERMT2PS).
var convPairsIdx = [16]int32{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30}

// hasBMI2 reports BMI2 (PDEP), which convPackPairsF32 uses, on a CPU with
// the AVX-512 loops.
var hasBMI2 = hasPerfAVX512 && func() bool {
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&(1<<8) != 0
}()

// convPackVecOK reports whether convPackVec packs (AVX-512).
func convPackVecOK() bool { return hasPerfAVX512 }

// convStridedKernels returns the micro-kernels that read a column-strided
// convolution's A in place (conv_gemm_strided.go), [h-1][v-1] as kern's
// edge kernels, or nil for a kernel without them.
func convStridedKernels(kern *gemmKernel[float32]) [][]convStridedKernel {
	if kern.name != "avx512" || kern.edge == nil || kern.mr != 14 || kern.nr != 32 || kern.lanes != 16 {
		return nil
	}
	return sgemmAVX512s2Kernels
}
