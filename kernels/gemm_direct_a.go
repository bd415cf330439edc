package kernels

import "unsafe"

// A product whose B is packed once (GemmPackedB: a weight at inference)
// still packed the rows of op(A) into panels on every call; for the MLP
// at batch 64 (64×784 times 784×128) that was 5% of the call. The
// direct-A micro-kernels read A's rows where they are (one broadcast per
// row and k step, from its own row), with the same multiply-adds and
// store as the packed kernel of the same height, so the bits are the
// same and nothing is packed.

// useDirectA reports whether gemmPackedRange reads op(A) in place: A not
// transposed, direct kernels for this family, and a row stride that does
// not put every row in the same L1 sets (a multiple of 2 KiB would have
// all 14 rows' streams compete for the same ways).
func useDirectA[T float](kern *gemmKernel[T], transA bool, lda int) bool {
	if transA || kern.directA == nil {
		return false
	}
	var zero T
	return lda*int(unsafe.Sizeof(zero))%2048 != 0
}

// gemmTileDirectA is gemmTile for the tile at (ir, jr) of a block whose
// first row of op(A) for this depth slice is at a[0] (row stride lda):
// the same kernel arithmetic, with A read in place, and the same edge
// kernels — a tile of whole vectors narrower than nr (the last panel of
// 48 columns) is stored by the narrower kernel, one whose width is not
// whole vectors is computed into tmp and merged. A panel of at most one
// vector (the MLP's 10 outputs) so takes half the multiply-adds of the
// full-width kernel.
func gemmTileDirectA[T float](kern *gemmKernel[T], a []T, lda int, bp, tmp []T, mb, nb, kb, ir, jr int, alpha, beta T, c []T, ldc int) {
	mr, nr := kern.mr, kern.nr
	mh, nw := min(mr, mb-ir), min(nr, nb-jr)
	v := ceilDiv(nw, kern.lanes)
	fn := kern.directA[mh-1][v-1]
	_, _ = a[(ir+mh-1)*lda+kb-1], bp[(jr+nr)*kb-1]
	ar, b := &a[ir*lda], &bp[jr*kb]
	if nw == v*kern.lanes {
		_ = c[(ir+mh-1)*ldc+jr+nw-1]
		fn(kb, ar, b, &c[ir*ldc+jr], lda, ldc, alpha, beta)
		return
	}
	_ = tmp[mh*nr-1]
	fn(kb, ar, b, &tmp[0], lda, nr, alpha, 0)
	mergeTile(c[ir*ldc+jr:], ldc, tmp, nr, mh, nw, beta)
}
