package kernels

import "math"

// The ops around a blocked convolution (conv_nchwc.go) on the same
// layout: the reorders at the edges of a blocked part of a program, and
// the pooling and resizing that sit between its convolutions. Each takes
// tensors N×(C/16)×H×W×16 (C a multiple of NCHWcBlock) and gives, element
// for element, what its NCHW counterpart gives.

// ReorderToNCHWc writes x (N×C×H×W, hw = H·W) into y in the blocked
// layout, N×(C/16)×H×W×16. c must be a multiple of NCHWcBlock.
func ReorderToNCHWc(x, y []float32, n, c, hw, threads int) {
	const b = NCHWcBlock
	for i := 0; i < n; i++ {
		for ch := 0; ch < c; ch++ {
			src := x[(i*c+ch)*hw : (i*c+ch+1)*hw]
			dst := y[(i*c+ch-ch%b)*hw+ch%b:]
			for p, v := range src {
				dst[p*b] = v
			}
		}
	}
}

// ReorderFromNCHWc is ReorderToNCHWc's inverse: x in the blocked layout
// into y, N×C×H×W.
func ReorderFromNCHWc(x, y []float32, n, c, hw, threads int) {
	const b = NCHWcBlock
	for i := 0; i < n; i++ {
		for ch := 0; ch < c; ch++ {
			dst := y[(i*c+ch)*hw : (i*c+ch+1)*hw]
			src := x[(i*c+ch-ch%b)*hw+ch%b:]
			for p := range dst {
				dst[p] = src[p*b]
			}
		}
	}
}

// MaxPoolNCHWc is MaxPool2DValues on the blocked layout: p.C channels (a
// multiple of NCHWcBlock), x and out N×(C/16)×H×W×16 and
// N×(C/16)×OH×OW×16. Padding never wins, as in MaxPool2DValues.
func MaxPoolNCHWc(p Pool2DParams, x, out []float32, threads int) {
	const b = NCHWcBlock
	oh, ow := p.OutH(), p.OutW()
	planes := p.N * p.C / b
	for pl := 0; pl < planes; pl++ {
		src := x[pl*p.H*p.W*b : (pl+1)*p.H*p.W*b]
		dst := out[pl*oh*ow*b : (pl+1)*oh*ow*b]
		for y := 0; y < oh; y++ {
			for xo := 0; xo < ow; xo++ {
				for l := 0; l < b; l++ {
					m := float32(math.Inf(-1))
					for kh := 0; kh < p.KH; kh++ {
						iy := y*p.SH - p.PH + kh
						if iy < 0 || iy >= p.H {
							continue
						}
						for kw := 0; kw < p.KW; kw++ {
							ix := xo*p.SW - p.PW + kw
							if ix < 0 || ix >= p.W {
								continue
							}
							m = maxPair(m, src[(iy*p.W+ix)*b+l])
						}
					}
					dst[(y*ow+xo)*b+l] = m
				}
			}
		}
	}
}

// UpsampleNearestNCHWc is resize with mode nearest, asymmetric
// coordinates and floor rounding by whole factors fh, fw on the blocked
// layout: x N×(C/16)×H×W×16 into out N×(C/16)×(H·fh)×(W·fw)×16, each input
// pixel's vector repeated over an fh×fw square.
func UpsampleNearestNCHWc(x, out []float32, n, c, h, w, fh, fw, threads int) {
	const b = NCHWcBlock
	planes := n * c / b
	oh, ow := h*fh, w*fw
	for pl := 0; pl < planes; pl++ {
		src := x[pl*h*w*b : (pl+1)*h*w*b]
		dst := out[pl*oh*ow*b : (pl+1)*oh*ow*b]
		for y := 0; y < oh; y++ {
			for xo := 0; xo < ow; xo++ {
				copy(dst[(y*ow+xo)*b:(y*ow+xo+1)*b], src[((y/fh)*w+xo/fw)*b:])
			}
		}
	}
}
