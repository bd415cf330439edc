package kernels

// MaxPool2DGrad writes into dx (planes×hw) the gradient of MaxPool2D: each
// element of dy (planes×ohw) is added at the flat in-plane position idx
// holds for it (MaxPool2D's indices), every other element is 0. Each
// index must be in [0, hw); the caller checks that (see OutOfRange).
// Planes are split over threads; within a plane dy is added in order, so
// results do not depend on the thread count.
func MaxPool2DGrad[T nnFloat](planes, hw, ohw int, dy []T, idx []int64, dx []T, threads int) {
	nnFor(threads, planes, ohw+hw, func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			dxp := dx[pl*hw : (pl+1)*hw]
			clear(dxp)
			ip := idx[pl*ohw : (pl+1)*ohw]
			for i, v := range dy[pl*ohw : (pl+1)*ohw] {
				dxp[ip[i]] += v
			}
		}
	})
}

// AvgPool2DGrad writes into dx (N×C×H×W) the gradient of AvgPool2D given
// dy (N×C×OH×OW): each element of dy, divided by the number of input
// elements of its window (padding excluded), is added to each of them.
// Planes are split over threads; results do not depend on the thread
// count.
func AvgPool2DGrad[T nnFloat](p Pool2DParams, dy, dx []T, threads int) {
	oh, ow := p.OutH(), p.OutW()
	hw, ohw := p.H*p.W, oh*ow
	nnFor(threads, p.N*p.C, ohw*p.KH*p.KW+hw, func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			dxp := dx[pl*hw : (pl+1)*hw]
			clear(dxp)
			dyp := dy[pl*ohw : (pl+1)*ohw]
			for y := range oh {
				for xo := range ow {
					h0, h1, w0, w1 := p.window(y, xo)
					v := T(float64(dyp[y*ow+xo]) / float64((h1-h0)*(w1-w0)))
					for h := h0; h < h1; h++ {
						r := dxp[h*p.W+w0 : h*p.W+w1]
						for i := range r {
							r[i] += v
						}
					}
				}
			}
		}
	})
}

// MaxPool2DGradX writes into dx (N×C×H×W) the gradient of MaxPool2D
// given its input x instead of its indices: each window's maximum is
// found again by MaxPool2D's rule (first maximum in row-major order, a NaN
// wins) and dy's element is added there; every other element is 0. The
// result is bitwise what MaxPool2DGrad gives with MaxPool2D's indices.
// Planes are split over threads; results do not depend on the thread
// count.
func MaxPool2DGradX[T nnFloat](p Pool2DParams, dy, x, dx []T, threads int) {
	cost := p.OutH()*p.OutW()*p.KH*p.KW + p.H*p.W + poolPlaneCost
	if nnSerial(threads, p.N*p.C, cost) {
		maxPoolGradXPlanes(&p, dy, x, dx, 0, p.N*p.C)
		return
	}
	j := getJob[maxPoolGradXJob[T]]()
	j.p, j.dy, j.x, j.dx = p, dy, x, dx
	nnForRanger(threads, p.N*p.C, cost, j)
	putJob(j)
}

// maxPoolGradXJob is MaxPool2DGradX's parallel loop.
type maxPoolGradXJob[T nnFloat] struct {
	p         Pool2DParams
	dy, x, dx []T
}

func (j *maxPoolGradXJob[T]) run(lo, hi int) { maxPoolGradXPlanes(&j.p, j.dy, j.x, j.dx, lo, hi) }

// maxPoolGradXPlanes is MaxPool2DGradX on the planes [lo, hi).
func maxPoolGradXPlanes[T nnFloat](p *Pool2DParams, dy, x, dx []T, lo, hi int) {
	oh, ow := p.OutH(), p.OutW()
	hw, ohw := p.H*p.W, oh*ow
	pair := p.KH == 2 && p.KW == 2 && p.SH == 2 && p.SW == 2 && p.PH == 0 && p.PW == 0
	for pl := lo; pl < hi; pl++ {
		xp, dxp := x[pl*hw:(pl+1)*hw], dx[pl*hw:(pl+1)*hw]
		dyp := dy[pl*ohw : (pl+1)*ohw]
		if pair {
			maxPool2x2GradPlane(p.W, oh, ow, xp, dyp, dxp)
			continue
		}
		clear(dxp)
		for y := range oh {
			for xo := range ow {
				bi := windowMax(p, xp, y, xo)
				dxp[bi] += dyp[y*ow+xo]
			}
		}
	}
}

// maxPool2x2GradPlane is MaxPool2DGradX on one plane for 2×2 windows with
// stride 2 and no padding (see maxPool2x2Plane). The windows do not
// overlap, so each dy element lands on its own dx element (added to 0, as
// MaxPool2DGrad does: a −0 becomes +0).
func maxPool2x2GradPlane[T nnFloat](w, oh, ow int, xp, dyp, dxp []T) {
	// An odd last row or column belongs to no window.
	for y := range oh {
		clear(dxp[2*y*w+2*ow : 2*y*w+w])
		clear(dxp[(2*y+1)*w+2*ow : (2*y+1)*w+w])
	}
	clear(dxp[2*oh*w:])
	if xf, ok := any(xp).([]float32); ok && maxPool2x2GradF32Vec(w, oh, ow, xf, any(dyp).([]float32), any(dxp).([]float32)) {
		return
	}
	for y := range oh {
		clear(dxp[2*y*w : 2*y*w+2*ow])
		clear(dxp[(2*y+1)*w : (2*y+1)*w+2*ow])
	}
	for y := range oh {
		r0 := xp[2*y*w : 2*y*w+2*ow]
		r1 := xp[(2*y+1)*w : (2*y+1)*w+2*ow]
		d0 := dxp[2*y*w : 2*y*w+2*ow]
		d1 := dxp[(2*y+1)*w : (2*y+1)*w+2*ow]
		g := dyp[y*ow : y*ow+ow]
		for xo, v := range g {
			a, b, c, d := r0[2*xo], r0[2*xo+1], r1[2*xo], r1[2*xo+1]
			best, k := a, 0
			if a == a { // a NaN ends the scan
				if b != b || b > best {
					best, k = b, 1
				}
				if best == best {
					if c != c || c > best {
						best, k = c, 2
					}
					if best == best && (d != d || d > best) {
						k = 3
					}
				}
			}
			switch k {
			case 0:
				d0[2*xo] += v
			case 1:
				d0[2*xo+1] += v
			case 2:
				d1[2*xo] += v
			default:
				d1[2*xo+1] += v
			}
		}
	}
}

// poolPlaneCost is the fixed cost of a plane in the pool kernels' split,
// in the units of their per-element costs: on small planes it is most of
// the work. Fitted on lenet's pools (12 samples: 72 planes of 28×28, 192
// of 10×10), where MaxPool2DGradX took 20 µs on either shape and
// MaxPool2DValues 4.6 and 5.7 µs, about 600 units a plane in both.
const poolPlaneCost = 512
