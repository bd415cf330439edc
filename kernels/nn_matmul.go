package kernels

// MatmulBatched computes len(aOff) independent products
// C_i = op(A_i)·op(B_i), where op(A_i) is m×k and starts at a[aOff[i]]
// (stored k×m when transA), op(B_i) is k×n and starts at b[bOff[i]]
// (stored n×k when transB), and C_i is the i-th m×n block of c. Offsets
// may repeat (broadcast operands). Many small products run in parallel
// over the batch with single-threaded GEMMs; otherwise the batch runs in
// turn with multi-threaded GEMMs. Either way each element is computed by
// one GEMM whose summation order does not depend on threads.
func MatmulBatched[T nnFloat](transA, transB bool, m, n, k int, a []T, aOff []int, b []T, bOff []int, c []T, threads int) {
	MatmulFused(transA, transB, m, n, k, a, aOff, b, bOff, c, Epilogue{}, threads)
}

// MatmulFused is MatmulBatched followed by the epilogue ep (see Epilogue;
// bias per column), which each product applies to its m×n block of c as
// soon as the block is complete.
func MatmulFused[T nnFloat](transA, transB bool, m, n, k int, a []T, aOff []int, b []T, bOff []int, c []T, ep Epilogue, threads int) {
	batch := len(aOff)
	if batch == 0 || m == 0 || n == 0 {
		return
	}
	lda, ldb := max(k, 1), max(n, 1)
	if transA {
		lda = max(m, 1)
	}
	if transB {
		ldb = max(k, 1)
	}
	work := m * n * max(k, 1)
	if threads > 1 && batch >= threads && work < matmulBatchWork && nnParts(threads, batch, work) > 1 {
		nnFor(threads, batch, work, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				matmulOne(transA, transB, m, n, k, a, aOff, lda, b, bOff, ldb, c, ep, i, 1)
			}
		})
		return
	}
	// In turn, without a closure: a product too small to split allocates
	// nothing.
	for i := range batch {
		matmulOne(transA, transB, m, n, k, a, aOff, lda, b, bOff, ldb, c, ep, i, threads)
	}
}

// MatmulPackedB is MatmulFused for a single product whose op(B) is also
// given packed (pb from PackGemmB): the product of GemmPackedB, then the
// epilogue on its rows.
func MatmulPackedB[T nnFloat](transA, transB bool, m, n, k int, a, b, pb, c []T, ep Epilogue, threads int) {
	if m == 0 || n == 0 {
		return
	}
	lda, ldb := max(k, 1), max(n, 1)
	if transA {
		lda = max(m, 1)
	}
	if transB {
		ldb = max(k, 1)
	}
	if n == 1 && !transA {
		matmulVector(m, k, a, lda, b, c, threads)
	} else {
		GemmPackedB(transA, transB, m, n, k, 1, a, lda, b, ldb, pb, 0, c, n, threads)
	}
	matmulEpilogue(ep, c, m, n, 0, threads)
}

// matmulOne computes product i of MatmulFused on th threads.
func matmulOne[T nnFloat](transA, transB bool, m, n, k int, a []T, aOff []int, lda int, b []T, bOff []int, ldb int, c []T, ep Epilogue, i, th int) {
	if n == 1 && !transA {
		matmulVector(m, k, a[aOff[i]:], lda, b[bOff[i]:], c[i*m:], th)
	} else {
		nnGemm(transA, transB, m, n, k, 1, a[aOff[i]:], lda, b[bOff[i]:], ldb, 0, c[i*m*n:], n, th)
	}
	matmulEpilogue(ep, c, m, n, i, th)
}

// matmulVector is c = a·b for an m×k matrix a (rows lda apart) and a
// vector b of k (a column, or a row of a transposed b: the same elements)
// — ppyoloe_s's distribution bins, 8400 rows of 17 at batch 1 — as its
// transpose, b's row times aᵀ, through the GEMM's row kernel: the same
// sums, each over k in order from 0, as the tiles of the micro-kernel,
// which pad one column to their width and took 3-4× the time.
func matmulVector[T nnFloat](m, k int, a []T, lda int, b, c []T, th int) {
	nnGemm(false, true, 1, m, k, 1, b, max(k, 1), a, lda, 0, c, m, th)
}

// matmulEpilogue applies ep to product i's block of c (m×n).
func matmulEpilogue[T nnFloat](ep Epilogue, c []T, m, n, i, th int) {
	if !ep.on() {
		return
	}
	if nnParts(th, m, n) <= 1 {
		epiRows(&ep, c, n, i*m, i*m+m)
		return
	}
	e := ep // the goroutines' copy: ep itself stays on the stack
	nnFor(th, m, n, func(lo, hi int) { epiRows(&e, c, n, i*m+lo, i*m+hi) })
}

// matmulBatchWork is the m·n·k of one product below which MatmulBatched
// spreads the batch rather than each GEMM over threads.
const matmulBatchWork = 128 * 128 * 128
