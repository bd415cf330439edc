//go:build !purego

package kernels

// convPackVec packs a panel of up to 32 columns with the AVX-512 loops and
// reports whether it did (not without AVX-512): convPackRowsF32 when each
// vector's columns are consecutive input elements (convPackRuns), else the
// gathering convPackF32. Either
// reads 16·nv entries of each column array (convColsStride leaves room)
// and stores w floats per row; the lanes they read from x are the ones
// convPackGo reads, which the tables keep inside x.
func convPackVec(d, x []float32, ktab []int32, kb int, cols []int32, s, w, h, wd int) bool {
	if !hasPerfAVX512 || w > 32 || w <= 0 || kb <= 0 {
		return false
	}
	nv := (w + 15) / 16
	if len(d) < kb*w || len(ktab) < 4*kb || len(cols) < 2*s+16*nv || len(x) == 0 {
		panic("kernels: convolution panel out of range")
	}
	mask := 1<<(w-16*(nv-1)) - 1
	runs := convPackRuns(cols, s, nv)
	switch {
	case nv == 1 && runs:
		convPackRowsF32_1(&d[0], &x[0], &ktab[0], kb, &cols[0], s, w, mask, h, wd)
	case nv == 1:
		convPackF32_1(&d[0], &x[0], &ktab[0], kb, &cols[0], s, w, mask, h, wd)
	case runs:
		convPackRowsF32_2(&d[0], &x[0], &ktab[0], kb, &cols[0], s, w, mask, h, wd)
	default:
		convPackF32_2(&d[0], &x[0], &ktab[0], kb, &cols[0], s, w, mask, h, wd)
	}
	return true
}

// convPackVecOK reports whether convPackVec packs (AVX-512).
func convPackVecOK() bool { return hasPerfAVX512 }
