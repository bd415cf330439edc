//go:build !purego

package kernels

// col2imStride2Idx is the loop's permutation: lane L takes element L>>1.
var col2imStride2Idx = [16]int32{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7}

// col2imStride2F32Vec runs col2imStride2F32AVX512 after checking that
// every element it reads or writes lies in dst and src: lo and hi bound
// the src elements the table reaches from a row's start, width is the dst
// row length.
func col2imStride2F32Vec(dst, src []float32, tab []int64, dstStride, srcStride, rows, chunks, kw, width, lo, hi int) {
	if rows <= 0 || chunks <= 0 {
		return
	}
	if lo < 0 || (rows-1)*srcStride+hi > len(src) || (rows-1)*dstStride+width > len(dst) || len(tab) < chunks*(1+3*kw) {
		panic("kernels: col2im with stride 2 out of range")
	}
	col2imStride2F32AVX512(&dst[0], &src[0], &tab[0], &col2imStride2Idx, dstStride, srcStride, rows, chunks, kw)
}

func col2imStride2OK() bool { return hasPerfAVX512 }
