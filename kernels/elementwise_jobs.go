package kernels

// The parallel loops of the one-operand elementwise kernels (Unary,
// Classify, Not, Clip, Scale, Cast, Where) as pooled jobs, so that a call
// that goes parallel makes no Go allocation (see perf_task.go).

// ewMapJob runs f on matching ranges of out and x.
type ewMapJob[O, I any] struct {
	f   func(o []O, a []I)
	out []O
	x   []I
}

func (j *ewMapJob[O, I]) run(lo, hi int) { j.f(j.out[lo:hi], j.x[lo:hi]) }

// ewMap runs f over out and x, on threads when they are long enough.
func ewMap[O, I any](threads, grain int, f func(o []O, a []I), out []O, x []I) {
	if ewSerial(threads, len(out), grain) {
		f(out, x)
		return
	}
	j := getJob[ewMapJob[O, I]]()
	j.f, j.out, j.x = f, out, x
	perfForRanger(threads, len(out), grain, j)
	putJob(j)
}

// ewScalarsJob runs f, which takes two scalars (Clip's bounds, Scale's
// factor and bias), on matching ranges of out and x.
type ewScalarsJob[T any] struct {
	f      func(o, a []T, p, q T)
	out, x []T
	p, q   T
}

func (j *ewScalarsJob[T]) run(lo, hi int) { j.f(j.out[lo:hi], j.x[lo:hi], j.p, j.q) }

// ewMapScalars runs f over out and x with the scalars p and q.
func ewMapScalars[T any](threads int, f func(o, a []T, p, q T), out, x []T, p, q T) {
	if ewSerial(threads, len(out), ewGrain) {
		f(out, x, p, q)
		return
	}
	j := getJob[ewScalarsJob[T]]()
	j.f, j.out, j.x, j.p, j.q = f, out, x, p, q
	perfForRanger(threads, len(out), ewGrain, j)
	putJob(j)
}

// ewCastJob is Cast's loop: a copy when the types are the same (same is
// x as a []U), else ewCastRange.
type ewCastJob[T, U Element] struct {
	out, same []U
	x         []T
}

func (j *ewCastJob[T, U]) run(lo, hi int) {
	if j.same != nil {
		copy(j.out[lo:hi], j.same[lo:hi])
		return
	}
	ewCastRange(j.out, j.x, lo, hi)
}

// ewWhereJob is Where's loop: elementwise when every operand has the
// output's length (p nil), else over the broadcast plan p.
type ewWhereJob[T Element] struct {
	p         *ewPlan
	buf       ewPlanBuf
	plan      ewPlan
	out, x, y []T
	cond      []bool
}

func (j *ewWhereJob[T]) run(lo, hi int) {
	if j.p == nil {
		ewWhereVVV(j.out[lo:hi], j.cond[lo:hi], j.x[lo:hi], j.y[lo:hi])
		return
	}
	ewWhereRange(j.p, lo, hi, j.out, j.cond, j.x, j.y)
}
