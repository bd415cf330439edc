package kernels

import "math"

// Softmax writes y = exp(x − max) / Σ exp(x − max) along the middle axis
// of x viewed as outer×n×inner (inner = 1 for the last axis), in float64.
// y may be x. Work is split over the outer·inner lines; results do not
// depend on the thread count.
func Softmax[T nnFloat](x, y []T, outer, n, inner int, threads int) {
	softmaxLines(x, y, outer, n, inner, false, threads)
}

// LogSoftmax writes y = x − max − log Σ exp(x − max) along the middle axis,
// like Softmax.
func LogSoftmax[T nnFloat](x, y []T, outer, n, inner int, threads int) {
	softmaxLines(x, y, outer, n, inner, true, threads)
}

func softmaxLines[T nnFloat](x, y []T, outer, n, inner int, log bool, threads int) {
	if n == 0 {
		return
	}
	if nnSerial(threads, outer*inner, 8*n) {
		softmaxRange(x, y, n, inner, log, 0, outer*inner)
		return
	}
	j := getJob[softmaxJob[T]]()
	j.x, j.y, j.n, j.inner, j.log = x, y, n, inner, log
	nnForRanger(threads, outer*inner, 8*n, j)
	putJob(j)
}

// softmaxJob is softmaxLines's parallel loop, pooled so that a call makes
// no Go allocation.
type softmaxJob[T nnFloat] struct {
	x, y     []T
	n, inner int
	log      bool
}

func (j *softmaxJob[T]) run(lo, hi int) { softmaxRange(j.x, j.y, j.n, j.inner, j.log, lo, hi) }

// softmaxRange is softmaxLines on the lines [lo, hi).
func softmaxRange[T nnFloat](x, y []T, n, inner int, log bool, lo, hi int) {
	for l := lo; l < hi; l++ {
		base := (l/inner)*n*inner + l%inner
		m, s := softmaxMaxSum(x, base, n, inner)
		if log {
			ls := m + math.Log(s)
			for j := range n {
				y[base+j*inner] = T(float64(x[base+j*inner]) - ls)
			}
		} else {
			inv := 1 / s
			for j := range n {
				y[base+j*inner] = T(math.Exp(float64(x[base+j*inner])-m) * inv)
			}
		}
	}
}

// softmaxMaxSum returns the maximum m of the n elements x[base + j·stride]
// and Σ exp(x − m). If m is ±Inf or NaN, the differences are NaN or −Inf
// as IEEE arithmetic makes them, like other frameworks.
func softmaxMaxSum[T nnFloat](x []T, base, n, stride int) (m, s float64) {
	m = math.Inf(-1)
	for j := range n {
		v := float64(x[base+j*stride])
		if v > m || v != v {
			m = v
			if v != v {
				break
			}
		}
	}
	if math.IsInf(m, -1) { // every element is −Inf: shift by 0 to get 0/0 = NaN
		m = 0
	}
	for j := range n {
		s += math.Exp(float64(x[base+j*stride]) - m)
	}
	return m, s
}
