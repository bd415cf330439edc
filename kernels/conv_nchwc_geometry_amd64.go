//go:build !purego

package kernels

import "fmt"

// nchwcSegment is how many output pixels a pointwise convolution's item
// covers: its plane is one long row (pixel i reads input pixel i), cut
// into segments so that threads split it; a multiple of the tiles' widths
// (4, 6 and 8 pixels) on one thread (nchwcGeometry.spread evens them out
// on more).
const nchwcSegment = 96

// nchwcSpreadItems is how many items a thread has on planes that
// nchwcGeometry.spread leaves alone.
const nchwcSpreadItems = 8

// nchwcBandPixels is about how many output pixels an item of rows
// covers: enough that a chunk of weights in cache serves many pixels.
const nchwcBandPixels = 64

// nchwcChunkBytes bounds the weights of a group of output blocks that
// one pass over a chunk of input blocks reads, so that they stay in cache
// for the pass over the item's rows: in L2 where rows are long (tiles of
// six or eight pixels, which use each weight vector for many
// multiply-adds), in L1 where they are short (nchwcShortRow or fewer
// pixels: tiles of one or two pixels at the borders and in between, for
// which L2 cannot deliver the weights as fast as they are used). Fewer,
// larger passes cost less where L2 suffices.
var nchwcChunkBytes = [2]int{128 << 10, 40 << 10}

// nchwcShortRow is the widest output row that takes L1 chunks.
const nchwcShortRow = 16

// nchwcDownRow is the widest output row whose pixels a batch computes in
// tiles down the samples rather than along the rows.
const nchwcDownRow = 20

// nchwcDownSamples is about how many samples an item of such a batch
// covers.
const nchwcDownSamples = 16

// nchwcGeometry is where ConvNCHWc finds the elements of a pixel, a
// weight and an output: a plane of H×W input pixels, output rows of OW
// pixels in segments, output blocks of b channels in groups of up to
// convNCHWcMaxF (one kernel's tile).
type nchwcGeometry struct {
	p           Conv2DParams // a pointwise convolution's plane flattened into one row
	b           int          // channels per block: 16 (AVX-512) or 8 (AVX2)
	lanes       int          // input channels per block: b, or 1 for an NCHW input
	pixStride   int          // elements from one input pixel to the next
	blockStride int          // elements from one input channel block to the next
	filterLen   int          // elements of one output block's weights
	oh, ow      int          // output rows and columns
	ob          int          // output blocks
	groups      int          // groups of output blocks per sample
	segLen      int          // output pixels per item of a row
	segs        int          // items per row
	band        int          // output rows per item, of all samples' rows in a column
	bands       int          // items per group and segment
	blocks      int          // input blocks (channels of an NCHW input)
	chunk       int          // input blocks per pass of the kernels
	down        bool         // tiles run down the samples; bands hold whole samples
	parts       int          // items per band down the samples, each some of the plane's rows
	partLen     int          // output rows of each such item
	pairs       bool         // tiles take two rows where their kernel rows agree
}

// newNCHWcGeometry lays out p for threads: in tiles down the samples,
// the planes' rows split into as few parts as make groups of output
// blocks × bands of samples × parts a multiple of the threads, so that
// each thread gets as many items (resnet18ish's l1 at batch 8: one group,
// one band, which left the second thread idle; ppyoloe_s's 192-channel
// convolutions: three groups, which left it a third idle on two threads);
// not further, as each part reads its group's weights again.
func newNCHWcGeometry(p Conv2DParams, b int, blockedIn bool, threads int) nchwcGeometry {
	g := nchwcGeometry{p: p, b: b, lanes: 1, pixStride: 1}
	if p.KH == 1 && p.KW == 1 && p.SH == 1 && p.SW == 1 && p.PH == 0 && p.PW == 0 {
		g.p.W, g.p.H = p.H*p.W, 1
	}
	if blockedIn {
		g.lanes, g.pixStride = b, b
	}
	g.blockStride = g.p.H * g.p.W * g.pixStride
	g.filterLen = p.C * p.KH * p.KW * b
	g.oh, g.ow = g.p.OutH(), g.p.OutW()
	g.ob = p.O / b
	g.groups = (g.ob + g.maxF() - 1) / g.maxF()
	g.segLen, g.partLen = g.ow, g.oh
	if g.oh == 1 && g.ow > nchwcSegment {
		g.segLen = nchwcSegment
	}
	g.segs = (g.ow + g.segLen - 1) / max(g.segLen, 1)
	rows := p.N * g.oh
	g.band = min(max(1, (nchwcBandPixels+g.ow-1)/max(g.ow, 1)), max(rows, 1))
	if g.down = p.N > 1 && g.ow <= nchwcDownRow; g.down {
		items := (p.N + nchwcDownSamples - 1) / nchwcDownSamples
		g.band = (p.N + items - 1) / items * g.oh
		if want := threads / max(1, gcd(g.groups*items, threads)); want > 1 {
			g.partLen = (g.oh + want - 1) / want
		}
	}
	g.parts = (g.oh + g.partLen - 1) / max(g.partLen, 1)
	g.pairs = g.ow <= nchwcShortRow
	g.bands = (rows + g.band - 1) / g.band
	if !g.down && threads > 1 {
		g.spread(threads, rows)
	}
	g.blocks = p.C / g.lanes
	// Chunks of about the same size: fewest passes under the bound.
	bound := nchwcChunkBytes[0]
	if g.ow <= nchwcShortRow {
		bound = nchwcChunkBytes[1]
	}
	most := max(1, bound/(4*b*g.lanes*p.KH*p.KW*4))
	passes := (g.blocks + most - 1) / most
	g.chunk = (g.blocks + passes - 1) / passes
	return g
}

// spread evens out, for threads, the items of a plane that has few
// (under nchwcSpreadItems a thread) along its rows: a pointwise row's
// segments of one size, a multiple of 4 pixels, the last no longer (the
// bands' rows are near-equal already, item), where a last short band or
// segment (7+3 rows of a 10×10 plane, 96+4 pixels of a 1×1
// convolution's) left one thread waiting on the other; and more of them
// until groups × bands × segments is a multiple of the threads, where the
// plane has the rows or the pixels (8 a segment) to spare: ppyoloe_s's
// 192-channel layers have three groups of output blocks. On planes of
// more items the threads' shares differ by a small part of one, and
// segments of 96 pixels tile evenly.
func (g *nchwcGeometry) spread(threads, rows int) {
	if g.items() >= nchwcSpreadItems*threads {
		return
	}
	segs := g.segs
	for {
		if segs > 1 {
			g.segLen = ((g.ow+segs-1)/segs + 3) &^ 3
			g.segs = (g.ow + g.segLen - 1) / g.segLen
		}
		if g.items()%threads == 0 {
			break
		}
		if segs > 1 && segs < g.ow/8 {
			segs++
		} else if g.bands < rows {
			g.bands++
		} else {
			break
		}
	}
	g.band = (rows + g.bands - 1) / g.bands
}

// gcd is a and b's greatest common divisor (a when b is 0).
func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// items is how many items the parallel loop runs: groups × bands of rows
// × segments, in that order, so that a thread's run of items shares its
// weights. A band's rows run on from one sample into the next: on small
// planes a band covers several samples, which share each chunk of
// weights while it is in cache.
func (g *nchwcGeometry) items() int { return g.groups * g.bands * g.segs * g.parts }

// itemCost is an item's multiply-adds, for nnForRanger.
func (g *nchwcGeometry) itemCost() int {
	return g.maxF() * g.b * g.band / g.parts * g.segLen * g.p.C * g.p.KH * g.p.KW
}

// item is item i: output blocks [o0, o0+f), rows [r0, r1) of all
// samples' rows (row r is row r%OH of sample r/OH; bands of near-equal
// rows, or whole samples down the samples), pixels [x0, x1) of each; of
// those rows, down the samples, only rows partRows(i) of each sample.
func (g *nchwcGeometry) item(i int) (o0, f, r0, r1, x0, x1 int) {
	i /= g.parts
	s := i % g.segs
	i /= g.segs
	band := i % g.bands
	grp := i / g.bands
	// Groups as even as they come: the first ob%groups get one more.
	each, more := g.ob/g.groups, g.ob%g.groups
	o0 = grp*each + min(grp, more)
	f = each
	if grp < more {
		f++
	}
	rows := g.p.N * g.oh
	if g.down {
		r0, r1 = band*g.band, min((band+1)*g.band, rows)
	} else {
		r0, r1 = splitRange(rows, g.bands, band)
	}
	x0 = s * g.segLen
	return o0, f, r0, r1, x0, min(x0+g.segLen, g.ow)
}

// partRows is the rows [y0, y1) of each sample that item i covers: all
// but where tiles run down the samples.
func (g *nchwcGeometry) partRows(i int) (y0, y1 int) {
	y0 = i % g.parts * g.partLen
	return y0, min(y0+g.partLen, g.oh)
}

// rowTaps is the kernel rows [kh0, kh1) output row y reads inside the
// input.
func (g *nchwcGeometry) rowTaps(y int) (kh0, kh1 int) {
	top := y*g.p.SH - g.p.PH
	return max(0, -top), min(g.p.KH, g.p.H-top)
}

// sameTaps reports whether output rows y0 and y1 read the same kernel
// rows, some.
func (g *nchwcGeometry) sameTaps(y0, y1 int) bool {
	a0, a1 := g.rowTaps(y0)
	b0, b1 := g.rowTaps(y1)
	return a0 == b0 && a1 == b1 && a0 < a1
}

// colTaps is the kernel columns [kw0, kw1) output pixel x reads inside
// the input.
func (g *nchwcGeometry) colTaps(x int) (kw0, kw1 int) {
	left := x*g.p.SW - g.p.PW
	return max(0, -left), min(g.p.KW, g.p.W-left)
}

// interior is the output pixels [xl, xr) that read all their kernel
// columns inside the input (xr ≤ xl when none do).
func (g *nchwcGeometry) interior() (xl, xr int) {
	p := &g.p
	xl = min((p.PW+p.SW-1)/p.SW, g.ow)
	if last := p.W + p.PW - p.KW; last >= 0 {
		xr = min(last/p.SW+1, g.ow)
	}
	return xl, xr
}

// inAt is the element of the input that output pixel x of row y reads
// at kernel tap (kh, kw), channel 0.
func (g *nchwcGeometry) inAt(n, y, x, kh, kw int) int {
	p := &g.p
	iy, ix := y*p.SH-p.PH+kh, x*p.SW-p.PW+kw
	return n*p.C*p.H*p.W + (iy*p.W+ix)*g.pixStride
}

// wAt is the element of the packed weights of output block o at kernel
// tap (kh, kw), input channel 0.
func (g *nchwcGeometry) wAt(o, kh, kw int) int {
	return o*g.filterLen + (kh*g.p.KW+kw)*g.lanes*g.b
}

// outAt is the element of the output of sample n, block o at pixel x of
// row y.
func (g *nchwcGeometry) outAt(n, o, y, x int) int {
	return (((n*g.ob+o)*g.oh+y)*g.ow + x) * g.b
}

// maxF is the most output blocks a tile keeps: a group's.
func (g *nchwcGeometry) maxF() int { return convNCHWcMaxF[g.b/8-1] }

// maxP is the widest tile of f output blocks, in pixels.
func (g *nchwcGeometry) maxP(f int) int { return convNCHWcMaxP[g.b/8-1][f-1] }

// checkLens panics unless the slices hold what the kernels will read and
// write: they index without bounds checks.
func (g *nchwcGeometry) checkLens(ep *Epilogue, x, packed, out []float32) {
	p := &g.p
	nOut := p.N * p.O * g.oh * g.ow
	switch {
	case len(x) < p.N*p.C*p.H*p.W, len(packed) < PackConvNCHWcLen(*p), len(out) < nOut,
		ep.Bias32 != nil && len(ep.Bias32) < p.O, ep.Residual32 != nil && len(ep.Residual32) < nOut:
		panic(fmt.Sprintf("kernels: ConvNCHWc of %d×%d×%d×%d→%d given %d input, %d weight, %d output elements",
			p.N, p.C, p.H, p.W, p.O, len(x), len(packed), len(out)))
	}
}
