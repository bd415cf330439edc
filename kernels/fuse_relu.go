package kernels

// ReluGrad writes the gradient of ReLU given its output y and the
// gradient dy of that output: out[i] = dy[i] where y[i] > 0, else 0 (also
// where y is NaN). All three have one length; out may be y or dy (each
// element is read before it is written). Work is split over threads in
// fixed ranges; every element's result is the same however it is split.
func ReluGrad[T nnFloat](out, y, dy []T, threads int) {
	y, dy = y[:len(out)], dy[:len(out)]
	if perfSerial(threads, len(out), reluGradGrain) {
		reluGradRange(out, y, dy)
		return
	}
	j := getJob[reluGradJob[T]]()
	j.out, j.y, j.dy = out, y, dy
	perfForRanger(threads, len(out), reluGradGrain, j)
	putJob(j)
}

// reluGradJob is ReluGrad's parallel loop.
type reluGradJob[T nnFloat] struct{ out, y, dy []T }

func (j *reluGradJob[T]) run(lo, hi int) { reluGradRange(j.out[lo:hi], j.y[lo:hi], j.dy[lo:hi]) }

func reluGradRange[T nnFloat](out, y, dy []T) {
	done := 0
	if of, ok := any(out).([]float32); ok {
		done = reluGradF32Vec(of, any(y).([]float32), any(dy).([]float32))
	}
	reluGradRef(out[done:], y[done:], dy[done:])
}

// reluGradGrain is the fewest elements worth a goroutine in ReluGrad: a
// piece of lenet's fitted step (12×6×28×28, 56448 elements, about 4 µs
// on one thread) splits in three; a helper that is polling takes its
// part well within that.
const reluGradGrain = 16 << 10

// reluGrain is the same for ReluF32, which runs on whole batches.
const reluGrain = 64 << 10

func reluGradRef[T nnFloat](out, y, dy []T) {
	y, dy = y[:len(out)], dy[:len(out)]
	for i := range out {
		v := dy[i]
		if !(y[i] > 0) {
			v = 0
		}
		out[i] = v
	}
}

// ReluF32 sets out[i] = max(x[i], 0) as Go's max does (NaN stays NaN, −0
// gives +0): the relu kernel's float32 loop, vectorised. out may be x.
func ReluF32(out, x []float32, threads int) {
	x = x[:len(out)]
	if perfSerial(threads, len(out), reluGrain) {
		reluF32Range(out, x)
		return
	}
	j := getJob[reluJob]()
	j.out, j.x = out, x
	perfForRanger(threads, len(out), reluGrain, j)
	putJob(j)
}

// reluJob is ReluF32's parallel loop.
type reluJob struct{ out, x []float32 }

func (j *reluJob) run(lo, hi int) { reluF32Range(j.out[lo:hi], j.x[lo:hi]) }

func reluF32Range(out, x []float32) {
	done := reluF32Vec(out, x)
	out, x = out[done:], x[done:]
	for i, v := range x {
		out[i] = max(v, 0)
	}
}
