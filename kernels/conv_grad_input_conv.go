package kernels

// The input gradient of a float32 convolution with unit strides as a
// forward convolution. With SH = SW = 1,
//
//	dx[n][c][h][w] = Σ over (o, i, j) of dy[n][o][h+PH−i·DH][w+PW−j·DW] · w[o][c][i][j]
//
// is the convolution of dy (O channels of OH×OW) with the weights
// transposed per group and flipped, w'[c][o][KH−1−i][KW−1−j] =
// w[o][c][i][j], padded by DH·(KH−1)−PH rows and DW·(KW−1)−PW columns,
// whose output is H×W. Conv2D then runs it on its batched GEMM over the
// whole batch, packing straight from dy, instead of a GEMM per image and
// block of rows whose column matrix col2im adds back into dx. Each
// element of dx is one sum of Conv2D's, so the result does not depend on
// the thread count.

// convGradInputConvOff turns this path off (benchmarks compare paths).
var convGradInputConvOff bool

// gradInputConv returns the forward convolution that computes p's input
// gradient and whether Conv2DGradInput on float32 takes this path: unit
// strides, padding no wider than the dilated kernel on either axis (the
// transposed padding is then not negative), and a kernel of more than one
// tap (a 1×1 convolution's gradient is already one GEMM per image with no
// col2im); convolutions that the direct input-gradient kernel takes stay
// on it.
func (p Conv2DParams) gradInputConv() (Conv2DParams, bool) {
	ph, pw := p.DH*(p.KH-1)-p.PH, p.DW*(p.KW-1)-p.PW
	ok := !convGradInputConvOff && p.SH == 1 && p.SW == 1 && ph >= 0 && pw >= 0 && p.KH*p.KW > 1 &&
		p.C/p.Groups > 0 && p.O/p.Groups > 0 && !p.convDirectBwd()
	t := Conv2DParams{N: p.N, C: p.O, H: p.OutH(), W: p.OutW(), O: p.C, KH: p.KH, KW: p.KW,
		SH: 1, SW: 1, PH: ph, PW: pw, DH: p.DH, DW: p.DW, Groups: p.Groups}
	return t, ok
}

// convGradInputConvWorkspace is the scratch of this path: the transposed
// weights, then the forward convolution's own.
func convGradInputConvWorkspace(p, t Conv2DParams, threads int) int {
	return p.filterSize() + Conv2DWorkspaceFor(t, threads, true)
}

// conv2DGradInputConv is Conv2DGradInput for float32 through Conv2D on
// t = p.gradInputConv(); it writes every element of dx.
func conv2DGradInputConv(p, t Conv2DParams, dy, w, dx, ws []float32, threads int) {
	cg, og := p.C/p.Groups, p.O/p.Groups
	kk := p.KH * p.KW
	fs := p.filterSize()
	wt := ws[:fs]
	for g := range p.Groups {
		for o := range og {
			for c := range cg {
				src := w[((g*og+o)*cg+c)*kk:][:kk]
				dst := wt[((g*cg+c)*og+o)*kk:][:kk]
				for s, v := range src {
					dst[kk-1-s] = v // (i, j) → (KH−1−i, KW−1−j)
				}
			}
		}
	}
	Conv2D(t, dy, wt, dx, ws[fs:], threads)
}
