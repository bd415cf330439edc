package kernels

// gemmSerial is the BLIS loop nest on the calling goroutine: for each
// nc-wide block of columns and kc-deep slice of k it packs op(B) once, then
// for each mc-tall block of rows packs op(A) and runs the macro-kernel.
// When op(A) is small it streams B instead (gemmStreamB).
func gemmSerial[T float](kern *gemmKernel[T], transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if gemmStreams(kern, m, k) {
		ws := getGemmScratch[T]()
		gemmStreamB(kern, ws, transA, transB, m, 0, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		putGemmScratch(ws)
		return
	}
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

// gemmStreamB computes columns [c0,c1) of C when op(A) is small (see
// gemmStreams): per kc slice it packs all of op(A) once, then packs each
// nr-wide panel of op(B) just before the tiles that use it, so the panel is
// still in L1. With few rows each element of B is used only a few times,
// and packing a whole B block first would send it through memory twice
// more.
func gemmStreamB[T float](kern *gemmKernel[T], ws *gemmScratch[T], transA, transB bool, m, c0, c1, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	mr, nr := kern.mr, kern.nr
	kc := balancedBlock(k, kern.kc, 1)
	ap, bp := ws.buffers(ceilDiv(m, mr)*mr*kc, kc*nr, mr*nr)
	pk := kern.pack.orDefault()
	for pc := 0; pc < k; pc += kc {
		kb := min(kc, k-pc)
		packA(ap, pk, transA, a, lda, 0, pc, m, kb, mr)
		bet := beta
		if pc > 0 {
			bet = 1 // later k slices accumulate onto the first
		}
		for jr := c0; jr < c1; jr += nr {
			nw := min(nr, c1-jr)
			packB(bp, pk, transB, b, ldb, pc, jr, kb, nw, nr)
			for ir := 0; ir < m; ir += mr {
				gemmTile(kern, ap, bp, ws.tmp, m, nw, kb, ir, 0, alpha, bet, c[jr:], ldc)
			}
		}
	}
}

// gemmStreams reports whether op(A) is small enough for gemmStreamB: a kc
// slice of it at most four mc×kc blocks, about one L2. Each tile then reads
// its A panel from L2 or L3, which the kernel's compute easily covers, and
// B needs neither a shared block nor the waits that come with it; measured
// faster up to 512³ on two cores and no slower above.
func gemmStreams[T float](kern *gemmKernel[T], m, k int) bool {
	return m*min(k, kern.kc) <= 4*kern.mc*kern.kc
}
