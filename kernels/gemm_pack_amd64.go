//go:build !purego

package kernels

// packTransposeAVX512 is packTranspose using the assembly 16×16 block
// transposes for the panels of the AVX-512 kernel (14 rows of A, 32 columns
// of B); the last kb%16 columns go through Go.
func packTransposeAVX512(d, src []float32, ld, kb, h, w int) {
	k16 := kb &^ 15
	if k16 == 0 || h == 0 || (w != 14 && w != 32) {
		packTranspose(d, src, ld, kb, h, w)
		return
	}
	_ = d[kb*w-1]
	_ = src[(h-1)*ld+kb-1]
	if w == 14 {
		packTransposeAVX512_14(&d[0], &src[0], ld, k16, h)
	} else {
		packTransposeAVX512_32(&d[0], &src[0], ld, k16, h)
	}
	if k16 < kb {
		packTranspose(d[k16*w:], src[k16:], ld, kb-k16, h, w)
	}
}

// packRunsAVX512 is packRuns using assembly for the panels of the AVX-512
// kernel.
func packRunsAVX512(d, src []float32, ld, kb, h, w int) {
	if kb == 0 || h == 0 || (w != 14 && w != 32) {
		packRuns(d, src, ld, kb, h, w)
		return
	}
	_ = d[kb*w-1]
	_ = src[(kb-1)*ld+h-1]
	if w == 14 {
		packCopyAVX512_14(&d[0], &src[0], ld, kb, h)
	} else {
		packCopyAVX512_32(&d[0], &src[0], ld, kb, h)
	}
}
