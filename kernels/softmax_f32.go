package kernels

import "math"

// SoftmaxF32 is Softmax with its exponentials in float32 arithmetic: e^z
// for z = x − max as siluNegExp32(max − x), the exponential of the
// float32 SiLU, sixteen at a time with AVX-512 where the axis is the
// last one, and 0 below e^-80 (under 2·10^-35). The sums (over four
// chains along the last axis, in order along a middle one) and the
// division stay in float64. Each output is within 4 float32 ulps of the
// exact softmax plus what rounding max − x to float32 adds: e^-d inherits
// it as a relative error of d·2^-24, under 3·10^-8 in absolute terms
// since d·e^-d <= 1/e. ONNX Runtime and PyTorch compute float32 softmax
// in float32 too; package optimize puts this one in inference programs
// (the softmax over ppyoloe_s's distribution bins took 1.5 ms of a 35 ms
// inference in float64 math.Exp). A line whose maximum is not finite (a
// NaN, +Inf, or every element −Inf) gets Softmax's float64 formula and
// its bits. y may be x. Along the last axis, each line's maximum and
// max − x, and its sum and division, run in AVX-512 loops too
// (internal/avo/softmaxgen). Results do not depend on the thread count, nor
// on whether the AVX-512 loops run: the Go loops compute the same steps.
func SoftmaxF32(x, y []float32, outer, n, inner int, threads int) {
	if n == 0 {
		return
	}
	if nnSerial(threads, outer*inner, 4*n) {
		softmaxF32Range(x, y, n, inner, 0, outer*inner)
		return
	}
	j := getJob[softmaxF32Job]()
	j.x, j.y, j.n, j.inner = x, y, n, inner
	nnForRanger(threads, outer*inner, 4*n, j)
	putJob(j)
}

// softmaxF32Job is SoftmaxF32's parallel loop, pooled so that a call
// makes no Go allocation.
type softmaxF32Job struct {
	x, y     []float32
	n, inner int
}

func (j *softmaxF32Job) run(lo, hi int) { softmaxF32Range(j.x, j.y, j.n, j.inner, lo, hi) }

// softmaxF32Run bounds the elements of the lines softmaxF32Range treats
// together (subtract, exponentiate, normalise) so that they stay in L1.
const softmaxF32Run = 4096

// softmaxF32Range is SoftmaxF32 on the lines [lo, hi).
func softmaxF32Range(x, y []float32, n, inner, lo, hi int) {
	if inner != 1 {
		for l := lo; l < hi; l++ {
			softmaxF32Strided(x, y, n, inner, l)
		}
		return
	}
	// Runs of contiguous lines with a finite maximum: y = max − x along
	// each, then e^-y over the whole run at once, then each line divided
	// by its sum. A line without a finite maximum ends the run and takes
	// Softmax's formula, x still untouched.
	// The AVX-512 loops do the steps around the exponentials line by line
	// (the maximum stopping at lines Go's max must see); Go does what
	// they leave, with the same bits.
	per := max(1, softmaxF32Run/n)
	for start := lo; start < hi; {
		end, limit := start, min(hi, start+per)
		for end < limit {
			end += softmaxMaxSubF32Vec(x[end*n:limit*n], y[end*n:limit*n], n)
			if end == limit {
				break
			}
			line := x[end*n : (end+1)*n]
			m := softmaxF32Max(line)
			if !finite32(m) {
				break
			}
			d := y[end*n : (end+1)*n]
			for j, v := range line {
				d[j] = m - v
			}
			end++
		}
		if end > start {
			run := y[start*n : end*n]
			softmaxExpF32(run, run)
			if !softmaxNormalizeF32Vec(run, n) {
				for l := start; l < end; l++ {
					softmaxF32Normalize(y[l*n : (l+1)*n])
				}
			}
		}
		if end < limit { // line end has no finite maximum
			softmaxRange(x, y, n, 1, false, end, end+1)
			end++
		}
		start = end
	}
}

// softmaxF32Strided is SoftmaxF32 on line l along a middle axis: the same
// steps one element at a time.
func softmaxF32Strided(x, y []float32, n, inner, l int) {
	base := (l/inner)*n*inner + l%inner
	m := float32(math.Inf(-1))
	for j := range n {
		v := x[base+j*inner]
		if v > m || v != v {
			m = v
			if v != v {
				break
			}
		}
	}
	if !finite32(m) {
		softmaxRange(x, y, n, inner, false, l, l+1)
		return
	}
	var s float64
	for j := range n {
		e := softmaxExp32(m - x[base+j*inner])
		y[base+j*inner] = e
		s += float64(e)
	}
	inv := 1 / s
	for j := range n {
		y[base+j*inner] = float32(float64(y[base+j*inner]) * inv)
	}
}

// softmaxF32Max is the largest element of line, NaN if one is NaN: the
// builtin max, which has no branch to mispredict on random data, over
// four independent chains.
func softmaxF32Max(line []float32) float32 {
	m0, m1, m2, m3 := float32(math.Inf(-1)), float32(math.Inf(-1)), float32(math.Inf(-1)), float32(math.Inf(-1))
	j := 0
	for ; j+4 <= len(line); j += 4 {
		m0, m1, m2, m3 = max(m0, line[j]), max(m1, line[j+1]), max(m2, line[j+2]), max(m3, line[j+3])
	}
	for ; j < len(line); j++ {
		m0 = max(m0, line[j])
	}
	return max(max(m0, m1), max(m2, m3))
}

// softmaxF32Normalize divides a line of exponentials by their sum, taken
// in float64 over four chains, (s0 + s1) + (s2 + s3), whatever the line's
// length (the same order on every thread count).
func softmaxF32Normalize(e []float32) {
	var s0, s1, s2, s3 float64
	j := 0
	for ; j+4 <= len(e); j += 4 {
		s0, s1, s2, s3 = s0+float64(e[j]), s1+float64(e[j+1]), s2+float64(e[j+2]), s3+float64(e[j+3])
	}
	for ; j < len(e); j++ {
		s0 += float64(e[j])
	}
	inv := 1 / ((s0 + s1) + (s2 + s3))
	for j, v := range e {
		e[j] = float32(float64(v) * inv)
	}
}

func finite32(v float32) bool { return v-v == 0 }

// softmaxExpF32 sets o[i] = softmaxExp32(d[i]), with the AVX-512 loop on
// the longest prefix whose length is a multiple of 16 where it can.
func softmaxExpF32(o, d []float32) {
	o = o[:len(d)]
	k := softmaxExpF32Vec(o, d)
	for i := k; i < len(d); i++ {
		o[i] = softmaxExp32(d[i])
	}
}

// softmaxExp32 is e^-d for d >= 0 (a line's maximum less an element): 0
// beyond 80, where siluNegExp32 clamps its argument.
func softmaxExp32(d float32) float32 {
	if d > -siluLo32 {
		return 0
	}
	return siluNegExp32(d)
}
