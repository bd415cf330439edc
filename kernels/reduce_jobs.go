package kernels

// redGroupJob is the parallel loop of redInner (inner) and redOuter: the
// groups it walks, copied inline from the caller's stack buffers (to the
// heap past redRank), so that a reduction that goes parallel makes no Go
// allocation (see perf_task.go).
type redGroupJob[T Numeric, A float64 | int64] struct {
	op                 ReduceOp
	out, x             []T
	ks, kst, rs, rst   []int
	kb, kstb, rb, rstb [redRank]int
	n, count           int // L for redInner, B for redOuter
	fin                redFin[A]
	inner              bool
}

func (j *redGroupJob[T, A]) run(lo, hi int) {
	if j.inner {
		redInnerRange[T, A](j.op, j.out, j.x, j.ks, j.kst, j.rs, j.rst, j.n, j.fin, lo, hi)
		return
	}
	redOuterRange[T, A](j.op, j.out, j.x, j.ks, j.kst, j.rs, j.rst, j.n, j.count, j.fin, lo, hi)
}

// redGroupRun runs units [0, units) of redInner (inner) or redOuter over
// threads.
func redGroupRun[T Numeric, A float64 | int64](inner bool, op ReduceOp, threads, units, grain int, out, x []T, ks, kst, rs, rst []int, n, count int, fin redFin[A]) {
	j := getJob[redGroupJob[T, A]]()
	j.inner, j.op, j.out, j.x, j.n, j.count, j.fin = inner, op, out, x, n, count, fin
	j.ks, j.kst = inlineInts(&j.kb, ks), inlineInts(&j.kstb, kst)
	j.rs, j.rst = inlineInts(&j.rb, rs), inlineInts(&j.rstb, rst)
	perfForRanger(threads, units, grain, j)
	putJob(j)
}
