package kernels

// Pool2DParams describes a 2-D pooling of an N×C×H×W input (NCHW) with a
// KH×KW window, strides and symmetric padding. Padding never takes part in
// a result: max pooling ignores it and average pooling divides by the
// number of input elements in the window (PyTorch's
// count_include_pad=False). Callers keep PH < KH, PW < KW and H, W ≥ 1,
// so every window holds at least one input element.
type Pool2DParams struct {
	N, C, H, W int
	KH, KW     int // window, >= 1
	SH, SW     int // strides, >= 1
	PH, PW     int // padding, >= 0
}

// OutH is the output height, (H + 2·PH − KH)/SH + 1, or 0 when the window
// is larger than the padded input.
func (p Pool2DParams) OutH() int { return convOut(p.H, p.KH, p.SH, p.PH, 1) }

// OutW is the output width.
func (p Pool2DParams) OutW() int { return convOut(p.W, p.KW, p.SW, p.PW, 1) }

// window returns the clamped input rows [h0,h1) and columns [w0,w1) of
// output position (y, x).
func (p Pool2DParams) window(y, x int) (h0, h1, w0, w1 int) {
	h0, w0 = y*p.SH-p.PH, x*p.SW-p.PW
	h1, w1 = min(h0+p.KH, p.H), min(w0+p.KW, p.W)
	return max(h0, 0), h1, max(w0, 0), w1
}

// MaxPool2D writes the maximum of each window into out (N×C×OH×OW) and its
// position into idx, as a flat index h·W + w into the input plane of the
// same sample and channel (PyTorch's return_indices convention). The first
// maximum in row-major window order wins; a NaN wins over any number and
// is propagated. Planes are split over threads; results do not depend on
// the thread count.
func MaxPool2D[T nnFloat](p Pool2DParams, x, out []T, idx []int64, threads int) {
	ohw := p.OutH() * p.OutW()
	if nnSerial(threads, p.N*p.C, ohw*p.KH*p.KW) {
		maxPoolPlanes(&p, x, out, idx, 0, p.N*p.C)
		return
	}
	j := getJob[maxPoolJob[T]]()
	j.p, j.x, j.out, j.idx = p, x, out, idx
	nnForRanger(threads, p.N*p.C, ohw*p.KH*p.KW, j)
	putJob(j)
}

// maxPoolJob is MaxPool2D's parallel loop.
type maxPoolJob[T nnFloat] struct {
	p      Pool2DParams
	x, out []T
	idx    []int64
}

func (j *maxPoolJob[T]) run(lo, hi int) { maxPoolPlanes(&j.p, j.x, j.out, j.idx, lo, hi) }

// maxPoolPlanes is MaxPool2D on the planes [lo, hi).
func maxPoolPlanes[T nnFloat](p *Pool2DParams, x, out []T, idx []int64, lo, hi int) {
	oh, ow := p.OutH(), p.OutW()
	hw, ohw := p.H*p.W, oh*ow
	pair := p.KH == 2 && p.KW == 2 && p.SH == 2 && p.SW == 2 && p.PH == 0 && p.PW == 0
	if !pair && p.KH*p.KW >= maxPoolSepMin {
		maxPoolSepPlanes(p, x, out, idx, lo, hi)
		return
	}
	for pl := lo; pl < hi; pl++ {
		xp := x[pl*hw : (pl+1)*hw]
		op, ip := out[pl*ohw:(pl+1)*ohw], idx[pl*ohw:(pl+1)*ohw]
		if pair {
			maxPool2x2Plane(p.W, oh, ow, xp, op, ip)
			continue
		}
		for y := range oh {
			for xo := range ow {
				bi := windowMax(p, xp, y, xo)
				op[y*ow+xo], ip[y*ow+xo] = xp[bi], int64(bi)
			}
		}
	}
}

// windowMax returns the in-plane index of the maximum of output position
// (y, x)'s window in plane xp: the first maximum in row-major window order,
// or the first NaN.
func windowMax[T nnFloat](p *Pool2DParams, xp []T, y, x int) int {
	h0, h1, w0, w1 := p.window(y, x)
	bi := h0*p.W + w0
	best := xp[bi]
	for h := h0; h < h1; h++ {
		for w := w0; w < w1; w++ {
			v := xp[h*p.W+w]
			if v != v {
				return h*p.W + w
			}
			if v > best {
				best, bi = v, h*p.W+w
			}
		}
	}
	return bi
}

// maxPool2x2Plane is MaxPool2D on one plane for 2×2 windows with stride 2
// and no padding: window (y, x) is x[2y][2x], x[2y][2x+1], x[2y+1][2x],
// x[2y+1][2x+1], scanned in that order with the same rule (the first
// maximum wins, a NaN wins and ends the scan).
func maxPool2x2Plane[T nnFloat](w, oh, ow int, xp, op []T, ip []int64) {
	if xf, ok := any(xp).([]float32); ok && maxPool2x2F32Vec(w, oh, ow, xf, any(op).([]float32), ip) {
		return
	}
	for y := range oh {
		r0 := xp[2*y*w : 2*y*w+2*ow]
		r1 := xp[(2*y+1)*w : (2*y+1)*w+2*ow]
		o, oi := op[y*ow:y*ow+ow], ip[y*ow:y*ow+ow]
		b0 := int64(2 * y * w)
		b1 := b0 + int64(w)
		for xo := range o {
			a, b, c, d := r0[2*xo], r0[2*xo+1], r1[2*xo], r1[2*xo+1]
			i0, i2 := b0+int64(2*xo), b1+int64(2*xo)
			best, bi := a, i0
			if a == a { // a NaN ends the scan
				if b != b || b > best {
					best, bi = b, i0+1
				}
				if best == best {
					if c != c || c > best {
						best, bi = c, i2
					}
					if best == best && (d != d || d > best) {
						best, bi = d, i2+1
					}
				}
			}
			o[xo], oi[xo] = best, bi
		}
	}
}

// AvgPool2D writes the mean of the input elements of each window into out
// (N×C×OH×OW); padding is excluded from the divisor. Sums are taken in
// float64.
func AvgPool2D[T nnFloat](p Pool2DParams, x, out []T, threads int) {
	cost := p.OutH() * p.OutW() * p.KH * p.KW
	if nnSerial(threads, p.N*p.C, cost) {
		avgPoolPlanes(&p, x, out, 0, p.N*p.C)
		return
	}
	j := getJob[avgPoolJob[T]]()
	j.p, j.x, j.out = p, x, out
	nnForRanger(threads, p.N*p.C, cost, j)
	putJob(j)
}

// avgPoolJob is AvgPool2D's parallel loop.
type avgPoolJob[T nnFloat] struct {
	p      Pool2DParams
	x, out []T
}

func (j *avgPoolJob[T]) run(lo, hi int) { avgPoolPlanes(&j.p, j.x, j.out, lo, hi) }

// avgPoolPlanes is AvgPool2D on the planes [lo, hi).
func avgPoolPlanes[T nnFloat](p *Pool2DParams, x, out []T, lo, hi int) {
	oh, ow := p.OutH(), p.OutW()
	hw, ohw := p.H*p.W, oh*ow
	for pl := lo; pl < hi; pl++ {
		xp := x[pl*hw : (pl+1)*hw]
		op := out[pl*ohw : (pl+1)*ohw]
		for y := range oh {
			for xo := range ow {
				h0, h1, w0, w1 := p.window(y, xo)
				var s float64
				for h := h0; h < h1; h++ {
					for _, v := range xp[h*p.W+w0 : h*p.W+w1] {
						s += float64(v)
					}
				}
				op[y*ow+xo] = T(s / float64((h1-h0)*(w1-w0)))
			}
		}
	}
}
