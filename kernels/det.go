package kernels

import (
	"fmt"
	"math"
)

// Det writes into out the determinant of each n×n matrix of x (row-major,
// one after the other; len(x) = len(out)·n·n). Each is computed in float64
// by LU decomposition with partial pivoting; the determinant of a 0×0
// matrix is 1. Results do not depend on the thread count.
func Det[T float32 | float64](threads int, out, x []T, n int) error {
	if n < 0 || len(x) != len(out)*n*n {
		return fmt.Errorf("det: %d elements for %d matrices of %d×%d", len(x), len(out), n, n)
	}
	ParallelFor(threads, len(out), max(1, ewGrain/max(1, n*n*n)), func(lo, hi int) {
		a := make([]float64, n*n)
		for k := lo; k < hi; k++ {
			for i, v := range x[k*n*n : (k+1)*n*n] {
				a[i] = float64(v)
			}
			out[k] = T(detLU(a, n))
		}
	})
	return nil
}

// detLU is the determinant of the n×n matrix a, which it overwrites with
// its LU factors.
func detLU(a []float64, n int) float64 {
	det := 1.0
	for c := range n {
		// The pivot: the largest magnitude in column c from row c down
		// (NaN wins, so that it propagates).
		p := c
		for r := c + 1; r < n; r++ {
			if v := math.Abs(a[r*n+c]); v > math.Abs(a[p*n+c]) || v != v {
				p = r
			}
		}
		if p != c {
			for j := range n {
				a[c*n+j], a[p*n+j] = a[p*n+j], a[c*n+j]
			}
			det = -det
		}
		piv := a[c*n+c]
		det *= piv
		if piv == 0 {
			// A singular matrix: the column below is zero, nothing to
			// eliminate. The later pivots still multiply in, so that a NaN
			// or an infinity there makes the result NaN.
			continue
		}
		for r := c + 1; r < n; r++ {
			f := a[r*n+c] / piv
			if f == 0 {
				continue
			}
			row, pr := a[r*n+c+1:(r+1)*n], a[c*n+c+1:(c+1)*n]
			for j, v := range pr {
				row[j] -= f * v
			}
		}
	}
	return det
}
