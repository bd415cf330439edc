package kernels

// Sums of float32 rows that follow one another in memory (a mean over
// each map of [n, c, h, w], the detector's attention), eight rows at a
// time: one row's four float64 lanes are a chain of dependent additions,
// eight rows' are independent, and with AVX each row's four lanes take
// one vector instruction. Every row gets redSumContig's bits: the same
// blocks, lanes, tail and combination, in the same order.

// redRowsGroup is how many rows redSumRows8F32 sums together.
const redRowsGroup = 8

// redInnerRows sets out[o] for the outputs o in [lo, hi) of a sum or mean
// over rows of L contiguous elements, row o at o·L, in groups of eight,
// and returns the first output it left (all of them unless x is float32).
func redInnerRows[T Numeric, A float64 | int64](out, x []T, L int, fin redFin[A], lo, hi int) int {
	xf, ok := any(x).([]float32)
	if !ok {
		return lo
	}
	for ; lo+redRowsGroup <= hi; lo += redRowsGroup {
		var t [redRowsGroup]float64
		redSumRows8F32(&t, xf[lo*L:(lo+redRowsGroup)*L], L)
		for r, v := range t {
			var s A // as redInnerRange: a sum of one row's total
			s += A(v)
			out[lo+r] = redFinish[T](fin, s)
		}
	}
	return lo
}

// redSumRows8F32 sets t[r] to redSumContig of row r of x (eight rows of L).
func redSumRows8F32(t *[redRowsGroup]float64, x []float32, L int) {
	for b0 := 0; b0 < L; b0 += redBlock {
		n := min(redBlock, L-b0)
		var l [redRowsGroup][4]float64
		v := redSumRows8F32Vec(&l, x[b0:], L, n)
		for r := range l {
			s0, s1, s2, s3 := l[r][0], l[r][1], l[r][2], l[r][3]
			b := x[r*L+b0 : r*L+b0+n]
			i := v
			for ; i+4 <= n; i += 4 {
				q := b[i : i+4 : i+4]
				s0 += float64(q[0])
				s1 += float64(q[1])
				s2 += float64(q[2])
				s3 += float64(q[3])
			}
			for ; i < n; i++ {
				s0 += float64(b[i])
			}
			t[r] += (s0 + s1) + (s2 + s3)
		}
	}
}
