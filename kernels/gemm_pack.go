package kernels

import "unsafe"

// Packed layouts. A block of op(A) (mb×kb) is stored as ceil(mb/mr) panels;
// panel r holds rows [r·mr, r·mr+mr) as kb consecutive groups of mr values
// (one column of the panel per k step), so the micro-kernel reads A
// sequentially. B (kb×nb) is stored the same way in nr-wide column panels.
// Rows or columns past the edge are zero so the kernel can always run a full
// tile.

// packA packs op(A)[i0:i0+mb, p0:p0+kb] into dst.
func packA[T float](dst []T, pk panelPackers[T], trans bool, a []T, lda, i0, p0, mb, kb, mr int) {
	for ir := 0; ir < mb; ir += mr {
		d := dst[ir*kb : ir*kb+kb*mr]
		h := min(mr, mb-ir)
		if trans { // A is stored k×m: a panel column is a contiguous run
			pk.runs(d, a[p0*lda+i0+ir:], lda, kb, h, mr)
		} else { // A is stored m×k: a panel row is a contiguous run
			pk.transpose(d, a[(i0+ir)*lda+p0:], lda, kb, h, mr)
		}
	}
}

// packB packs op(B)[p0:p0+kb, j0:j0+nb] into dst.
func packB[T float](dst []T, pk panelPackers[T], trans bool, b []T, ldb, p0, j0, kb, nb, nr int) {
	for jr := 0; jr < nb; jr += nr {
		d := dst[jr*kb : jr*kb+kb*nr]
		w := min(nr, nb-jr)
		if trans { // B is stored n×k
			pk.transpose(d, b[(j0+jr)*ldb+p0:], ldb, kb, w, nr)
		} else { // B is stored k×n
			pk.runs(d, b[p0*ldb+j0+jr:], ldb, kb, w, nr)
		}
	}
}

// packRuns sets d[p*w+r] = src[p*ld+r] for p < kb, r < h, zero for r ≥ h.
func packRuns[T float](d, src []T, ld, kb, h, w int) {
	for p := range kb {
		row := d[p*w : p*w+w]
		copy(row, src[p*ld:p*ld+h])
		clear(row[h:])
	}
}

// packTranspose sets d[p*w+r] = src[r*ld+p] for p < kb, r < h, zero for
// r ≥ h. It walks the h source rows in step, four columns at a time, so each
// row is read sequentially and d is written sequentially.
func packTranspose[T float](d, src []T, ld, kb, h, w int) {
	if kb == 0 {
		return
	}
	_ = d[kb*w-1]
	if h > 0 {
		_ = src[(h-1)*ld+kb-1]
	}
	var zero T
	es := unsafe.Sizeof(zero)
	dp := unsafe.Pointer(unsafe.SliceData(d))
	sp := unsafe.Pointer(unsafe.SliceData(src))
	p := 0
	for ; p+4 <= kb; p += 4 {
		d0 := unsafe.Add(dp, uintptr(p*w)*es)
		for r := 0; r < h; r++ {
			x := (*[4]T)(unsafe.Add(sp, uintptr(r*ld+p)*es))
			dr := unsafe.Add(d0, uintptr(r)*es)
			*(*T)(dr) = x[0]
			*(*T)(unsafe.Add(dr, uintptr(w)*es)) = x[1]
			*(*T)(unsafe.Add(dr, uintptr(2*w)*es)) = x[2]
			*(*T)(unsafe.Add(dr, uintptr(3*w)*es)) = x[3]
		}
	}
	for ; p < kb; p++ {
		for r := 0; r < h; r++ {
			d[p*w+r] = src[r*ld+p]
		}
	}
	if h < w {
		for p := range kb {
			clear(d[p*w+h : p*w+w])
		}
	}
}
