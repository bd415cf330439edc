package kernels

import (
	"runtime"
	"sync/atomic"
)

// gemmMinWork is the m·n·k volume each goroutine must get for another one
// to pay off.
const gemmMinWork = 112 * 112 * 112

// gemmItemsPerThread is how many work items each step is cut into per
// goroutine: enough for late or slow goroutines to even out.
var gemmItemsPerThread = 1

// gemmParallel runs GEMM on the calling goroutine and up to threads-1
// helpers. All walk the same steps, one per nc×kc block of op(B): they pack
// the block into one shared buffer, claiming groups of panels, then claim
// work items (rows × columns of C) each of which packs its rows of op(A) and
// runs the macro-kernel. Items are claimed dynamically, but each element of
// C is computed by exactly one goroutine with the same arithmetic whichever
// it is, so results are bitwise reproducible.
func gemmParallel[T float](kern *gemmKernel[T], transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int, threads int) {
	t := min(threads, m*n*k/gemmMinWork)
	if t <= 1 {
		gemmSerial(kern, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	j := &gemmJob[T]{kern: kern, transA: transA, transB: transB, m: m, n: n, k: k,
		alpha: alpha, beta: beta, a: a, b: b, c: c, lda: lda, ldb: ldb, ldc: ldc}
	j.nc = balancedBlock(n, kern.nc, kern.nr)
	j.kc = balancedBlock(k, kern.kc, 1)
	j.mc = balancedBlock(m, kern.mc, kern.mr)
	j.rows, j.cols = gemmItems(m, j.nc, kern.mr, kern.nr, j.mc, t, gemmItemsPerThread)
	if gemmItemsOverride[0] > 0 {
		j.rows, j.cols = gemmItemsOverride[0], gemmItemsOverride[1]
	}
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
}

// gemmItems splits a step (m rows, nb columns of C) into rows×cols work
// items for t goroutines. Row chunks are whole micro-panels no taller than
// mc. It minimises an estimate of the time until the last item is done:
// rounds of t items, each costing its largest multiply-add area plus
// packing its rows of A (about ten multiply-adds per element) plus streaming
// its columns of the packed B block from cache.
func gemmItems(m, nb, mr, nr, mc, t, per int) (rows, cols int) {
	pm, pn := ceilDiv(m, mr), ceilDiv(nb, nr)
	rmin := min(pm, ceilDiv(m, mc))
	most := max(rmin, 8*t*per) // more items only add overhead
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
// late participant delays nothing.
func claimItems(flags []atomic.Bool, p, t int, f func(i int)) {
	for i := p % t; i < len(flags); i += t {
		if flags[i].CompareAndSwap(false, true) {
			f(i)
		}
	}
	for i := range flags {
		if !flags[i].Load() && flags[i].CompareAndSwap(false, true) {
			f(i)
		}
	}
}

// gemmPackGroup is how many B panels one packing item covers.
const gemmPackGroup = 4

// run is the loop participant p executes; the caller is participant 0 and
// waits for the last step's items so that C is complete when it returns. A
// helper arriving late finds the items claimed and returns.
func (j *gemmJob[T]) run(p int) {
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
			claimItems(flags[:packs], p, j.t, func(i int) {
				c0, c1 := i*gemmPackGroup*nr, min((i+1)*gemmPackGroup*nr, nb)
				packB(j.bp[c0*kb:], pk, j.transB, j.b, j.ldb, pc, jc+c0, kb, c1-c0, nr)
				st.packDone.Add(1)
			})
			flags = flags[j.packs:]
			spinUntil(&st.packDone, packs)
			bet := j.beta
			if pc > 0 {
				bet = 1 // later k slices accumulate onto the first
			}
			items := j.rows * j.cols
			claimItems(flags[:items], p, j.t, func(i int) {
				r0, r1 := panelRange(j.m, mr, j.rows, i/j.cols)
				c0, c1 := panelRange(nb, nr, j.cols, i%j.cols)
				for ic := r0; ic < r1; ic += j.mc {
					mb := min(j.mc, r1-ic)
					packA(ap, pk, j.transA, j.a, j.lda, ic, pc, mb, kb, mr)
					macroKernel(kern, ap, j.bp[c0*kb:], ws.tmp, mb, c1-c0, kb, j.alpha, bet, j.c[ic*j.ldc+jc+c0:], j.ldc)
				}
				st.workDone.Add(1)
			})
			flags = flags[items:]
			if p == 0 || s < len(j.steps) {
				spinUntil(&st.workDone, items) // before B is repacked, or C is read
			}
		}
	}
}

// spinUntil waits for a counter that other participants are about to
// complete; their items are short, so it polls, yielding now and then.
func spinUntil(c *atomic.Int32, target int) {
	for i := 1; int(c.Load()) < target; i++ {
		if i%64 == 0 {
			runtime.Gosched()
		}
	}
}

var gemmItemsOverride [2]int
