package kernels

// panelRange returns the rows [lo,hi) of part i when the ceil(m/mr)
// micro-panels of a dimension of size m are split into parts contiguous
// parts, so that only the last part has a partial panel.
func panelRange(m, mr, parts, i int) (lo, hi int) {
	plo, phi := splitRange(ceilDiv(m, mr), parts, i)
	return min(plo*mr, m), min(phi*mr, m)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// balancedBlock returns the block size ≤ max (a multiple of unit) that
// covers n in as few blocks as possible, made as equal as possible, so a
// dimension just over a block size does not leave a sliver.
func balancedBlock(n, max, unit int) int {
	nb := ceilDiv(n, max)
	return min(max, ceilDiv(ceilDiv(n, nb), unit)*unit)
}

// gemmSerial is the BLIS loop nest on the calling goroutine: for each
// nc-wide block of columns and kc-deep slice of k it packs op(B) once, then
// for each mc-tall block of rows packs op(A) and runs the macro-kernel.
func gemmSerial[T float](kern *gemmKernel[T], transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	mr, nr := kern.mr, kern.nr
	nc := balancedBlock(n, kern.nc, nr)
	kc := balancedBlock(k, kern.kc, 1)
	mc := balancedBlock(m, kern.mc, mr)
	ws := getGemmScratch[T]()
	defer putGemmScratch(ws)
	ap, bp := ws.buffers(mc*kc, nc*kc, mr*nr)
	pk := kern.pack.orDefault()
	for jc := 0; jc < n; jc += nc {
		nb := min(nc, n-jc)
		for pc := 0; pc < k; pc += kc {
			kb := min(kc, k-pc)
			packB(bp, pk, transB, b, ldb, pc, jc, kb, nb, nr)
			bet := beta
			if pc > 0 {
				bet = 1 // later k slices accumulate onto the first
			}
			for ic := 0; ic < m; ic += mc {
				mb := min(mc, m-ic)
				packA(ap, pk, transA, a, lda, ic, pc, mb, kb, mr)
				macroKernel(kern, ap, bp, ws.tmp, mb, nb, kb, alpha, bet, c[ic*ldc+jc:], ldc)
			}
		}
	}
}

// macroKernel multiplies a packed mb×kb block of A by a packed kb×nb block of
// B into C, one mr×nr tile at a time.
func macroKernel[T float](kern *gemmKernel[T], ap, bp, tmp []T, mb, nb, kb int, alpha, beta T, c []T, ldc int) {
	mr, nr := kern.mr, kern.nr
	if gemmIROuter {
		for ir := 0; ir < mb; ir += mr {
			for jr := 0; jr < nb; jr += nr {
				gemmTile(kern, ap, bp, tmp, mb, nb, kb, ir, jr, alpha, beta, c, ldc)
			}
		}
		return
	}
	for jr := 0; jr < nb; jr += nr {
		for ir := 0; ir < mb; ir += mr {
			gemmTile(kern, ap, bp, tmp, mb, nb, kb, ir, jr, alpha, beta, c, ldc)
		}
	}
}

var gemmIROuter = false

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
	for i := range mh {
		dst := c[(ir+i)*ldc+jr : (ir+i)*ldc+jr+nw]
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
