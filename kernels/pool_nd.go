package kernels

// PoolDim describes one spatial dim of an N-d pooling: an input of size In
// padded by PadBegin and PadEnd, windows of K taps Dil apart, one every S
// elements, Out of them. Callers compute Out (floor or ceil mode) and make
// sure that every window has a tap inside the input.
type PoolDim struct {
	In, Out          int
	K, S, Dil        int // >= 1
	PadBegin, PadEnd int // >= 0
}

// Taps returns, for window o, the first tap inside the input (as an input
// index), how many taps lie inside the input, and how many lie inside the
// padded input [−PadBegin, In+PadEnd).
func (d PoolDim) Taps(o int) (first, count, padded int) {
	start := o*d.S - d.PadBegin
	j0 := 0
	if start < 0 {
		j0 = (-start + d.Dil - 1) / d.Dil
	}
	j1 := -1
	if last := d.In - 1 - start; last >= 0 {
		j1 = min(d.K-1, last/d.Dil)
	}
	padded = min(d.K, (d.In+d.PadEnd-1-start)/d.Dil+1)
	return start + j0*d.Dil, max(0, j1-j0+1), padded
}

// PoolNDParams describes an N-d pooling of Planes independent volumes
// (N·C), each row-major over Dims' In sizes.
type PoolNDParams struct {
	Planes int
	Dims   []PoolDim
}

// poolPlan holds the window tables of every dim.
type poolPlan struct {
	k             int
	first, count  [][]int // per dim and window
	padded        [][]int
	step          []int // input elements between two taps
	stride        []int // input elements between two indices
	inVol, outVol int
}

func newPoolPlan(p PoolNDParams) *poolPlan {
	k := len(p.Dims)
	pl := &poolPlan{k: k, first: make([][]int, k), count: make([][]int, k), padded: make([][]int, k),
		step: make([]int, k), stride: make([]int, k), inVol: 1, outVol: 1}
	for i := k - 1; i >= 0; i-- {
		d := p.Dims[i]
		pl.stride[i] = pl.inVol
		pl.step[i] = d.Dil * pl.inVol
		pl.inVol *= d.In
		pl.outVol *= d.Out
		pl.first[i], pl.count[i], pl.padded[i] = make([]int, d.Out), make([]int, d.Out), make([]int, d.Out)
		for o := range d.Out {
			f, c, n := d.Taps(o)
			pl.first[i][o], pl.count[i][o], pl.padded[i][o] = f*pl.stride[i], c, n
		}
	}
	return pl
}

// windowCost is about the work of one window, for the thread split.
func (pl *poolPlan) windowCost() int {
	c := 1
	for _, cs := range pl.count {
		m := 1
		for _, n := range cs {
			m = max(m, n)
		}
		c *= m
	}
	return c
}

// forEach runs fn on each window of one volume in row-major order, with
// pos the window's position; base is the input offset of its first tap
// inside the input.
func (pl *poolPlan) forEach(pos []int, fn func(o, base int)) {
	clear(pos)
	for o := range pl.outVol {
		base := 0
		for i, q := range pos {
			base += pl.first[i][q]
		}
		fn(o, base)
		for i := pl.k - 1; i >= 0; i-- {
			pos[i]++
			if pos[i] < len(pl.first[i]) {
				break
			}
			pos[i] = 0
		}
	}
}

// taps calls fn with the input offset of each tap of the window at pos
// that lies inside the input, in row-major window order, until fn returns
// false.
func (pl *poolPlan) taps(pos, tap []int, base int, fn func(off int) bool) {
	clear(tap)
	for {
		off := base
		for i, t := range tap {
			off += t * pl.step[i]
		}
		if !fn(off) {
			return
		}
		i := pl.k - 1
		for ; i >= 0; i-- {
			tap[i]++
			if tap[i] < pl.count[i][pos[i]] {
				break
			}
			tap[i] = 0
		}
		if i < 0 {
			return
		}
	}
}

// divisor is the element count an average divides window pos's sum by:
// its taps inside the input, or inside the padded input (countPad).
func (pl *poolPlan) divisor(pos []int, countPad bool) float64 {
	n := 1
	for i, q := range pos {
		if countPad {
			n *= pl.padded[i][q]
		} else {
			n *= pl.count[i][q]
		}
	}
	return float64(n)
}

// MaxPoolND writes the maximum of each window into out (Planes × output
// volume) and its position into idx, as a flat row-major index into the
// input volume of the same plane. The first maximum in row-major window
// order wins; a NaN wins over any number and is propagated. Planes are
// split over threads.
func MaxPoolND[T nnFloat](p PoolNDParams, x, out []T, idx []int64, threads int) {
	pl := newPoolPlan(p)
	nnFor(threads, p.Planes, pl.outVol*pl.windowCost(), func(lo, hi int) {
		pos, tap := make([]int, pl.k), make([]int, pl.k)
		for n := lo; n < hi; n++ {
			xp := x[n*pl.inVol : (n+1)*pl.inVol]
			op, ip := out[n*pl.outVol:(n+1)*pl.outVol], idx[n*pl.outVol:(n+1)*pl.outVol]
			pl.forEach(pos, func(o, base int) {
				bi := base
				best := xp[bi]
				pl.taps(pos, tap, base, func(off int) bool {
					v := xp[off]
					if v != v {
						bi = off
						return false
					}
					if v > best {
						best, bi = v, off
					}
					return true
				})
				op[o], ip[o] = xp[bi], int64(bi)
			})
		}
	})
}

// AvgPoolND writes the mean of each window into out: the sum of its taps
// inside the input, taken in float64, divided by their count or, with
// countPad, by the count of its taps inside the padded input.
func AvgPoolND[T nnFloat](p PoolNDParams, countPad bool, x, out []T, threads int) {
	pl := newPoolPlan(p)
	nnFor(threads, p.Planes, pl.outVol*pl.windowCost(), func(lo, hi int) {
		pos, tap := make([]int, pl.k), make([]int, pl.k)
		for n := lo; n < hi; n++ {
			xp := x[n*pl.inVol : (n+1)*pl.inVol]
			op := out[n*pl.outVol : (n+1)*pl.outVol]
			pl.forEach(pos, func(o, base int) {
				var s float64
				pl.taps(pos, tap, base, func(off int) bool {
					s += float64(xp[off])
					return true
				})
				op[o] = T(s / pl.divisor(pos, countPad))
			})
		}
	})
}

// AvgPoolNDGrad writes into dx (Planes × input volume) the gradient of
// AvgPoolND: each element of dy, divided by its window's divisor, is added
// to each tap of the window inside the input.
func AvgPoolNDGrad[T nnFloat](p PoolNDParams, countPad bool, dy, dx []T, threads int) {
	pl := newPoolPlan(p)
	nnFor(threads, p.Planes, pl.outVol*pl.windowCost()+pl.inVol, func(lo, hi int) {
		pos, tap := make([]int, pl.k), make([]int, pl.k)
		for n := lo; n < hi; n++ {
			dxp := dx[n*pl.inVol : (n+1)*pl.inVol]
			clear(dxp)
			g := dy[n*pl.outVol : (n+1)*pl.outVol]
			pl.forEach(pos, func(o, base int) {
				v := T(float64(g[o]) / pl.divisor(pos, countPad))
				pl.taps(pos, tap, base, func(off int) bool {
					dxp[off] += v
					return true
				})
			})
		}
	})
}
