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

// softmaxRange is softmaxLines on the lines [lo, hi). Softmax keeps each
// line's exponentials (up to softmaxKeep of them) for the output instead
// of computing them a second time: the same values, so the same bits.
func softmaxRange[T nnFloat](x, y []T, n, inner int, log bool, lo, hi int) {
	var keep [softmaxKeep]float64
	for l := lo; l < hi; l++ {
		base := (l/inner)*n*inner + l%inner
		var e []float64
		if !log && n <= softmaxKeep {
			e = keep[:n]
		}
		m, s := softmaxMaxSum(x, base, n, inner, e)
		switch {
		case log:
			ls := m + math.Log(s)
			for j := range n {
				y[base+j*inner] = T(float64(x[base+j*inner]) - ls)
			}
		case e != nil:
			inv := 1 / s
			for j, v := range e {
				y[base+j*inner] = T(v * inv)
			}
		default:
			inv := 1 / s
			for j := range n {
				y[base+j*inner] = T(math.Exp(float64(x[base+j*inner])-m) * inv)
			}
		}
	}
}

// softmaxKeep is the longest line whose exponentials softmaxRange keeps
// (on the stack): ppyoloe_s's distributions have 17 bins.
const softmaxKeep = 64

// softmaxMaxSum returns the maximum m of the n elements x[base + j·stride]
// and Σ exp(x − m), and writes the terms exp(x − m) into e unless e is
// nil. If m is ±Inf or NaN, the differences are NaN or −Inf as IEEE
// arithmetic makes them, like other frameworks.
func softmaxMaxSum[T nnFloat](x []T, base, n, stride int, e []float64) (m, s float64) {
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
	if e != nil {
		for j := range e {
			v := math.Exp(float64(x[base+j*stride]) - m)
			e[j] = v
			s += v
		}
		return m, s
	}
	for j := range n {
		s += math.Exp(float64(x[base+j*stride]) - m)
	}
	return m, s
}
