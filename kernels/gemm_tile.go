package kernels

// macroKernel multiplies a packed mb×kb block of A by a packed kb×nb block of
// B into C, one mr×nr tile at a time. Column panels are the outer loop: a
// kb×nr panel of B is reused from L1/L2 by every row panel of A in turn.
func macroKernel[T float](kern *gemmKernel[T], ap, bp, tmp []T, mb, nb, kb int, alpha, beta T, c []T, ldc int) {
	mr, nr := kern.mr, kern.nr
	for jr := 0; jr < nb; jr += nr {
		for ir := 0; ir < mb; ir += mr {
			gemmTile(kern, ap, bp, tmp, mb, nb, kb, ir, jr, alpha, beta, c, ldc)
		}
	}
}

// gemmTile computes the tile at (ir, jr). Edge tiles use the kernel variant
// of their size when there is one; a tile whose width is not a whole number
// of vectors is computed into tmp and merged, so the kernel never writes
// outside C.
func gemmTile[T float](kern *gemmKernel[T], ap, bp, tmp []T, mb, nb, kb, ir, jr int, alpha, beta T, c []T, ldc int) {
	mr, nr := kern.mr, kern.nr
	mh, nw := min(mr, mb-ir), min(nr, nb-jr)
	a, b := &ap[ir*kb], &bp[jr*kb]
	if mh == mr && nw == nr {
		kern.fn(kb, a, b, &c[ir*ldc+jr], ldc, alpha, beta)
		return
	}
	fn, h, w := kern.fn, mr, nr
	if kern.edge != nil {
		v := ceilDiv(nw, kern.lanes)
		fn, h, w = kern.edge[mh-1][v-1], mh, v*kern.lanes
	}
	if h == mh && w == nw {
		fn(kb, a, b, &c[ir*ldc+jr], ldc, alpha, beta)
		return
	}
	fn(kb, a, b, &tmp[0], nr, alpha, 0)
	mergeTile(c[ir*ldc+jr:], ldc, tmp, nr, mh, nw, beta)
}

// mergeTile merges the mh×nw tile tmp (rows nr apart, alpha·A·B already)
// into C: C = tmp + beta·C, or tmp where beta is 0.
func mergeTile[T float](c []T, ldc int, tmp []T, nr, mh, nw int, beta T) {
	for i := range mh {
		dst := c[i*ldc : i*ldc+nw]
		src := tmp[i*nr : i*nr+nw]
		if beta == 0 {
			copy(dst, src)
			continue
		}
		for j := range dst {
			dst[j] = src[j] + beta*dst[j]
		}
	}
}
