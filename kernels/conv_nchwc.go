package kernels

import (
	"fmt"
	"math"
)

// The blocked activation layout (NCHWc) with channel block b holds a
// tensor of N×C×H×W float32 values as N×(C/b)×H×W×b, each pixel's
// channels of one block side by side: one vector register, 16 lanes with
// AVX-512, 8 with AVX2. A convolution on that layout keeps a tile of
// output pixels × blocks of output channels in registers and adds one
// broadcast input value times one vector of weights per multiply-add,
// reading its input in place whatever the stride, with no im2col. Every
// function on the layout takes b; NCHWcBlock says which b this machine's
// vector kernels run, and any b that NCHWcBlockOK accepts gives the same
// values through plain Go loops.

// NCHWcBlockOK reports whether b is a channel block the layout takes: 8
// or 16.
func NCHWcBlockOK(b int) bool { return b == 8 || b == 16 }

// ConvNCHWcCheck reports why p cannot run as ConvNCHWc with block b: the
// blocked convolution takes float32 groups of 1, unit dilations, output
// channels in whole blocks and, for a blocked input (blockedIn), input
// channels in whole blocks too. A plain NCHW input (the first layer of a
// network, 3 channels) may have any depth.
func ConvNCHWcCheck(p Conv2DParams, b int, blockedIn bool) error {
	switch {
	case !NCHWcBlockOK(b):
		return fmt.Errorf("channel block %d: the blocked layout takes 8 or 16", b)
	case p.Groups != 1:
		return fmt.Errorf("groups %d: the blocked convolution takes groups 1", p.Groups)
	case p.DH != 1 || p.DW != 1:
		return fmt.Errorf("dilations [%d,%d]: the blocked convolution takes dilations 1", p.DH, p.DW)
	case p.O%b != 0:
		return fmt.Errorf("%d output channels: the blocked convolution takes a multiple of %d", p.O, b)
	case blockedIn && p.C%b != 0:
		return fmt.Errorf("%d input channels: a blocked input holds a multiple of %d", p.C, b)
	case p.Pool2:
		return fmt.Errorf("the blocked convolution has no fused pool")
	}
	if p.Winograd {
		return winocOK(p, b, blockedIn)
	}
	return nil
}

// PackConvNCHWcLen is the length of the weights PackConvNCHWc writes for
// p: O·C·KH·KW, the weights reordered, nothing added; with p.Winograd,
// a header and the 16 transformed C×O matrices in the GEMM's panels.
func PackConvNCHWcLen(p Conv2DParams) int {
	if p.Winograd {
		return packConvNCHWcWinogradLen(p)
	}
	return p.O * p.C * p.KH * p.KW
}

// PackConvNCHWc reorders w (O×C×KH×KW, OIHW) into dst, the layout
// ConvNCHWc reads with block b: for a blocked input
// [O/b][C/b][KH][KW][b input channels][b output channels], for an NCHW
// input [O/b][C][KH][KW][b output channels]. Each innermost run is the
// vector of weights one broadcast input value multiplies. With
// p.Winograd (which takes a blocked input) it writes the Winograd form:
// a header naming b, C, O and the GEMM kernel, so that a copy made for
// other channels or another kernel is never misread
// (ConvNCHWcWinogradPacked), then for each of the 16 positions of the
// transformed tile the C×O matrix U = G g Gᵀ packed as PackGemmB packs B.
func PackConvNCHWc(p Conv2DParams, b int, blockedIn bool, w, dst []float32) {
	if p.Winograd {
		packConvNCHWcWinograd(p, b, w, dst)
		return
	}
	kk := p.KH * p.KW
	w, dst = w[:p.O*p.C*kk], dst[:p.O*p.C*kk]
	i := 0
	for ob := 0; ob < p.O/b; ob++ {
		if !blockedIn {
			for c := 0; c < p.C; c++ {
				for k := 0; k < kk; k++ {
					for ol := 0; ol < b; ol++ {
						dst[i] = w[((ob*b+ol)*p.C+c)*kk+k]
						i++
					}
				}
			}
			continue
		}
		for cb := 0; cb < p.C/b; cb++ {
			for k := 0; k < kk; k++ {
				for cl := 0; cl < b; cl++ {
					for ol := 0; ol < b; ol++ {
						dst[i] = w[((ob*b+ol)*p.C+cb*b+cl)*kk+k]
						i++
					}
				}
			}
		}
	}
}

// ConvNCHWc is the convolution p of x into out in the blocked layout with
// block b: x is N×(C/b)×H×W×b when blockedIn, else N×C×H×W; out is
// N×(O/b)×OH×OW×b; packed is w as PackConvNCHWc writes it. p.Epilogue
// is applied to every output element once its sum is complete: Bias32 has
// O values, Residual32 is laid out like out. p and b must pass
// ConvNCHWcCheck. It needs ConvNCHWcWorkspace(p, b, blockedIn, threads)
// elements of ws.
//
// With p.Winograd it computes by Winograd's F(2×2, 3×3)
// (winograd_nchwc.go), within float32 rounding of the direct sums: packed
// must then be the Winograd form (ConvNCHWcWinogradPacked reports it).
func ConvNCHWc(p Conv2DParams, b int, blockedIn bool, x, packed, out, ws []float32, threads int) {
	if p.Winograd {
		convNCHWcWinograd(p, b, x, packed, out, ws, threads)
		return
	}
	if convNCHWcVec(p, b, blockedIn, x, packed, out, ws, threads) {
		return
	}
	convNCHWcRef(p, b, blockedIn, x, packed, out)
}

// ConvNCHWcWorkspace is the number of float32 elements of scratch
// ConvNCHWc needs for p and b with the given thread count: a zero-padded
// copy of a single sample's input where its output plane is small (16
// pixels or fewer) and the vector kernels run, shared by the threads;
// none otherwise. Given less, ConvNCHWc runs without the copy, slower.
// With p.Winograd it is the transformed input and products of one chunk
// of tiles, or of one per thread where the threads take whole chunks.
func ConvNCHWcWorkspace(p Conv2DParams, b int, blockedIn bool, threads int) int {
	if p.Winograd {
		return winocWorkspace(p, b, threads)
	}
	return nchwcPadLen(p, b)
}

// convNCHWcRef is ConvNCHWc one output element at a time, in float32,
// each sum started at the bias and run over input channel blocks (single
// channels of an NCHW input), then kernel rows, then columns, then the
// block's channels, as the vector kernels sum (they fuse each multiply
// and add); the reference the tests hold the fast paths to.
func convNCHWcRef(p Conv2DParams, b int, blockedIn bool, x, packed, out []float32) {
	oh, ow := p.OutH(), p.OutW()
	ob := p.O / b
	kk := p.KH * p.KW
	lanes := 1
	if blockedIn {
		lanes = b
	}
	// in is the input element of channel c at (iy, ix) of sample n.
	in := func(n, c, iy, ix int) float32 {
		if blockedIn {
			return x[(((n*(p.C/b)+c/b)*p.H+iy)*p.W+ix)*b+c%b]
		}
		return x[((n*p.C+c)*p.H+iy)*p.W+ix]
	}
	for n := 0; n < p.N; n++ {
		for o := 0; o < ob; o++ {
			plane := out[((n*ob)+o)*oh*ow*b : ((n*ob)+o+1)*oh*ow*b]
			for y := 0; y < oh; y++ {
				for xo := 0; xo < ow; xo++ {
					for ol := 0; ol < b; ol++ {
						var s float32
						if p.Epilogue.Bias32 != nil {
							s = p.Epilogue.Bias32[o*b+ol]
						}
						for cb := 0; cb < p.C/lanes; cb++ {
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
									k := kh*p.KW + kw
									for cl := 0; cl < lanes; cl++ {
										wv := packed[(((o*(p.C/lanes)+cb)*kk+k)*lanes+cl)*b+ol]
										s = fma32(in(n, cb*lanes+cl, iy, ix), wv, s)
									}
								}
							}
						}
						plane[(y*ow+xo)*b+ol] = s
					}
				}
			}
			epiNCHWc(&p.Epilogue, plane, ((n*ob)+o)*oh*ow*b)
		}
	}
}

// fma32 is a·b + c rounded once, as a vector multiply-add computes it:
// the product of two float32 values is exact in float64.
func fma32(a, b, c float32) float32 {
	return float32(math.FMA(float64(a), float64(b), float64(c)))
}

// epiNCHWc applies ep to v, a run of whole pixels of one output block that
// starts at element off of the output, its bias already in the sums: the
// residual's elements at the same place, then the activation, as Epilogue
// orders them.
func epiNCHWc(ep *Epilogue, v []float32, off int) {
	if ep.Residual32 != nil {
		add2D(v, 0, ep.Residual32[off:off+len(v)], 0, 1, len(v))
	}
	epiAct(ep, v)
}
