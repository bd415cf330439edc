package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// gemmMinWork is the m·n·k volume each goroutine must get for another one
// to pay off. Measured on 2 cores: 64³ runs faster on one goroutine, 80³
// and 128×10×256 on two.
const gemmMinWork = 40 * 64 * 64

// gemmShallowK is the depth below which a product needs four times the
// volume to go parallel: with so few multiply-adds per element of C, the
// fixed cost of each tile dominates and two goroutines gained nothing in
// measurements (128×256×10, 256×256×16).
const gemmShallowK = 32

// gemmParallel runs GEMM on the calling goroutine and up to threads-1
// helpers. When op(A) is small (gemmStreams), blocks of C go to goroutines
// that each stream their own panels (gemmParallelStreamB). Otherwise all walk
// the same steps, one per nc×kc block of op(B): they pack the block into one
// shared buffer, claiming groups of panels, then claim work items (rows ×
// columns of C), each of which packs its rows of op(A) and runs the
// macro-kernel. Items are claimed dynamically, but each element of C is
// computed by exactly one goroutine with the same arithmetic whichever it
// is, so results are bitwise reproducible.
func gemmParallel[T float](kern *gemmKernel[T], transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int, threads int) {
	work := m * n * k
	if k < gemmShallowK {
		work /= 4
	}
	// More goroutines than Ps would only take turns.
	t := min(threads, runtime.GOMAXPROCS(0), work/gemmMinWork)
	if t <= 1 {
		gemmSerial(kern, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	if gemmStreams(kern, m, k) {
		gemmParallelStreamB(kern, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, t)
		return
	}
	j := &gemmJob[T]{kern: kern, transA: transA, transB: transB, m: m, n: n, k: k,
		alpha: alpha, beta: beta, a: a, b: b, c: c, lda: lda, ldb: ldb, ldc: ldc}
	j.nc = balancedBlock(n, kern.nc, kern.nr)
	j.kc = balancedBlock(k, kern.kc, 1)
	j.mc = balancedBlock(m, kern.mc, kern.mr)
	j.rows, j.cols = gemmItems(m, j.nc, kern.mr, kern.nr, j.mc, t)
	j.t = t
	j.packs = ceilDiv(ceilDiv(j.nc, kern.nr), gemmPackGroup)
	j.steps = make([]gemmStep, ceilDiv(n, j.nc)*ceilDiv(k, j.kc))
	j.claims = make([]atomic.Bool, len(j.steps)*(j.packs+j.rows*j.cols))
	bws := getGemmScratch[T]()
	_, j.bp = bws.buffers(0, j.nc*j.kc, 0)
	job := func() { j.run(int(j.joined.Add(1))) }
	runHelpers(t-1, &job)
	j.run(0)
	putGemmScratch(bws)
	j.panics.rethrow()
}

// gemmParallelStreamB runs gemmStreamB on rows×cols blocks of C claimed by
// the caller and t-1 helpers. Each packs its own rows of op(A) and panels
// of op(B), so nothing is shared but the claim flags.
func gemmParallelStreamB[T float](kern *gemmKernel[T], transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int, t int) {
	j := getBlockJob[T]()
	j.kern, j.transA, j.transB, j.m, j.n, j.k = kern, transA, transB, m, n, k
	j.alpha, j.beta, j.a, j.b, j.c, j.lda, j.ldb, j.ldc = alpha, beta, a, b, c, lda, ldb, ldc
	j.start(t)
}

// blockJob is a GEMM split into rows×cols blocks of C that each goroutine
// computes on its own: gemmStreamB on op(B) as it is, or on op(B) packed
// once (pb, see gemm_packed.go). Jobs are recycled, so that a parallel
// GEMM makes no Go allocation; a job goes back when its last user is done
// with it: the caller, and each helper it was offered to, which may come
// after the caller has returned (it then finds every block claimed).
type blockJob[T float] struct {
	kern           *gemmKernel[T]
	transA, transB bool
	m, n, k        int
	alpha, beta    T
	a, b, c, pb    []T
	lda, ldb, ldc  int

	t, rows, cols int
	claims        []atomic.Bool
	joined, done  atomic.Int32
	users         atomic.Int32
	sig           gemmSignal
	ps            panicSlot
	helper        func() // what helpers run: made once per job object
}

var (
	sBlockJobs sync.Pool
	dBlockJobs sync.Pool
)

func getBlockJob[T float]() *blockJob[T] {
	var zero T
	pool := &dBlockJobs
	if _, ok := any(zero).(float32); ok {
		pool = &sBlockJobs
	}
	j, _ := pool.Get().(*blockJob[T])
	if j == nil {
		j = new(blockJob[T])
		j.helper = func() {
			j.run(int(j.joined.Add(1)))
			j.leave(pool)
		}
	}
	return j
}

// start splits C for t goroutines and runs the blocks; it returns when C
// is complete, raising a helper's panic again.
func (j *blockJob[T]) start(t int) {
	j.t = t
	j.rows, j.cols = gemmStreamItems(j.m, j.n, j.kern.mr, j.kern.nr, t)
	if cap(j.claims) < j.rows*j.cols {
		j.claims = make([]atomic.Bool, j.rows*j.cols)
	}
	j.claims = j.claims[:j.rows*j.cols]
	var zero T
	pool := &dBlockJobs
	if _, ok := any(zero).(float32); ok {
		pool = &sBlockJobs
	}
	j.users.Store(int32(t)) // the caller and t-1 offers; corrected below
	offered := runHelpers(t-1, &j.helper)
	j.users.Add(int32(offered - (t - 1)))
	j.run(0)
	j.sig.wait(&j.done, j.rows*j.cols)
	wp := j.ps.p.Load()
	j.leave(pool)
	if wp != nil {
		panic(wp)
	}
}

// leave drops one user; the last one clears the job and recycles it.
func (j *blockJob[T]) leave(pool *sync.Pool) {
	if j.users.Add(-1) != 0 {
		return
	}
	j.kern, j.a, j.b, j.c, j.pb = nil, nil, nil, nil, nil
	for i := range j.claims {
		j.claims[i].Store(false)
	}
	j.joined.Store(0)
	j.done.Store(0)
	j.ps.p.Store(nil)
	pool.Put(j)
}

// run is the loop participant p executes.
func (j *blockJob[T]) run(p int) {
	items := j.rows * j.cols
	if int(j.done.Load()) == items {
		return // a helper arriving after the caller finished
	}
	ws := getGemmScratch[T]()
	var held heldA
	claimItems(j.claims, p, j.t, &j.ps, func(i int) { j.block(ws, &held, i) }, func() { j.sig.add(&j.done, items) })
	putGemmScratch(ws)
}

// block computes block i of C; held says which rows of op(A) ws holds
// packed (gemm_held_a.go).
func (j *blockJob[T]) block(ws *gemmScratch[T], held *heldA, i int) {
	kern := j.kern
	r0, r1 := panelRange(j.m, kern.mr, j.rows, i/j.cols)
	c0, c1 := panelRange(j.n, kern.nr, j.cols, i%j.cols)
	if j.pb != nil && j.cols > 1 && r1-r0 > 1 && heldABytes[T](kern, r1-r0, j.k) <= heldAMax && !useDirectA(kern, j.transA, j.lda) {
		gemmHeldARange(kern, ws, held, j.transA, r0, r1, c0, c1, j.n, j.k, j.alpha, j.a, j.lda, j.pb, j.beta, j.c, j.ldc)
		return
	}
	if j.pb != nil {
		gemmPackedRange(kern, ws, j.transA, r0, r1, c0, c1, j.n, j.k, j.alpha, j.a, j.lda, j.pb, j.beta, j.c, j.ldc)
		return
	}
	offA := r0 * j.lda // where op(A) row r0 starts
	if j.transA {
		offA = r0
	}
	gemmStreamB(kern, ws, j.transA, j.transB, r1-r0, c0, c1, j.k, j.alpha, j.a[offA:], j.lda, j.b, j.ldb, j.beta, j.c[r0*j.ldc:], j.ldc)
}

// gemmStreamItems splits C (m×n) into rows×cols blocks for t
// goroutines, minimising the estimated time until the last block is done:
// rounds of t blocks, each costing its largest multiply-add area plus
// packing its rows of A and columns of B (about ten multiply-adds per
// element, both times k).
func gemmStreamItems(m, n, mr, nr, t int) (rows, cols int) {
	return gemmBlockItems(m, n, mr, nr, t, gemmPackCost, gemmPackCost)
}

// gemmPackCost is what gemmStreamItems charges per element of op(A) or
// op(B) that a block packs, in multiply-adds.
const gemmPackCost = 10

// gemmBlockItems is gemmStreamItems with the cost per element of a
// block's rows of op(A) (rowCost) and columns of op(B) (colCost) given.
func gemmBlockItems(m, n, mr, nr, t, rowCost, colCost int) (rows, cols int) {
	pm, pn := ceilDiv(m, mr), ceilDiv(n, nr)
	best := -1
	for r := 1; r <= pm && r <= 4*t; r++ {
		for c := 1; c <= pn && r*c <= 4*t; c++ {
			if r*c < t && (r < pm || c < pn) {
				continue
			}
			h, w := min(ceilDiv(pm, r)*mr, m), min(ceilDiv(pn, c)*nr, n)
			cost := ceilDiv(r*c, t) * (h*w + rowCost*h + colCost*w)
			if best < 0 || cost < best {
				best, rows, cols = cost, r, c
			}
		}
	}
	return rows, cols
}

// gemmItems splits a step (m rows, nb columns of C) into rows×cols work
// items for t goroutines. Row chunks are whole micro-panels no taller than
// mc. It minimises an estimate of the time until the last item is done:
// rounds of t items, each costing its largest multiply-add area plus
// packing its rows of A (about ten multiply-adds per element) plus streaming
// its columns of the packed B block from cache.
func gemmItems(m, nb, mr, nr, mc, t int) (rows, cols int) {
	pm, pn := ceilDiv(m, mr), ceilDiv(nb, nr)
	rmin := min(pm, ceilDiv(m, mc))
	most := max(rmin, 8*t) // more items only add overhead
	best := -1
	for r := rmin; r <= pm && r <= most; r++ {
		for c := 1; c <= pn && r*c <= most; c++ {
			if r*c < t && (r < pm || c < pn) {
				continue
			}
			h, w := min(ceilDiv(pm, r)*mr, m), min(ceilDiv(pn, c)*nr, nb)
			cost := ceilDiv(r*c, t) * (h*(w+10) + 4*w)
			if best < 0 || cost < best {
				best, rows, cols = cost, r, c
			}
		}
	}
	return rows, cols
}

// gemmJob is the shared state of one parallel GEMM.
type gemmJob[T float] struct {
	kern           *gemmKernel[T]
	transA, transB bool
	m, n, k        int
	alpha, beta    T
	a, b, c        []T
	lda, ldb, ldc  int
	nc, kc, mc     int
	rows, cols     int // work items per step
	packs          int // packing items per step (at most)
	bp             []T // the shared packed block of op(B)
	t              int
	joined         atomic.Int32 // helpers that have started
	sig            gemmSignal
	panics         panicSlot
	steps          []gemmStep
	claims         []atomic.Bool // per step: packing items, then work items
}

// gemmStep counts the finished packing and work items of one step;
// counters of different steps sit on different cache lines.
type gemmStep struct {
	packDone, workDone atomic.Int32
	_                  [56]byte
}

// claimItems runs f on each item of flags that participant p of t claims.
// It first claims items p, p+t, ..., so that with every participant
// present each runs the same items on every call and the data it writes
// stays in its core's caches; then it takes whatever is left, so that a
// late participant delays nothing. After each item it calls done, even
// when f panicked: the panic is recorded in ps, for the caller to raise
// once every item is done, so that nobody waits for an item forever.
func claimItems(flags []atomic.Bool, p, t int, ps *panicSlot, f func(i int), done func()) {
	for i := p % t; i < len(flags); i += t {
		if flags[i].CompareAndSwap(false, true) {
			ps.run(func() { f(i) })
			done()
		}
	}
	for i := range flags {
		if !flags[i].Load() && flags[i].CompareAndSwap(false, true) {
			ps.run(func() { f(i) })
			done()
		}
	}
}

// gemmPackGroup is how many B panels one packing item covers.
const gemmPackGroup = 4

// run is the loop participant p executes; the caller is participant 0 and
// waits for the last step's items so that C is complete when it returns. A
// helper arriving late finds the items claimed and returns.
func (j *gemmJob[T]) run(p int) {
	if last := &j.steps[len(j.steps)-1]; int(last.workDone.Load()) == j.rows*j.cols {
		return // a helper arriving after the caller finished
	}
	kern := j.kern
	mr, nr := kern.mr, kern.nr
	ws := getGemmScratch[T]()
	defer putGemmScratch(ws)
	ap, _ := ws.buffers(j.mc*j.kc, 0, mr*nr)
	pk := kern.pack.orDefault()
	s, flags := 0, j.claims
	for jc := 0; jc < j.n; jc += j.nc {
		nb := min(j.nc, j.n-jc)
		for pc := 0; pc < j.k; pc += j.kc {
			kb := min(j.kc, j.k-pc)
			st := &j.steps[s]
			s++
			packs := ceilDiv(ceilDiv(nb, nr), gemmPackGroup)
			claimItems(flags[:packs], p, j.t, &j.panics, func(i int) {
				c0, c1 := i*gemmPackGroup*nr, min((i+1)*gemmPackGroup*nr, nb)
				packB(j.bp[c0*kb:], pk, j.transB, j.b, j.ldb, pc, jc+c0, kb, c1-c0, nr)
			}, func() { j.sig.add(&st.packDone, packs) })
			flags = flags[j.packs:]
			j.sig.wait(&st.packDone, packs)
			bet := j.beta
			if pc > 0 {
				bet = 1 // later k slices accumulate onto the first
			}
			items := j.rows * j.cols
			claimItems(flags[:items], p, j.t, &j.panics, func(i int) {
				r0, r1 := panelRange(j.m, mr, j.rows, i/j.cols)
				c0, c1 := panelRange(nb, nr, j.cols, i%j.cols)
				for ic := r0; ic < r1; ic += j.mc {
					mb := min(j.mc, r1-ic)
					packA(ap, pk, j.transA, j.a, j.lda, ic, pc, mb, kb, mr)
					macroKernel(kern, ap, j.bp[c0*kb:], ws.tmp, mb, c1-c0, kb, j.alpha, bet, j.c[ic*j.ldc+jc+c0:], j.ldc)
				}
			}, func() { j.sig.add(&st.workDone, items) })
			flags = flags[items:]
			if p == 0 || s < len(j.steps) {
				j.sig.wait(&st.workDone, items) // before B is repacked, or C is read
			}
		}
	}
}
