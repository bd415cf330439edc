//go:build !purego

package kernels

// nchwcPadPixels is the largest output plane (OH·OW) whose convolution
// runs on a zero-padded copy of its input. On such planes almost every
// pixel sits at a border, with its own clipped kernel window, so tiles of
// one pixel each read the layer's weights again; on the padded copy
// every window is whole and a tile of whole rows uses each weight vector
// it loads for all its pixels. The zeros cost multiply-adds, which small
// planes have to spare: their time goes to reading weights. (At 8×8,
// resnet18ish's l2, the copy measured no faster, so 4×4 is the largest.)
const nchwcPadPixels = 16

// nchwcPadLen is the elements of workspace the padded copy of p's input
// takes: none where p has no padding, a large plane, or a batch (whose
// small planes run in tiles down the samples, which share the weights
// already and would only add the zeros' multiply-adds).
func nchwcPadLen(p Conv2DParams, b int) int {
	if !nchwcVecOK(b) || p.N != 1 || p.PH == 0 && p.PW == 0 || p.OutH()*p.OutW() > nchwcPadPixels {
		return 0
	}
	return p.C * (p.H + 2*p.PH) * (p.W + 2*p.PW)
}

// padNCHWc copies x, p's input (blocked by b when blockedIn), into ws with
// p's padding as zeros around each plane, and returns the copy and p on
// it: the same convolution with no padding. The sums then take each
// padded tap as 0·w where the reference skips it: the same bits, except
// that a sum of -0 (a -0 bias and no nonzero product before the tap)
// becomes +0 where w ≥ 0, and an infinite or NaN weight gives NaN.
func padNCHWc(p Conv2DParams, b int, blockedIn bool, x, ws []float32) (Conv2DParams, []float32) {
	lanes := 1
	if blockedIn {
		lanes = b
	}
	q := p
	q.H, q.W, q.PH, q.PW = p.H+2*p.PH, p.W+2*p.PW, 0, 0
	clear(ws)
	row := p.W * lanes
	for c := 0; c < p.C/lanes; c++ {
		for y := 0; y < p.H; y++ {
			from := (c*p.H + y) * row
			to := ((c*q.H+y+p.PH)*q.W + p.PW) * lanes
			copy(ws[to:to+row], x[from:from+row])
		}
	}
	return q, ws
}
