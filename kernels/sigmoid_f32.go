package kernels

// SigmoidF32 is the sigmoid 1/(1+e^-x) in float32 arithmetic, for
// inference: e^-x is the float32 SiLU's exponential (siluNegExp32), and
// 1 + e and the division round to float32, sixteen lanes at a time with
// AVX-512 (the SiLU loop with 1 as the dividend). The sigmoid op
// (Unary(UnarySigmoid)) takes e^-x in float64 with one rounding at the
// end; this one is within 2 float32 ulps of the exact sigmoid on every
// 251st float32 (96 % exact; TestSigmoidF32ULPs). Below x = -80 and for
// NaN it computes the sigmoid op's float64 formula and bits. ppyoloe_s's
// score sigmoid took 49 µs at batch 1 in float64, 4.3 in float32 (ORT:
// 10). Results do not depend on the thread count, nor on whether the
// AVX-512 loop runs: the Go loop computes the same steps. y may be x.
func SigmoidF32(x, y []float32, threads int) {
	x = x[:len(y)]
	chunks := (len(y) + sigmoidF32Chunk - 1) / sigmoidF32Chunk
	if nnSerial(threads, chunks, sigmoidF32Cost) {
		sigmoidF32Range(x, y)
		return
	}
	j := getJob[sigmoidF32Job]()
	j.x, j.y = x, y
	nnForRanger(threads, chunks, sigmoidF32Cost, j)
	putJob(j)
}

// sigmoidF32Chunk is the elements of one item of SigmoidF32's parallel
// loop; sigmoidF32Cost is its work in nnParts's units, a quarter of an
// element-operation an element: the AVX-512 loop takes about 0.2 ns an
// element, so a second goroutine pays only from about 256 Ki elements
// (ppyoloe_s's batch-8 scores, 100,800, took 19–21 µs on one thread and
// 25–32 on two).
const (
	sigmoidF32Chunk = 1024
	sigmoidF32Cost  = sigmoidF32Chunk / 4
)

// sigmoidF32Job is SigmoidF32's parallel loop, pooled so that a call
// makes no Go allocation.
type sigmoidF32Job struct{ x, y []float32 }

func (j *sigmoidF32Job) run(lo, hi int) {
	a, b := lo*sigmoidF32Chunk, min(hi*sigmoidF32Chunk, len(j.y))
	sigmoidF32Range(j.x[a:b], j.y[a:b])
}

// sigmoidF32Range is SigmoidF32 on one goroutine.
func sigmoidF32Range(x, y []float32) {
	k := sigmoidF32Vec(y, x)
	ewSigmoidGo32(y[k:], x[k:])
}

// ewSigmoidGo32 is SigmoidF32 in Go: ewSigmoidF32At for x >= siluLo32,
// else (and for NaN) the sigmoid op's float64 formula.
func ewSigmoidGo32(o, a []float32) {
	o = o[:len(a)]
	var b [1]float64
	for i, x := range a {
		if x >= siluLo32 {
			o[i] = ewSigmoidF32At(x)
			continue
		}
		ewSigmoidBlock32(o[i:i+1], a[i:i+1], b[:])
	}
}

// ewSigmoidF32At is 1/(1+e^-x) in float32 arithmetic for x >= siluLo32
// (or +Inf), each step rounded to float32.
func ewSigmoidF32At(x float32) float32 {
	return 1 / (1 + siluNegExp32(x))
}
