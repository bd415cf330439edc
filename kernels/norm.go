package kernels

import "math"

// BatchNormStats computes, for x viewed as outer×ch×inner, each channel's
// mean and biased variance over the outer·inner elements of that channel,
// in float64 with two passes (mean, then squared deviations), each summed
// in lanes (norm_lanes.go). With no elements the mean and variance are 0.
// Channels are split over threads; results do not depend on the thread
// count.
func BatchNormStats[T nnFloat](x []T, outer, ch, inner int, mean, variance []float64, threads int) {
	count := outer * inner
	nnFor(threads, ch, 2*count, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			if count == 0 {
				mean[c], variance[c] = 0, 0
				continue
			}
			var s, q bnLanes
			for o := range outer {
				bnSum(&s, x[(o*ch+c)*inner:(o*ch+c+1)*inner])
			}
			m := s.total() / float64(count)
			for o := range outer {
				bnSqDev(&q, x[(o*ch+c)*inner:(o*ch+c+1)*inner], m)
			}
			mean[c], variance[c] = m, q.total()/float64(count)
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
			var s bnLanes
			for o := range outer {
				bnSum(&s, x[(o*ch+c)*inner:(o*ch+c+1)*inner])
			}
			buf[c] = s.total()
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
			var s bnLanes
			for o := range outer {
				bnSqDev(&s, x[(o*ch+c)*inner:(o*ch+c+1)*inner], mean[c])
			}
			q[c] = s.total()
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
		i := 0
		if xf, ok := any(xr).([]float32); ok {
			i = bnApplyF32Vec(xf, any(yr).([]float32), ac, bc)
		}
		for ; i < len(xr); i++ {
			yr[i] = T(float64(xr[i])*ac + bc)
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
