package kernels

// MaxPool2D's separable path for windows of 3×3 and up (a ResNet's 3×3
// stride-2 pool where its indices are kept, SPP's 5×5, 9×9 and 13×13,
// which the detector also trains through, so the indices are needed):
// each input row's window maxima and their positions first, then those of
// a window's rows folded in order, about KH+KW compares per output
// instead of KH·KW. The fold carries the position with the value and
// takes a candidate by windowMax's rule (a later element wins when the
// best so far is not NaN and it is NaN or greater), so the maxima and
// indices are bitwise the row-major scan's: taking rows' maxima first
// keeps row-major order.

// maxPoolSepMin is the window size (KH·KW) from which MaxPool2D takes the
// separable path: from 3×3 it takes less time than the scan (8×64×32×32,
// 3×3 stride 2, one thread: 1.56–1.58 against 2.16–2.43 ms, alternating).
const maxPoolSepMin = 9

// maxPoolSepPlanes is MaxPool2D on the planes [lo, hi) by rows then
// columns.
func maxPoolSepPlanes[T nnFloat](p *Pool2DParams, x, out []T, idx []int64, lo, hi int) {
	oh, ow := p.OutH(), p.OutW()
	hw, ohw := p.H*p.W, oh*ow
	sp := poolScratchPool[T]()
	s := sp.Get().(*poolScratch[T])
	s.grow(p.H*ow, 0, 0)
	if len(s.at) < p.H*ow {
		s.at = make([]int64, max(p.H*ow, 2*len(s.at), poolScratchMin))
	}
	rv, ri := s.rows[:p.H*ow], s.at[:p.H*ow]
	for pl := lo; pl < hi; pl++ {
		xp := x[pl*hw : (pl+1)*hw]
		op, ip := out[pl*ohw:(pl+1)*ohw], idx[pl*ohw:(pl+1)*ohw]
		for h := range p.H {
			row := xp[h*p.W : (h+1)*p.W]
			for xo := range ow {
				w0 := xo*p.SW - p.PW
				w1 := min(w0+p.KW, p.W)
				w0 = max(w0, 0)
				best, bi := row[w0], w0
				if best == best {
					for w := w0 + 1; w < w1; w++ {
						if v := row[w]; v != v || v > best {
							best, bi = v, w
							if v != v {
								break
							}
						}
					}
				}
				rv[h*ow+xo], ri[h*ow+xo] = best, int64(h*p.W+bi)
			}
		}
		for y := range oh {
			h0 := y*p.SH - p.PH
			h1 := min(h0+p.KH, p.H)
			h0 = max(h0, 0)
			o, oi := op[y*ow:(y+1)*ow], ip[y*ow:(y+1)*ow]
			copy(o, rv[h0*ow:(h0+1)*ow])
			copy(oi, ri[h0*ow:(h0+1)*ow])
			for h := h0 + 1; h < h1; h++ {
				vr, ir := rv[h*ow:(h+1)*ow], ri[h*ow:(h+1)*ow]
				for xo, v := range vr[:len(o)] {
					if b := o[xo]; b == b && (v != v || v > b) {
						o[xo], oi[xo] = v, ir[xo]
					}
				}
			}
		}
	}
	sp.Put(s)
}
