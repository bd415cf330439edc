package kernels

import "math"

// The ops around a blocked convolution (conv_nchwc.go) on the same
// layout: the reorders at the edges of a blocked part of a program, and
// the pooling and resizing that sit between its convolutions. Each takes
// tensors N×(C/b)×H×W×b (C a multiple of the block b, which
// NCHWcBlockOK accepts) and gives, element for element, what its NCHW
// counterpart gives.

// ReorderToNCHWc writes x (N×C×H×W, hw = H·W) into y in the blocked
// layout with block b, N×(C/b)×H×W×b. c must be a multiple of b.
func ReorderToNCHWc(x, y []float32, n, c, hw, b, threads int) {
	reorderNCHWc(x, y, n, c, hw, b, threads, true)
}

// ReorderFromNCHWc is ReorderToNCHWc's inverse: x in the blocked layout
// with block b into y, N×C×H×W.
func ReorderFromNCHWc(x, y []float32, n, c, hw, b, threads int) {
	reorderNCHWc(x, y, n, c, hw, b, threads, false)
}

// reorderSpan is the pixels of one block a reorder's unit of work moves:
// a block of a large map splits over threads.
const reorderSpan = 1024

// reorderNCHWc runs either reorder (to: into the blocked layout) over
// units of one block of b channels and up to reorderSpan pixels.
func reorderNCHWc(x, y []float32, n, c, hw, b, threads int, to bool) {
	blocks, spans := n*c/b, (hw+reorderSpan-1)/reorderSpan
	if blocks == 0 || hw == 0 {
		return
	}
	x, y = x[:blocks*b*hw], y[:blocks*b*hw]
	cost := min(hw, reorderSpan) * b
	if nnSerial(threads, blocks*spans, cost) {
		reorderNCHWcUnits(x, y, hw, b, to, 0, blocks*spans)
		return
	}
	j := getJob[reorderNCHWcJob]()
	j.x, j.y, j.hw, j.b, j.to = x, y, hw, b, to
	nnForRanger(threads, blocks*spans, cost, j)
	putJob(j)
}

// reorderNCHWcJob is reorderNCHWc's parallel loop.
type reorderNCHWcJob struct {
	x, y  []float32
	hw, b int
	to    bool
}

func (j *reorderNCHWcJob) run(lo, hi int) { reorderNCHWcUnits(j.x, j.y, j.hw, j.b, j.to, lo, hi) }

// reorderNCHWcUnits moves the units [lo, hi): by b×b transposes where
// there is a vector loop, the rest pixel by pixel.
func reorderNCHWcUnits(x, y []float32, hw, b int, to bool, lo, hi int) {
	spans := (hw + reorderSpan - 1) / reorderSpan
	for u := lo; u < hi; u++ {
		blk, p0 := u/spans, (u%spans)*reorderSpan
		p1 := min(p0+reorderSpan, hw)
		plain, blocked := x[blk*b*hw:(blk+1)*b*hw], y[blk*b*hw:(blk+1)*b*hw]
		if !to {
			plain, blocked = blocked, x[blk*b*hw:(blk+1)*b*hw]
		}
		done := reorderPixelsVec(plain[p0:], blocked[p0*b:], hw, p1-p0, b, to)
		for p := p0 + done; p < p1; p++ {
			px := blocked[p*b : (p+1)*b]
			for l := range px {
				if to {
					px[l] = plain[l*hw+p]
				} else {
					plain[l*hw+p] = px[l]
				}
			}
		}
	}
}

// MaxPoolNCHWc is MaxPool2DValues on the blocked layout with block b:
// p.C channels (a multiple of b), x and out N×(C/b)×H×W×b and
// N×(C/b)×OH×OW×b. Padding never wins, as in MaxPool2DValues.
func MaxPoolNCHWc(p Pool2DParams, b int, x, out []float32, threads int) {
	planes := p.N * p.C / b
	oh, ow := p.OutH(), p.OutW()
	if planes == 0 || oh == 0 || ow == 0 {
		return
	}
	cost := (p.H*ow*p.KW + oh*ow*p.KH + poolPlaneCost) * b
	if nnSerial(threads, planes, cost) {
		maxPoolNCHWcPlanes(&p, b, x, out, 0, planes)
		return
	}
	j := getJob[maxPoolNCHWcJob]()
	j.p, j.b, j.x, j.out = p, b, x, out
	nnForRanger(threads, planes, cost, j)
	putJob(j)
}

// maxPoolNCHWcJob is MaxPoolNCHWc's parallel loop over blocked planes.
type maxPoolNCHWcJob struct {
	p      Pool2DParams
	b      int
	x, out []float32
}

func (j *maxPoolNCHWcJob) run(lo, hi int) { maxPoolNCHWcPlanes(&j.p, j.b, j.x, j.out, lo, hi) }

// maxPoolNCHWcPlanes is MaxPoolNCHWc on the blocked planes [lo, hi), by
// maxPoolValuePlanes's separable passes: a pixel is a whole vector of 16
// channels, so the horizontal pass takes each output pixel's window of
// input pixels (16 lanes, one tap per pixel) and the vertical pass folds
// whole output rows. The horizontal pass reads x in place: a window at
// an edge of the row takes only its taps inside it, which is what −∞
// padding gives, since −∞ never wins; the rows above and below are −∞,
// as there.
func maxPoolNCHWcPlanes(p *Pool2DParams, b int, x, out []float32, lo, hi int) {
	oh, ow := p.OutH(), p.OutW()
	hw, ohw := p.H*p.W*b, oh*ow*b
	s := poolScratchF32.Get().(*poolScratch[float32])
	s.grow((p.H+2*p.PH)*ow*b, 0, p.KH+p.KW)
	inf := float32(math.Inf(-1))
	rows := s.rows[:(p.H+2*p.PH)*ow*b]
	fill(rows[:p.PH*ow*b], inf)
	fill(rows[(p.PH+p.H)*ow*b:], inf)
	offH, offV := s.offs[:p.KW], s.offs[p.KW:p.KW+p.KH]
	for j := range offH {
		offH[j] = int64(j * b)
	}
	for t := range offV {
		offV[t] = int64(t * ow * b)
	}
	// The output pixels [in0, in1) have their windows inside the row.
	in0, in1 := min(ow, (p.PW+p.SW-1)/p.SW), 0
	if p.W+p.PW >= p.KW {
		in1 = min(ow, (p.W+p.PW-p.KW)/p.SW+1)
	}
	in1 = max(in0, in1)
	for pl := lo; pl < hi; pl++ {
		src, dst := x[pl*hw:(pl+1)*hw], rows[p.PH*ow*b:]
		// Horizontal: the inner windows a whole row at a time when they
		// step by one pixel, else a row of windows at a time (or all).
		switch {
		case in1 == in0:
		case p.SW == 1:
			maxTaps(dst[in0*b:], src[(in0-p.PW)*b:], offH, (in1-in0)*b, p.H, ow*b, p.W*b, 1)
		case p.PW == 0 && p.W == ow*p.SW:
			// The windows tile each row to its end, so every row's
			// windows follow the last row's: all in one call.
			maxTaps(dst, src, offH, b, p.H*ow, b, p.SW*b, 1)
		default:
			for h := range p.H {
				maxTaps(dst[(h*ow+in0)*b:], src[(h*p.W+in0*p.SW-p.PW)*b:], offH, b, in1-in0, b, p.SW*b, 1)
			}
		}
		for xo := range in0 {
			maxPoolNCHWcEdge(p, b, src, dst, offH, xo)
		}
		for xo := in1; xo < ow; xo++ {
			maxPoolNCHWcEdge(p, b, src, dst, offH, xo)
		}
		// Vertical: fold each window's rows in order.
		maxTaps(out[pl*ohw:(pl+1)*ohw], rows, offV, ow*b, oh, ow*b, p.SH*ow*b, 1)
	}
	poolScratchF32.Put(s)
}

// maxPoolNCHWcEdge is the horizontal pass of output pixel xo, whose
// window crosses an edge of the row, in every row of src into dst: the
// taps inside the row (offH[:k], one pixel apart), or −∞ when none is.
func maxPoolNCHWcEdge(p *Pool2DParams, b int, src, dst []float32, offH []int64, xo int) {
	ow, w0 := p.OutW(), xo*p.SW-p.PW
	k0, k1 := max(0, -w0), min(p.KW, p.W-w0)
	if k1 <= k0 {
		for h := range p.H {
			fill(dst[(h*ow+xo)*b:(h*ow+xo+1)*b], float32(math.Inf(-1)))
		}
		return
	}
	maxTaps(dst[xo*b:], src[(w0+k0)*b:], offH[:k1-k0], b, p.H, ow*b, p.W*b, 1)
}

// UpsampleNearestNCHWc is resize with mode nearest, asymmetric
// coordinates and floor rounding by whole factors fh, fw on the blocked
// layout with block b: x N×(C/b)×H×W×b into out N×(C/b)×(H·fh)×(W·fw)×b,
// each input pixel's vector repeated over an fh×fw square.
func UpsampleNearestNCHWc(x, out []float32, n, c, h, w, b, fh, fw, threads int) {
	rows := n * c / b * h
	if rows == 0 || w == 0 || fh == 0 || fw == 0 {
		return
	}
	cost := fh * fw * w * b
	if nnSerial(threads, rows, cost) {
		upsampleNearestNCHWcRows(x, out, w, b, fh, fw, 0, rows)
		return
	}
	j := getJob[upsampleNearestNCHWcJob]()
	j.x, j.out, j.w, j.b, j.fh, j.fw = x, out, w, b, fh, fw
	nnForRanger(threads, rows, cost, j)
	putJob(j)
}

// upsampleNearestNCHWcJob is UpsampleNearestNCHWc's parallel loop over
// input rows.
type upsampleNearestNCHWcJob struct {
	x, out       []float32
	w, b, fh, fw int
}

func (j *upsampleNearestNCHWcJob) run(lo, hi int) {
	upsampleNearestNCHWcRows(j.x, j.out, j.w, j.b, j.fh, j.fw, lo, hi)
}

// upsampleNearestNCHWcRows writes the fh output rows of each input row
// in [lo, hi) (rows of all planes in turn): the first pixel vector by
// pixel vector, the others as copies of it.
func upsampleNearestNCHWcRows(x, out []float32, w, b, fh, fw, lo, hi int) {
	ow := w * fw
	for r := lo; r < hi; r++ {
		src := x[r*w*b : (r+1)*w*b]
		dst := out[r*fh*ow*b : (r+1)*fh*ow*b]
		row := dst[:ow*b]
		for xi := range w {
			// A local array: stores of it need no memmove.
			if b == 16 {
				px := *(*[16]float32)(src[xi*16:])
				for k := range fw {
					*(*[16]float32)(row[(xi*fw+k)*16:]) = px
				}
				continue
			}
			px := *(*[8]float32)(src[xi*8:]) // b is 8
			for k := range fw {
				*(*[8]float32)(row[(xi*fw+k)*8:]) = px
			}
		}
		for k := 1; k < fh; k++ {
			copy(dst[k*ow*b:(k+1)*ow*b], row)
		}
	}
}
