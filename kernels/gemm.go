package kernels

import "fmt"

// Sgemm computes C = alpha*op(A)*op(B) + beta*C, row-major, op(X) = X or Xᵀ.
// op(A) is m×k, op(B) is k×n and C is m×n; lda/ldb/ldc are row strides of
// the matrices as stored (A is k×m when transA). threads<=1 = single
// goroutine. With beta == 0, C is not read, so it may hold NaNs.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int, threads int) {
	gemm(sgemmActive.Load(), transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, threads)
}

// Dgemm is Sgemm for float64.
func Dgemm(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int, threads int) {
	gemm(dgemmActive.Load(), transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, threads)
}

// checkMatrix panics unless x can hold a rows×cols row-major matrix with
// row stride ld.
func checkMatrix(name string, rows, cols int, lenX, ld int) {
	if ld < max(1, cols) {
		panic(fmt.Sprintf("kernels: gemm: ld%s = %d < max(1, %d)", name, ld, cols))
	}
	if rows > 0 && cols > 0 && lenX < (rows-1)*ld+cols {
		panic(fmt.Sprintf("kernels: gemm: len(%s) = %d, need %d for %d×%d with stride %d",
			name, lenX, (rows-1)*ld+cols, rows, cols, ld))
	}
}

func gemm[T float](kern *gemmKernel[T], transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int, threads int) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("kernels: gemm: negative dimension m=%d n=%d k=%d", m, n, k))
	}
	if transA {
		checkMatrix("a", k, m, len(a), lda)
	} else {
		checkMatrix("a", m, k, len(a), lda)
	}
	if transB {
		checkMatrix("b", n, k, len(b), ldb)
	} else {
		checkMatrix("b", k, n, len(b), ldb)
	}
	checkMatrix("c", m, n, len(c), ldc)
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 {
		scaleMatrix(m, n, beta, c, ldc)
		return
	}
	gemmParallel(kern, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, threads)
}

// scaleMatrix sets C = beta*C, writing zeros without reading when beta == 0.
func scaleMatrix[T float](m, n int, beta T, c []T, ldc int) {
	for i := range m {
		row := c[i*ldc : i*ldc+n]
		switch beta {
		case 0:
			clear(row)
		case 1:
		default:
			for j := range row {
				row[j] *= beta
			}
		}
	}
}
