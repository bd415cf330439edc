//go:build !purego

package kernels

//go:generate sh -c "cd internal/avo && go run ./nchwcgen -out ../../conv_nchwc_amd64.s -stubs ../../conv_nchwc_stub_amd64.go -table ../../conv_nchwc_table_amd64.go -pkg kernels"

// NCHWcVector reports whether this build and machine run ConvNCHWc with
// vector kernels; where it does not, the blocked layout still gives the
// same results through plain Go loops, only slower, and a layout pass
// leaves the program in NCHW.
func NCHWcVector() bool { return hasPerfAVX512 }

// convNCHWcVec runs ConvNCHWc with the AVX-512 tiles of
// conv_nchwc_amd64.s and reports whether it did (not without AVX-512).
func convNCHWcVec(p Conv2DParams, blockedIn bool, x, packed, out []float32, threads int) bool {
	if !hasPerfAVX512 {
		return false
	}
	g := newNCHWcGeometry(p, blockedIn)
	g.checkLens(&p.Epilogue, x, packed, out)
	j := getJob[convNCHWcJob]()
	j.g, j.ep, j.x, j.packed, j.out = g, p.Epilogue, x, packed, out
	nnForRanger(threads, g.items(), g.itemCost(), j)
	putJob(j)
	return true
}

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
	for c0 := 0; c0 < g.blocks; c0 += g.chunk {
		c := chunk{c0, min(c0+g.chunk, g.blocks)}
		for r := r0; r < r1; r++ {
			j.row(r/g.oh, o0, f, r%g.oh, x0, x1, c)
		}
	}
	if j.ep.Residual32 == nil && j.ep.Act == ActNone {
		return
	}
	for r := r0; r < r1; r++ {
		for o := o0; o < o0+f; o++ {
			off := g.outAt(r/g.oh, o, r%g.oh, x0)
			epiNCHWc(&j.ep, j.out[off:off+(x1-x0)*NCHWcBlock], off)
		}
	}
}

// chunk is the input blocks [lo, hi) a pass of the kernels sums over.
type chunk struct{ lo, hi int }

// row computes pixels [x0, x1) of output row y over the input blocks of c:
// left border, interior, right border.
func (j *convNCHWcJob) row(n, o0, f, y, x0, x1 int, c chunk) {
	g := &j.g
	kh0, kh1 := g.rowTaps(y)
	if kh1 <= kh0 {
		if c.lo == 0 {
			j.fill(n, o0, f, y, x0, x1-x0)
		}
		return
	}
	xl, xr := g.interior()
	for x := x0; x < min(x1, xl); x++ {
		j.border(n, o0, f, y, x, kh0, kh1, c)
	}
	lo, hi := max(x0, xl), min(x1, xr)
	pmax := convNCHWcMaxP[f-1]
	for x := lo; x < hi; x += pmax {
		j.tile(n, o0, f, y, x, min(pmax, hi-x), kh0, kh1, 0, g.p.KW, c)
	}
	for x := max(x0, xl, xr); x < x1; x++ {
		j.border(n, o0, f, y, x, kh0, kh1, c)
	}
}

// border computes pixel x, whose kernel columns are clipped by the
// input's edges.
func (j *convNCHWcJob) border(n, o0, f, y, x, kh0, kh1 int, c chunk) {
	kw0, kw1 := j.g.colTaps(x)
	if kw1 <= kw0 {
		if c.lo == 0 {
			j.fill(n, o0, f, y, x, 1)
		}
		return
	}
	j.tile(n, o0, f, y, x, 1, kh0, kh1, kw0, kw1, c)
}

// tile runs the kernel of f output blocks × np pixels from pixel x of row
// y over kernel rows [kh0, kh1), columns [kw0, kw1) and the input blocks
// of c, its sums resumed from the outputs after the first chunk.
func (j *convNCHWcJob) tile(n, o0, f, y, x, np, kh0, kh1, kw0, kw1 int, c chunk) {
	g := &j.g
	var a [nchwcArgs]int
	g.args(&a, kh1-kh0, kw1-kw0)
	a[nchwcArgBlocks] = c.hi - c.lo
	if c.lo > 0 {
		a[nchwcArgResume] = 1
	}
	in := &j.x[g.inAt(n, y, x, kh0, kw0)+c.lo*g.blockStride]
	w := &j.packed[g.wAt(o0, kh0, kw0)+c.lo*g.p.KH*g.p.KW*g.lanes*NCHWcBlock]
	out := &j.out[g.outAt(n, o0, y, x)]
	var bias *float32
	if j.ep.Bias32 != nil {
		bias = &j.ep.Bias32[o0*NCHWcBlock]
	}
	convNCHWcTile(g.lanes == 1, f, np, in, w, out, bias, &a)
}

// fill writes np pixels from x of row y whose kernel window misses the
// input: the bias alone, or zeros.
func (j *convNCHWcJob) fill(n, o0, f, y, x, np int) {
	const b = NCHWcBlock
	for o := o0; o < o0+f; o++ {
		off := j.g.outAt(n, o, y, x)
		v := j.out[off : off+np*b]
		if j.ep.Bias32 == nil {
			clear(v)
			continue
		}
		for i := 0; i < len(v); i += b {
			copy(v[i:i+b], j.ep.Bias32[o*b:(o+1)*b])
		}
	}
}

// args fills the kernel's argument block for a window of rows × cols
// kernel taps.
func (g *nchwcGeometry) args(a *[nchwcArgs]int, rows, cols int) {
	const f32 = 4
	col, row := g.pixStride*f32, g.p.W*g.pixStride*f32
	wCol, wRow := g.lanes*NCHWcBlock*f32, g.p.KW*g.lanes*NCHWcBlock*f32
	a[nchwcArgRows] = rows
	a[nchwcArgCols] = cols
	a[nchwcArgPixStep] = g.p.SW * col
	a[nchwcArgColStep] = col
	a[nchwcArgRowAdj] = row - cols*col
	a[nchwcArgBlockAdj] = g.blockStride*f32 - rows*row
	a[nchwcArgWRowAdj] = wRow - cols*wCol
	a[nchwcArgWBlockAdj] = g.p.KH*wRow - rows*wRow
	a[nchwcArgWFilter] = g.filterLen * f32
	a[nchwcArgOutFilter] = g.oh * g.ow * NCHWcBlock * f32
}
