package kernels

import (
	"math"
	"sync"
)

// Max pooling without indices, for inference, where nothing reads where a
// maximum came from. It is separable: each input row's window maxima are
// taken first (the horizontal pass), then those of the window's rows are
// combined (the vertical pass), so a k×k window costs about 2k compares
// instead of k², and both passes are runs of whole-row operations that
// the AVX-512 loops of pool_amd64.s do 16 lanes at a time.
//
// The result is bitwise MaxPool2D's: maxPair, folded over a window in
// row-major order in any grouping, yields the first NaN or else the first
// element equal to the maximum (which decides between −0 and +0), and
// taking each row's maxima before combining rows keeps row-major order.

// maxPair is max pooling's rule for two candidates in window order: b
// takes over when a is not NaN and b is NaN or greater than a.
func maxPair[T nnFloat](a, b T) T {
	if a == a && (b != b || b > a) {
		return b
	}
	return a
}

// maxTaps is the loop of both passes: for each row r < rows and i < n,
// dst[r·dstStride + i] is src[r·srcStride + offs[0] + stride·i] folded by
// maxPair with the elements at offs[1], offs[2], … in that order. The
// offsets are ≥ 0; the loop reads no element past the last tap.
func maxTaps[T nnFloat](dst, src []T, offs []int64, n, rows, dstStride, srcStride, stride int) {
	if n == 0 || rows == 0 {
		return
	}
	last := int64(0)
	for _, o := range offs {
		last = max(last, o)
	}
	dst = dst[:(rows-1)*dstStride+n]
	src = src[:(rows-1)*srcStride+int(last)+stride*(n-1)+1]
	if df, ok := any(dst).([]float32); ok && maxTapsF32Vec(df, any(src).([]float32), offs, n, rows, dstStride, srcStride, stride) {
		return
	}
	for r := range rows {
		d := dst[r*dstStride : r*dstStride+n]
		s := src[r*srcStride:]
		for i := range d {
			m := s[int(offs[0])+stride*i]
			for _, o := range offs[1:] {
				m = maxPair(m, s[int(o)+stride*i])
			}
			d[i] = m
		}
	}
}

// MaxPool2DValues writes MaxPool2D's maxima into out, bit for bit, without
// the indices. Planes are split over threads; results do not depend on
// the thread count.
func MaxPool2DValues[T nnFloat](p Pool2DParams, x, out []T, threads int) {
	oh, ow := p.OutH(), p.OutW()
	if oh == 0 || ow == 0 || p.N*p.C == 0 {
		return
	}
	cost := p.H*ow*p.KW + oh*ow*p.KH + poolPlaneCost
	if nnSerial(threads, p.N*p.C, cost) {
		maxPoolValuePlanes(&p, x, out, 0, p.N*p.C)
		return
	}
	j := getJob[maxPoolValuesJob[T]]()
	j.p, j.x, j.out = p, x, out
	nnForRanger(threads, p.N*p.C, cost, j)
	putJob(j)
}

// maxPoolValuesJob is MaxPool2DValues's parallel loop.
type maxPoolValuesJob[T nnFloat] struct {
	p      Pool2DParams
	x, out []T
}

func (j *maxPoolValuesJob[T]) run(lo, hi int) { maxPoolValuePlanes(&j.p, j.x, j.out, lo, hi) }

// poolScratch holds one loop's buffers, recycled through a pool: the
// row maxima of the padded input rows (rows, (H+2·PH)×OW), an input plane
// with its columns padded (pad, H×(W+2·PW)), and the taps' offsets; the
// separable MaxPool2D (pool_sep.go) uses rows and at.
type poolScratch[T nnFloat] struct {
	rows, pad []T
	offs      []int64
	at        []int64 // the positions of the row maxima (pool_sep.go)
}

var (
	poolScratchF32 = sync.Pool{New: func() any { return new(poolScratch[float32]) }}
	poolScratchF64 = sync.Pool{New: func() any { return new(poolScratch[float64]) }}
)

func poolScratchPool[T nnFloat]() *sync.Pool {
	var zero T
	if _, ok := any(zero).(float32); ok {
		return &poolScratchF32
	}
	return &poolScratchF64
}

// poolScratchMin is the least length grow gives each buffer: enough for
// every pool of the zoo's inference programs at their usual sizes (the
// detector's SPP at 320×320 needs 220 elements of rows), so that an object
// the pool makes anew, after a garbage collection emptied it, is grown
// once and not once per pool size the run meets.
const poolScratchMin = 1024

// grow makes the buffers at least nr, np and no elements long. When one
// is too short it makes all three anew, each of at least twice its old
// length and poolScratchMin, rows and pad from one allocation: a new
// object costs two Go allocations, not one per buffer and size.
func (s *poolScratch[T]) grow(nr, np, no int) {
	if len(s.rows) >= nr && len(s.pad) >= np && len(s.offs) >= no {
		return
	}
	size := func(need, had int) int { return max(need, 2*had, poolScratchMin) }
	nr, np = size(nr, len(s.rows)), size(np, len(s.pad))
	mem := make([]T, nr+np)
	s.rows, s.pad = mem[:nr:nr], mem[nr:]
	if len(s.offs) < no {
		s.offs = make([]int64, size(no, len(s.offs)))
	}
}

// fill sets every element of x to v.
func fill[T nnFloat](x []T, v T) {
	for i := range x {
		x[i] = v
	}
}

// maxPoolValuePlanes is MaxPool2DValues on the planes [lo, hi). Padding
// is −∞, which is bitwise what a window without it gives: −∞ never
// exceeds an element, and an element equal to it is −∞ too.
func maxPoolValuePlanes[T nnFloat](p *Pool2DParams, x, out []T, lo, hi int) {
	oh, ow := p.OutH(), p.OutW()
	hw, ohw := p.H*p.W, oh*ow
	if p.KH == 3 && p.KW == 3 && p.SH == 2 && p.SW == 2 && p.PH == 1 && p.PW == 1 && hi > lo {
		// ResNet's pool: one pass over all the planes, no padded copies.
		if xf, ok := any(x[lo*hw : hi*hw]).([]float32); ok && maxPool3x3S2ValuesF32Vec(hi-lo, p.H, p.W, oh, ow, xf, any(out[lo*ohw:hi*ohw]).([]float32)) {
			return
		}
	}
	pair := p.KH == 2 && p.KW == 2 && p.SH == 2 && p.SW == 2 && p.PH == 0 && p.PW == 0
	if pair && p.H == 2*oh && hi > lo {
		// With no row left over, consecutive planes are the rows of one
		// tall plane: one call for all of them (the small CNN at batch 1
		// has 64 planes of 16×16, 8×8 outputs each), and no scratch (the
		// fused pool calls this once per block of 16 channels).
		if xf, ok := any(x[lo*hw : hi*hw]).([]float32); ok && maxPool2x2ValuesF32Vec(p.W, (hi-lo)*oh, ow, xf, any(out[lo*ohw:hi*ohw]).([]float32)) {
			return
		}
	}
	hp, wp := p.H+2*p.PH, p.W+2*p.PW
	sp := poolScratchPool[T]()
	s := sp.Get().(*poolScratch[T])
	np := 0
	if p.PW > 0 {
		np = p.H * wp
	}
	s.grow(hp*ow, np, p.KH+p.KW)
	inf := T(math.Inf(-1))
	rows, pad := s.rows[:hp*ow], s.pad[:np]
	fill(rows[:p.PH*ow], inf)
	fill(rows[(p.PH+p.H)*ow:], inf)
	if p.PW > 0 {
		for h := range p.H {
			fill(pad[h*wp:h*wp+p.PW], inf)
			fill(pad[h*wp+p.PW+p.W:(h+1)*wp], inf)
		}
	}
	offH, offV := s.offs[:p.KW], s.offs[p.KW:p.KW+p.KH]
	for j := range offH {
		offH[j] = int64(j)
	}
	for t := range offV {
		offV[t] = int64(t * ow)
	}
	for pl := lo; pl < hi; pl++ {
		xp := x[pl*hw : (pl+1)*hw]
		if pair {
			if xf, ok := any(xp).([]float32); ok && maxPool2x2ValuesF32Vec(p.W, oh, ow, xf, any(out[pl*ohw:(pl+1)*ohw]).([]float32)) {
				continue
			}
		}
		src, stride := xp, p.W
		if p.PW > 0 {
			for h := range p.H {
				copy(pad[h*wp+p.PW:h*wp+p.PW+p.W], xp[h*p.W:(h+1)*p.W])
			}
			src, stride = pad, wp
		}
		// Horizontal: the window maxima of every input row.
		maxTaps(rows[p.PH*ow:], src, offH, ow, p.H, ow, stride, p.SW)
		// Vertical: fold each window's rows in order.
		maxTaps(out[pl*ohw:(pl+1)*ohw], rows, offV, ow, oh, ow, p.SH*ow, 1)
	}
	sp.Put(s)
}
