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
