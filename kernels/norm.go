package kernels

import "math"

// BatchNormStats computes, for x viewed as outer×ch×inner, each channel's
// mean and biased variance over the outer·inner elements of that channel,
// in float64 with two passes (mean, then squared deviations). With no
// elements the mean and variance are 0. Channels are split over threads;
// results do not depend on the thread count.
func BatchNormStats[T nnFloat](x []T, outer, ch, inner int, mean, variance []float64, threads int) {
	count := outer * inner
	nnFor(threads, ch, 2*count, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			if count == 0 {
				mean[c], variance[c] = 0, 0
				continue
			}
			var s float64
			for o := range outer {
				for _, v := range x[(o*ch+c)*inner : (o*ch+c+1)*inner] {
					s += float64(v)
				}
			}
			m := s / float64(count)
			var q float64
			for o := range outer {
				for _, v := range x[(o*ch+c)*inner : (o*ch+c+1)*inner] {
					d := float64(v) - m
					q += d * d
				}
			}
			mean[c], variance[c] = m, q/float64(count)
		}
	})
}

// BatchNormStatsSum is BatchNormStats for a batch spread over several
// processes: sum(buf) replaces buf by the element-wise sum of every
// process's buf. It sums each channel's elements and the element count
// over the processes (one call of ch+1 values), takes the mean, then sums
// the squared deviations from it (a second call of ch values), so that
// every process gets the mean and biased variance of the whole batch. buf
// (ch+1 values) holds what is sent. It returns the whole batch's element
// count per channel.
func BatchNormStatsSum[T nnFloat](x []T, outer, ch, inner int, mean, variance, buf []float64, threads int, sum func([]float64) error) (int, error) {
	buf = buf[:ch+1]
	nnFor(threads, ch, bnCount(outer, inner), func(lo, hi int) {
		for c := lo; c < hi; c++ {
			var s float64
			for o := range outer {
				for _, v := range x[(o*ch+c)*inner : (o*ch+c+1)*inner] {
					s += float64(v)
				}
			}
			buf[c] = s
		}
	})
	buf[ch] = float64(outer * inner)
	if err := sum(buf); err != nil {
		return 0, err
	}
	total := buf[ch]
	for c := range ch {
		mean[c] = 0
		if total > 0 {
			mean[c] = buf[c] / total
		}
	}
	q := buf[:ch]
	nnFor(threads, ch, bnCount(outer, inner), func(lo, hi int) {
		for c := lo; c < hi; c++ {
			m := mean[c]
			var s float64
			for o := range outer {
				for _, v := range x[(o*ch+c)*inner : (o*ch+c+1)*inner] {
					d := float64(v) - m
					s += d * d
				}
			}
			q[c] = s
		}
	})
	if err := sum(q); err != nil {
		return 0, err
	}
	for c := range ch {
		variance[c] = 0
		if total > 0 {
			variance[c] = q[c] / total
		}
	}
	return int(total), nil
}

func bnCount(outer, inner int) int { return outer * inner }

// BatchNormApply writes y = x·a[c] + b[c] for x and y viewed as
// outer×ch×inner, computing in float64. y may be x.
func BatchNormApply[T nnFloat](x, y []T, outer, ch, inner int, a, b []float64, threads int) {
	if nnSerial(threads, outer*ch, inner) {
		bnApplyRows(x, y, ch, inner, a, b, 0, outer*ch)
		return
	}
	j := getJob[bnApplyJob[T]]()
	j.x, j.y, j.ch, j.inner, j.a, j.b = x, y, ch, inner, a, b
	nnForRanger(threads, outer*ch, inner, j)
	putJob(j)
}

// bnApplyJob is BatchNormApply's parallel loop.
type bnApplyJob[T nnFloat] struct {
	x, y      []T
	ch, inner int
	a, b      []float64
}

func (j *bnApplyJob[T]) run(lo, hi int) { bnApplyRows(j.x, j.y, j.ch, j.inner, j.a, j.b, lo, hi) }

// bnApplyRows is BatchNormApply on the rows (of inner elements) [lo, hi).
func bnApplyRows[T nnFloat](x, y []T, ch, inner int, a, b []float64, lo, hi int) {
	for r := lo; r < hi; r++ {
		ac, bc := a[r%ch], b[r%ch]
		xr, yr := x[r*inner:(r+1)*inner], y[r*inner:(r+1)*inner]
		for i, v := range xr {
			yr[i] = T(float64(v)*ac + bc)
		}
	}
}

// LayerNorm normalises each of the rows of x (rows×cols) to zero mean and
// unit variance and applies the per-column scale and bias:
// y = (x − mean)·invStd·scale + bias, with invStd = 1/√(var + eps) and the
// biased variance. It also writes each row's mean and invStd. Statistics
// are taken in float64 with two passes; an empty row has mean 0 and
// variance 0. Rows are split over threads; results do not depend on the
// thread count.
func LayerNorm[T nnFloat](x, scale, bias, y, mean, invStd []T, rows, cols int, eps float64, threads int) {
	nnFor(threads, rows, 4*cols, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, yr := x[r*cols:(r+1)*cols], y[r*cols:(r+1)*cols]
			var m, q float64
			if cols > 0 {
				for _, v := range xr {
					m += float64(v)
				}
				m /= float64(cols)
				for _, v := range xr {
					d := float64(v) - m
					q += d * d
				}
				q /= float64(cols)
			}
			is := 1 / math.Sqrt(q+eps)
			for i, v := range xr {
				yr[i] = T((float64(v)-m)*is*float64(scale[i]) + float64(bias[i]))
			}
			mean[r], invStd[r] = T(m), T(is)
		}
	})
}
