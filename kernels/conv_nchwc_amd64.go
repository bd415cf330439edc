//go:build !purego

package kernels

//go:generate sh -c "cd internal/avo && go run ./nchwcgen -out ../../conv_nchwc_amd64.s -stubs ../../conv_nchwc_stub_amd64.go -table ../../conv_nchwc_table_amd64.go -pkg kernels"

// NCHWcBlock is the channel block this build and machine run the blocked
// layout's vector kernels with: 16 with AVX-512, 8 with AVX2+FMA (and no
// AVX-512), 0 where there are none. Where it is 0 the blocked layout
// still gives the same results through plain Go loops, only slower, and
// a layout pass leaves the program in NCHW.
func NCHWcBlock() int {
	switch {
	case hasPerfAVX512:
		return zmmBlock
	case hasAVX2FMA:
		return ymmBlock
	}
	return 0
}

// zmmBlock and ymmBlock are the channel blocks of the AVX-512 and the
// AVX2 kernels: one zmm, one ymm register of float32.
const zmmBlock, ymmBlock = 16, 8

// nchwcVecOK reports whether the convolution's vector kernels for blocks
// of b run here: those for 8 wherever AVX2+FMA do, so also beside
// AVX-512's for 16.
func nchwcVecOK(b int) bool {
	return b == zmmBlock && hasPerfAVX512 || b == ymmBlock && hasAVX2FMA
}

// convNCHWcVec runs ConvNCHWc with the tiles of conv_nchwc_amd64.s for
// blocks of b and reports whether it did (not where nchwcVecOK(b) is
// false). Small planes run on a zero-padded copy of the input in ws where
// ws holds it (nchwcPadLen elements), else on x in place.
func convNCHWcVec(p Conv2DParams, b int, blockedIn bool, x, packed, out, ws []float32, threads int) bool {
	if !nchwcVecOK(b) {
		return false
	}
	if n := nchwcPadLen(p, b); n > 0 && len(ws) >= n && len(x) >= p.N*p.C*p.H*p.W {
		p, x = padNCHWc(p, b, blockedIn, x, ws[:n])
	}
	g := newNCHWcGeometry(p, b, blockedIn, threads)
	g.checkLens(&p.Epilogue, x, packed, out)
	j := getJob[convNCHWcJob]()
	j.g, j.ep, j.x, j.packed, j.out = g, p.Epilogue, x, packed, out
	n := g.items()
	if parts := nnParts(threads, n, g.itemCost()); parts > 1 {
		perfSplitRanger(parts, min(n, parts*nchwcItemsPerThread), n, j)
	} else {
		j.run(0, n)
	}
	putJob(j)
	return true
}

// nchwcItemsPerThread is how many ranges of items each thread's share
// is cut into at most: as many as the items on small planes, which are
// few and even (nchwcGeometry.spread), so that the threads finish
// together; nnForRanger's four ranges a thread made ranges of one and of
// two items out of ten.
const nchwcItemsPerThread = 64

// convNCHWcJob is ConvNCHWc's parallel loop over nchwcGeometry's items.
type convNCHWcJob struct {
	g              nchwcGeometry
	ep             Epilogue
	x, packed, out []float32
}

func (j *convNCHWcJob) run(lo, hi int) {
	for i := lo; i < hi; i++ {
		j.item(i)
	}
}

// item computes item i, a band of rows of a group of output blocks: a
// chunk of input blocks at a time over all its rows, so that the chunk's
// weights stay in cache while they are reused, then the epilogue on each
// finished row while it is in cache.
func (j *convNCHWcJob) item(i int) {
	g := &j.g
	o0, f, r0, r1, x0, x1 := g.item(i)
	y0, y1 := g.partRows(i)
	for c0 := 0; c0 < g.blocks; c0 += g.chunk {
		c := chunk{c0, min(c0+g.chunk, g.blocks)}
		if g.down {
			for y := y0; y < y1; y++ {
				for x := 0; x < g.ow; x++ {
					j.column(r0/g.oh, r1/g.oh, o0, f, y, x, c)
				}
			}
			continue
		}
		for r := r0; r < r1; r++ {
			n, y := r/g.oh, r%g.oh
			if g.pairs && r+1 < r1 && y+1 < g.oh && g.sameTaps(y, y+1) {
				j.row(n, o0, f, y, x0, x1, c, true)
				r++
				continue
			}
			j.row(n, o0, f, y, x0, x1, c, false)
		}
	}
	if j.ep.Residual32 == nil && j.ep.Act == ActNone {
		return
	}
	for r := r0; r < r1; r++ {
		if y := r % g.oh; y < y0 || y >= y1 {
			continue
		}
		for o := o0; o < o0+f; o++ {
			off := g.outAt(r/g.oh, o, r%g.oh, x0)
			epiNCHWc(&j.ep, j.out[off:off+(x1-x0)*g.b], off)
		}
	}
}

// chunk is the input blocks [lo, hi) a pass of the kernels sums over.
type chunk struct{ lo, hi int }

// pixels is count output pixels from pixel x of row y of sample n: along
// the row, or down the samples (the same pixel of samples n, n+1, …); with
// two, the same count pixels of row y+1 too.
type pixels struct {
	n, y, x, count int
	down, two      bool
}

// at is the sample and column of pixel k.
func (px pixels) at(k int) (n, x int) {
	if px.down {
		return px.n + k, px.x
	}
	return px.n, px.x + k
}

// row computes pixels [x0, x1) of output row y (and y+1, with two: rows
// that read the same kernel rows) over the input blocks of c: left
// border, interior, right border.
func (j *convNCHWcJob) row(n, o0, f, y, x0, x1 int, c chunk, two bool) {
	g := &j.g
	kh0, kh1 := g.rowTaps(y)
	if kh1 <= kh0 {
		if c.lo == 0 {
			j.fill(o0, f, pixels{n, y, x0, x1 - x0, false, two})
		}
		return
	}
	xl, xr := g.interior()
	for x := x0; x < min(x1, xl); x++ {
		j.border(o0, f, pixels{n, y, x, 1, false, two}, kh0, kh1, c)
	}
	lo, hi := max(x0, xl), min(x1, xr)
	wide := g.maxP(f)
	if two {
		wide /= 2
	}
	tiles := evenTiles(hi-lo, wide)
	for t := range tiles {
		a, b := splitRange(hi-lo, tiles, t)
		j.tile(o0, f, pixels{n, y, lo + a, b - a, false, two}, kh0, kh1, 0, g.p.KW, c)
	}
	for x := max(x0, xl, xr); x < x1; x++ {
		j.border(o0, f, pixels{n, y, x, 1, false, two}, kh0, kh1, c)
	}
}

// column computes pixel x of row y of samples [n0, n1) over the input
// blocks of c, tiles of pixels down the samples: on planes of short rows
// they are wider than tiles along a row.
func (j *convNCHWcJob) column(n0, n1, o0, f, y, x int, c chunk) {
	kh0, kh1 := j.g.rowTaps(y)
	if kh1 <= kh0 {
		if c.lo == 0 {
			j.fill(o0, f, pixels{n0, y, x, n1 - n0, true, false})
		}
		return
	}
	tiles := evenTiles(n1-n0, j.g.maxP(f))
	for t := range tiles {
		a, b := splitRange(n1-n0, tiles, t)
		j.border(o0, f, pixels{n0 + a, y, x, b - a, true, false}, kh0, kh1, c)
	}
}

// evenTiles is how many tiles of at most wide pixels cover n; tile t
// is splitRange(n, tiles, t) of them, of near-equal widths: 18 pixels
// as 6+6+6, not 8+8+2, whose last tile has too few sums to hide the
// multiply-adds' latency.
func evenTiles(n, wide int) int { return max(0, (n+wide-1)/wide) }

// border computes px, whose kernel columns are clipped alike by the
// input's edges.
func (j *convNCHWcJob) border(o0, f int, px pixels, kh0, kh1 int, c chunk) {
	kw0, kw1 := j.g.colTaps(px.x)
	if kw1 <= kw0 {
		if c.lo == 0 {
			j.fill(o0, f, px)
		}
		return
	}
	j.tile(o0, f, px, kh0, kh1, kw0, kw1, c)
}

// tile runs the kernel of f output blocks × px over kernel rows [kh0,
// kh1), columns [kw0, kw1) and the input blocks of c, its sums resumed
// from the outputs after the first chunk.
func (j *convNCHWcJob) tile(o0, f int, px pixels, kh0, kh1, kw0, kw1 int, c chunk) {
	g := &j.g
	var a [nchwcArgs]int
	g.args(&a, kh1-kh0, kw1-kw0, px.down)
	rows := 1
	if px.two {
		rows = 2
		a[nchwcArgInRowStep] = g.p.SH * g.p.W * g.pixStride * 4
		a[nchwcArgOutRowStep] = g.ow * g.b * 4
	}
	a[nchwcArgBlocks] = c.hi - c.lo
	if c.lo > 0 {
		a[nchwcArgResume] = 1
	}
	in := &j.x[g.inAt(px.n, px.y, px.x, kh0, kw0)+c.lo*g.blockStride]
	w := &j.packed[g.wAt(o0, kh0, kw0)+c.lo*g.p.KH*g.p.KW*g.lanes*g.b]
	out := &j.out[g.outAt(px.n, o0, px.y, px.x)]
	var bias *float32
	if j.ep.Bias32 != nil {
		bias = &j.ep.Bias32[o0*g.b]
	}
	convNCHWcTile(g.b, g.lanes == 1, f, px.count*rows, rows, in, w, out, bias, &a)
}

// fill writes px, whose kernel windows miss the input: the bias alone, or
// zeros.
func (j *convNCHWcJob) fill(o0, f int, px pixels) {
	b := j.g.b
	last := px.y
	if px.two {
		last++
	}
	for k := 0; k < px.count; k++ {
		n, x := px.at(k)
		for o := o0; o < o0+f; o++ {
			for y := px.y; y <= last; y++ {
				v := j.out[j.g.outAt(n, o, y, x):][:b]
				if j.ep.Bias32 == nil {
					clear(v)
					continue
				}
				copy(v, j.ep.Bias32[o*b:(o+1)*b])
			}
		}
	}
}

// args fills the kernel's argument block for a window of rows × cols
// kernel taps, for pixels along a row or down the samples.
func (g *nchwcGeometry) args(a *[nchwcArgs]int, rows, cols int, down bool) {
	const f32 = 4
	col, row := g.pixStride*f32, g.p.W*g.pixStride*f32
	wCol, wRow := g.lanes*g.b*f32, g.p.KW*g.lanes*g.b*f32
	a[nchwcArgRows] = rows
	a[nchwcArgCols] = cols
	a[nchwcArgPixStep] = g.p.SW * col
	a[nchwcArgColStep] = col
	a[nchwcArgRowAdj] = row - cols*col
	a[nchwcArgBlockAdj] = g.blockStride*f32 - rows*row
	a[nchwcArgWRowAdj] = wRow - cols*wCol
	a[nchwcArgWBlockAdj] = g.p.KH*wRow - rows*wRow
	a[nchwcArgWFilter] = g.filterLen * f32
	a[nchwcArgOutFilter] = g.oh * g.ow * g.b * f32
	a[nchwcArgOutPixStep] = g.b * f32
	if down {
		a[nchwcArgPixStep] = g.p.C * g.p.H * g.p.W * f32
		a[nchwcArgOutPixStep] = g.ob * a[nchwcArgOutFilter]
	}
}
