package kernels

import (
	"fmt"
	"sync"
	"unsafe"
)

// Winograd's F(2×2, 3×3) (winograd.go) for the NCHW float32 convolution
// (Conv2DParams.Winograd). Per chunk of 2×2 output tiles — a band of tile
// rows of one sample — the kernel
//
//  1. transforms each input channel's 4×4 patch of each tile, V = Bᵀ d B,
//     writing V[pos] (C × tiles) for the 16 positions straight into the
//     GEMM's packed B panels (nr tiles wide, as PackGemmB lays them out);
//  2. multiplies M[pos] (O × tiles) = U[pos] (O × C) · V[pos] with the
//     GEMM's micro-kernels (gemmTile), U = G g Gᵀ packed as A panels once
//     (PackConv2D, form ConvPackWinograd) or per call in the workspace;
//  3. transforms each output channel's tiles back, Y = Aᵀ M A, applies the
//     epilogue and, with Pool2, takes the max of each tile (the 2×2 pool
//     windows are the tiles: both start at even output rows and
//     columns), writing out directly: in the transform's registers where
//     it can (winoPoolRegs), else through four planes of the tiles' values.
//
// V and M of one chunk take 16·(C+O) elements per tile; chunks are sized
// to keep them within half of a 1 MB L2. Goroutines take whole chunks,
// each with its own V and M, and every tile is computed by the same
// operations in the same order whatever chunk holds it (the same A panel,
// the same depth slices, a column of a B panel of its own), so the
// results are the same bits for every thread count.

// ConvPackWinograd is the form of packed weights the Winograd path reads
// (Conv2DPackForm): U = G g Gᵀ per position as the GEMM's A panels.
const ConvPackWinograd = 4

// winoPortable makes the path run its portable transforms where the
// vector ones would run, for the tests that compare them.
var winoPortable = false

// winoChunkElems bounds V and M of one chunk, in elements (512 KB).
var winoChunkElems = 128 * 1024

// winogradNCHW reports whether Conv2D on float32 computes p by Winograd:
// it was asked to, and p is a 3×3 convolution with unit strides and
// dilations and one group.
func (p Conv2DParams) winogradNCHW() bool {
	return p.Winograd && p.winogradShape()
}

// winoGeom is the geometry of one Winograd convolution.
type winoGeom struct {
	th, tw  int  // tile rows and columns computed (whole tiles only with Pool2)
	rbt     int  // tile rows per chunk
	bands   int  // chunks per sample
	tp      int  // tiles per chunk rounded up to whole B panels
	op      int  // O rounded up to whole A panels
	kc      int  // depth per slice of the GEMM
	mr, nr  int  // the GEMM's tile
	vec     bool // the AVX-512 transforms run (winoVec)
	regs    bool // with Pool2, the epilogue and pool run in the output transform's registers (winoPoolRegs)
	vs, ms  int  // elements from one position to the next in V and M
	hp, wp  int  // the padded input rows of one channel the vector input transform reads
	parts   int  // goroutines
	uLen    int  // the transformed weights: 16·op·C
	gpr     int  // the vector input transform's groups of 16 tiles per tile row
	descLen int  // its groups' descriptors (winoDescs), in elements
	vLen    int  // per goroutine: V, 16·vs
	mLen    int  // per goroutine: M, 16·ms
	sLen    int  // per goroutine: one channel's four output planes, 4·tp
	pLen    int  // per goroutine: the padded rows, hp·wp, with the vector transforms
	tmpLen  int  // per goroutine: the GEMM's edge tile
}

// winoGeometry is p's winoGeom for threads goroutines.
func (p Conv2DParams) winoGeometry(threads int) winoGeom {
	kern := sgemmActive.Load()
	var g winoGeom
	g.mr, g.nr = kern.mr, kern.nr
	g.vec = winoVec(g.nr) && !winoPortable
	g.kc = balancedBlock(max(p.C, 1), kern.kc, 1)
	oh, ow := p.OutH(), p.OutW()
	if p.Pool2 {
		g.th, g.tw = oh/2, ow/2
	} else {
		g.th, g.tw = ceilDiv(oh, 2), ceilDiv(ow, 2)
	}
	g.op = ceilDiv(p.O, g.mr) * g.mr
	perTile := 16 * (p.C + p.O)
	g.rbt = max(1, min(g.th, winoChunkElems/(perTile*max(g.tw, 1))))
	threads = max(threads, 1)
	if p.N < threads && g.th > 0 {
		// Fewer samples than goroutines: cut each sample into at least
		// ceil(threads/N) bands.
		g.rbt = min(g.rbt, ceilDiv(g.th, ceilDiv(threads, p.N)))
	}
	g.bands = ceilDiv(max(g.th, 1), g.rbt)
	g.tp = ceilDiv(g.rbt*g.tw, g.nr) * g.nr
	g.parts = max(1, min(threads, p.N*g.bands))
	g.uLen = 16 * g.op * p.C
	// A cache line between positions: strides of a multiple of 4 KB put
	// a tile's 16 values in one set of L1.
	g.vs, g.ms = p.C*g.tp+16, p.O*g.tp+16
	g.vLen, g.mLen = 16*g.vs, 16*g.ms
	g.regs = p.Pool2 && g.vec && winoPoolRegs(&p.Epilogue)
	if !g.regs {
		g.sLen = 4 * g.tp
	}
	if g.vec {
		g.gpr = ceilDiv(g.tw, 16)
		g.hp, g.wp = 2*g.rbt+2, 32*g.gpr+2
		g.pLen, g.descLen = g.hp*g.wp, 14*g.rbt*g.gpr
	}
	g.tmpLen = g.mr * g.nr
	return g
}

// perPart is the workspace of one goroutine.
func (g *winoGeom) perPart() int { return g.vLen + g.mLen + g.sLen + g.pLen + g.tmpLen }

// winoWorkspace is Conv2DWorkspaceFor on the Winograd path: the
// transformed weights (used when no packed copy is given) and the vector
// input transform's descriptors, then per goroutine V, M, the output planes, the padded rows
// and the GEMM's edge tile.
func (p Conv2DParams) winoWorkspace(threads int) int {
	g := p.winoGeometry(threads)
	return g.uLen + g.descLen + g.parts*g.perPart()
}

// winoPackedLen is the length of p's weights packed for the Winograd path.
func (p Conv2DParams) winoPackedLen() int {
	kern := sgemmActive.Load()
	return packedHeader[float32]() + 16*ceilDiv(p.O, kern.mr)*kern.mr*p.C
}

// winoHeader is the header a packed copy for p carries.
func (p Conv2DParams) winoHeader() [6]uint32 {
	return [6]uint32{convPackedMagic, uint32(sgemmActive.Load().id), ConvPackWinograd, uint32(p.C), uint32(p.O), 16}
}

// packConv2DWinograd writes U = G g Gᵀ of w, with its header, into dst
// (winoPackedLen(p) elements).
func packConv2DWinograd(p Conv2DParams, w, dst []float32) {
	n, nw := p.winoPackedLen(), p.O*p.C*9
	if len(dst) < n || len(w) < nw {
		panic(fmt.Sprintf("kernels: PackConv2D: dst %d (need %d), w %d (need %d)", len(dst), n, len(w), nw))
	}
	h := packedHeader[float32]()
	clear(dst[:h])
	for i, v := range p.winoHeader() {
		dst[i] = fromBits[float32](v)
	}
	g := p.winoGeometry(1)
	winoTransformWeights(p, &g, w, dst[h:n])
}

// winoPacked returns the transformed weights in p.Packed when it holds
// them for this call (kernel, form and dimensions), else nil.
func winoPacked(p Conv2DParams) []float32 {
	pw, n := p.Packed, p.winoPackedLen()
	if len(pw) < n {
		return nil
	}
	for i, v := range p.winoHeader() {
		if toBits(pw[i]) != v {
			return nil
		}
	}
	return pw[packedHeader[float32]():n]
}

// winoTransformWeights writes U[pos] = (G g Gᵀ)[pos] of every filter into
// u as A panels: per position (op·C elements), per depth slice of kc (at
// pc·op), the op/mr panels of mr rows, each kb deep: element (o, c) at
// pos·op·C + pc·op + (o/mr)·mr·kb + (c−pc)·mr + o%mr, zero past O.
func winoTransformWeights(p Conv2DParams, g *winoGeom, w, u []float32) {
	u = u[:g.uLen]
	if g.op > p.O {
		clear(u)
	}
	var f [9]float32
	var t [16]float32
	for o := range p.O {
		for c := range p.C {
			copy(f[:], w[(o*p.C+c)*9:])
			winogradFilter(&f, &t)
			pc := c / g.kc * g.kc
			kb := min(g.kc, p.C-pc)
			off := pc*g.op + o/g.mr*g.mr*kb + (c-pc)*g.mr + o%g.mr
			for k, v := range t {
				u[k*g.op*p.C+off] = v
			}
		}
	}
}

// winoJob is one Winograd convolution's work, split over goroutines by
// chunk (a band of one sample).
type winoJob struct {
	p         Conv2DParams
	g         winoGeom
	x, out, u []float32
	desc      []int64   // the vector input transform's groups (winoDescs)
	ws        []float32 // the goroutines' parts
	offs      [4]int64  // the pool's taps: the four output planes
}

var winoJobs = sync.Pool{New: func() any { return new(winoJob) }}

// conv2DWinograd is Conv2D (with or without Pool2) on the Winograd path.
func conv2DWinograd(p Conv2DParams, x, w, out, ws []float32, threads int) {
	j := winoJobs.Get().(*winoJob)
	j.p, j.g = p, p.winoGeometry(threads)
	g := &j.g
	j.x, j.out = x, out
	j.u = winoPacked(p)
	if j.u == nil {
		j.u = ws[:g.uLen]
		winoTransformWeights(p, g, w, j.u)
	}
	ws = ws[g.uLen:]
	if g.vec {
		j.desc = unsafe.Slice((*int64)(unsafe.Pointer(unsafe.SliceData(ws))), g.descLen/2)
		winoDescs(g, j.desc)
		ws = ws[g.descLen:]
	}
	for i := range j.offs {
		j.offs[i] = int64(i * g.tp)
	}
	j.ws = ws[:g.parts*g.perPart()]
	nnForWorkersRanger(g.parts, p.N*g.bands, j)
	*j = winoJob{}
	winoJobs.Put(j)
}

func (j *winoJob) runWorker(worker, lo, hi int) {
	g := &j.g
	buf := j.ws[worker*g.perPart() : (worker+1)*g.perPart()]
	v, buf := buf[:g.vLen], buf[g.vLen:]
	m, buf := buf[:g.mLen], buf[g.mLen:]
	s, buf := buf[:g.sLen], buf[g.sLen:]
	pad, tmp := buf[:g.pLen], buf[g.pLen:]
	for item := lo; item < hi; item++ {
		n, b := item/g.bands, item%g.bands
		ty0 := b * g.rbt
		ty1 := min(g.th, ty0+g.rbt)
		j.chunk(n, ty0, ty1, v, m, s, pad, tmp)
	}
}

// chunk computes the tile rows [ty0, ty1) of sample n.
func (j *winoJob) chunk(n, ty0, ty1 int, v, m, s, pad, tmp []float32) {
	p, g := &j.p, &j.g
	tiles := (ty1 - ty0) * g.tw
	x := j.x[n*p.C*p.H*p.W : (n+1)*p.C*p.H*p.W]
	if g.vec {
		winoInputVec(p, g, x, v, pad, j.desc, ty0, ty1)
	} else {
		winoInputChunk(p, g, x, v, ty0, ty1, tiles)
	}
	winoProducts(p, g, j.u, v, m, tmp)
	if g.regs {
		winoPoolVec(p, g, m, j.out, n, ty0, tiles)
		return
	}
	for o := range p.O {
		winoOutputPlanes(g, m[o*g.tp:], s, tiles)
		if p.Pool2 {
			winoPool(p, g, s, j.out, j.offs[:], n, o, ty0, tiles)
		} else {
			winoScatter(p, g, s, j.out, n, o, ty0, ty1)
		}
	}
}

// winoDescs writes the descriptors of the vector input transform's
// groups for a chunk of rbt tile rows (a shorter chunk reads the first
// ones), 7 per group (winoInputF32AVX512): for tile row ty and the 16
// tiles from tx0, the patches' first row in the padded rows, then the
// B panel, byte offset and lane mask of the tiles in tx0's panel, and of
// those past it in the next panel, if any.
func winoDescs(g *winoGeom, desc []int64) {
	for ty := range g.rbt {
		for j := range g.gpr {
			tx0 := 16 * j
			n := min(16, g.tw-tx0)
			ti := ty*g.tw + tx0
			panel, within := ti/g.nr, ti%g.nr
			a := min(n, g.nr-within)
			d := desc[7*(ty*g.gpr+j):][:7]
			d[0] = int64(4 * (2*ty*g.wp + 2*tx0))
			d[1], d[2], d[3] = int64(panel), int64(4*within), int64(1)<<a-1
			d[4], d[5], d[6] = int64(panel+1), int64(-4*a), 0
			if a < n {
				d[6] = (int64(1)<<n - 1) &^ d[3]
			}
		}
	}
}

// winoInputVec is winoInputChunk through the AVX-512 transform: each
// channel's input rows under the chunk are copied, zero-padded, into pad
// (hp rows of wp), whose patches the transform reads 16 tiles of a tile
// row at a time (desc, winoDescs).
func winoInputVec(p *Conv2DParams, g *winoGeom, x, v, pad []float32, desc []int64, ty0, ty1 int) {
	hw := p.H * p.W
	groups := (ty1 - ty0) * g.gpr
	lo, hi := max(0, p.PW), min(g.wp, p.W+p.PW) // pad columns that hold input
	// The padding is the same for every channel: cleared once, and each
	// channel copies only its rows' input columns over the last one's.
	clear(pad)
	r0, r1 := max(0, p.PH-2*ty0), min(g.hp, p.H+p.PH-2*ty0) // pad rows that hold input
	for c := range p.C {
		plane := x[c*hw : (c+1)*hw]
		for r := r0; r < r1 && lo < hi; r++ {
			iy := 2*ty0 - p.PH + r
			copy(pad[r*g.wp+lo:r*g.wp+hi], plane[iy*p.W+lo-p.PW:])
		}
		pc := c / g.kc * g.kc
		kb := min(g.kc, p.C-pc)
		cb := pc*g.tp + (c-pc)*g.nr
		// The stores stay within V's position rows: the chunk's tiles, and
		// masked-off lanes of a last panel within tp.
		_ = v[15*g.vs+cb+(g.tp/g.nr-1)*kb*g.nr+g.nr-1]
		winoInputF32AVX512(&v[cb], &pad[0], &desc[0], groups, g.wp, 4*g.vs, 4*kb*g.nr)
	}
}

// winoInputChunk writes V of the tiles of rows [ty0, ty1) of one sample x
// (C×H×W) into v as B panels: per position (C·tp elements), per depth
// slice (at pc·tp), the tp/nr panels of nr tiles, each kb deep. The
// columns past the chunk's tiles are zero.
func winoInputChunk(p *Conv2DParams, g *winoGeom, x, v []float32, ty0, ty1, tiles int) {
	vs := g.vs
	hw := p.H * p.W
	var d, t [16]float32
	for c := range p.C {
		plane := x[c*hw : (c+1)*hw]
		pc := c / g.kc * g.kc
		kb := min(g.kc, p.C-pc)
		cb := pc*g.tp + (c-pc)*g.nr
		for ty := ty0; ty < ty1; ty++ {
			iy := 2*ty - p.PH
			rowIn := iy >= 0 && iy+4 <= p.H
			for tx := range g.tw {
				ix := 2*tx - p.PW
				if rowIn && ix >= 0 && ix+4 <= p.W {
					r0 := plane[iy*p.W+ix : iy*p.W+ix+4]
					r1 := plane[(iy+1)*p.W+ix : (iy+1)*p.W+ix+4]
					r2 := plane[(iy+2)*p.W+ix : (iy+2)*p.W+ix+4]
					r3 := plane[(iy+3)*p.W+ix : (iy+3)*p.W+ix+4]
					copy(d[0:4], r0)
					copy(d[4:8], r1)
					copy(d[8:12], r2)
					copy(d[12:16], r3)
				} else {
					winoGather(plane, &d, iy, ix, p.H, p.W)
				}
				winogradInput(&d, &t)
				ti := (ty-ty0)*g.tw + tx
				off := cb + ti/g.nr*kb*g.nr + ti%g.nr
				for k, e := range t {
					v[k*vs+off] = e
				}
			}
		}
		if tiles < g.tp {
			for k := range 16 {
				for ti := tiles; ti < g.tp; ti++ {
					v[k*vs+cb+ti/g.nr*kb*g.nr+ti%g.nr] = 0
				}
			}
		}
	}
}

// winoGather copies the 4×4 patch at (iy, ix) of an h×w plane into d,
// zero outside the plane.
func winoGather(plane []float32, d *[16]float32, iy, ix, h, w int) {
	for r := range 4 {
		for q := range 4 {
			y, x := iy+r, ix+q
			d[4*r+q] = 0
			if y >= 0 && y < h && x >= 0 && x < w {
				d[4*r+q] = plane[y*w+x]
			}
		}
	}
}

// winoProducts computes M[pos] = U[pos] · V[pos] for the 16 positions
// with the GEMM's micro-kernels: M[pos] is O × tp with rows tp apart.
func winoProducts(p *Conv2DParams, g *winoGeom, u, v, m, tmp []float32) {
	kern := sgemmActive.Load()
	us, vs, ms := g.op*p.C, g.vs, g.ms
	if p.C == 0 {
		clear(m) // no channels: every sum is 0
		return
	}
	for pos := range 16 {
		up, vp, mp := u[pos*us:(pos+1)*us], v[pos*vs:pos*vs+p.C*g.tp], m[pos*ms:pos*ms+p.O*g.tp]
		for pc := 0; pc < p.C; pc += g.kc {
			kb := min(g.kc, p.C-pc)
			var beta float32
			if pc > 0 {
				beta = 1 // later slices accumulate onto the first
			}
			a, b := up[pc*g.op:], vp[pc*g.tp:]
			for jr := 0; jr < g.tp; jr += g.nr {
				for ir := 0; ir < p.O; ir += g.mr {
					gemmTile(kern, a, b, tmp, p.O, g.tp, kb, ir, jr, 1, beta, mp, g.tp)
				}
			}
		}
	}
}

// winoTile reads the 16 values of one tile from M (positions ms apart,
// the first at off) and returns Y = Aᵀ m A, as winogradOutput computes it.
func winoTile(m []float32, ms, off int) (y00, y01, y10, y11 float32) {
	var t [8]float32
	for j := range 4 {
		m0, m1, m2, m3 := m[j*ms+off], m[(4+j)*ms+off], m[(8+j)*ms+off], m[(12+j)*ms+off]
		t[j] = m0 + m1 + m2
		t[4+j] = m1 - m2 - m3
	}
	return t[0] + t[1] + t[2], t[1] - t[2] - t[3], t[4] + t[5] + t[6], t[5] - t[6] - t[7]
}

// winoOutputPlanes transforms the chunk's tiles of one output channel (m:
// its row of M[0]) back into the four planes of s, tp apart: s[i·tp + ti]
// is value i (y00, y01, y10, y11) of tile ti.
func winoOutputPlanes(g *winoGeom, m, s []float32, tiles int) {
	if g.vec {
		groups := ceilDiv(tiles, 16)
		_, _ = m[15*g.ms+16*groups-1], s[3*g.tp+16*groups-1]
		winoOutputF32AVX512(&s[0], &m[0], groups, 4*g.ms, 4*g.tp)
		return
	}
	for ti := range tiles {
		s[ti], s[g.tp+ti], s[2*g.tp+ti], s[3*g.tp+ti] = winoTile(m, g.ms, ti)
	}
}

// winoPoolRegs reports whether the vector output transform applies the
// epilogue ep and the pool in its registers: no residual, and the bias
// and ReLU as epiPlanes's one-pass AVX-512 loop computes them (a bias and
// ReLU or no activation), or nothing at all.
func winoPoolRegs(ep *Epilogue) bool {
	if ep.Residual32 != nil {
		return false
	}
	if ep.Bias32 == nil {
		return ep.Act == ActNone
	}
	return hasEpiPlanesVec && (ep.Act == ActNone || ep.Act == ActRelu)
}

// winoPoolVec is the output stage with Pool2 where the epilogue and the
// pool run in the output transform's registers (winoPoolRegs): for each
// output channel, the chunk's pooled values, one run of out.
func winoPoolVec(p *Conv2DParams, g *winoGeom, m, out []float32, n, ty0, tiles int) {
	ph, pw := p.OutH()/2, p.OutW()/2
	groups := ceilDiv(tiles, 16)
	last := tiles - 16*(groups-1)
	relu := 0
	if p.Epilogue.Act == ActRelu {
		relu = 1
	}
	for o := range p.O {
		var b *float32
		if p.Epilogue.Bias32 != nil {
			b = &p.Epilogue.Bias32[o]
		}
		dst := out[(n*p.O+o)*ph*pw+ty0*pw:][:tiles]
		mo := m[o*g.tp:]
		_ = mo[15*g.ms+16*groups-1]
		winoOutputPoolF32AVX512(&dst[0], &mo[0], b, groups, last, 4*g.ms, relu)
	}
}

// winoScatter writes channel o's tiles of rows [ty0, ty1) of sample n
// from the planes s into out (the last row or column of a partial tile
// dropped) and applies the epilogue to the rows they cover.
func winoScatter(p *Conv2DParams, g *winoGeom, s, out []float32, n, o, ty0, ty1 int) {
	oh, ow := p.OutH(), p.OutW()
	plane := out[(n*p.O+o)*oh*ow : (n*p.O+o+1)*oh*ow]
	s0, s1, s2, s3 := s[:g.tp], s[g.tp:2*g.tp], s[2*g.tp:3*g.tp], s[3*g.tp:]
	for ty := ty0; ty < ty1; ty++ {
		r := plane[2*ty*ow:]
		full := 2*ty+1 < oh
		t0 := (ty - ty0) * g.tw
		for tx := range g.tw {
			ti, x := t0+tx, 2*tx
			r[x] = s0[ti]
			if x+1 < ow {
				r[x+1] = s1[ti]
			}
			if full {
				r[ow+x] = s2[ti]
				if x+1 < ow {
					r[ow+x+1] = s3[ti]
				}
			}
		}
	}
	y0, y1 := 2*ty0, min(oh, 2*ty1)
	winoEpi(p, plane[y0*ow:y1*ow], o, (n*p.O+o)*oh*ow+y0*ow)
}

// winoPool applies the epilogue to channel o's planes s and writes the
// max of each tile, its four values folded by maxPair in row-major order
// as MaxPool2DValues folds its window (maxTaps over the planes), to the
// pooled rows from ty0 of sample n: the pool's columns are the tiles', so
// the chunk's pooled values are one run of out.
func winoPool(p *Conv2DParams, g *winoGeom, s, out []float32, offs []int64, n, o, ty0, tiles int) {
	ph, pw := p.OutH()/2, p.OutW()/2
	block := s[:3*g.tp+tiles] // the planes' gaps get the epilogue too, unread
	if p.Epilogue.Residual32 == nil {
		winoEpi(p, block, o, 0)
	} else {
		winoEpiResidualTiles(p, g, s, n, o, ty0, tiles)
	}
	dst := out[(n*p.O+o)*ph*pw+ty0*pw:][:tiles]
	maxTaps(dst, block, offs, tiles, 1, 0, 0, 1)
}

// winoEpiResidualTiles is the epilogue on the planes s with a residual
// (shaped as the full-resolution output): the bias, then each value's
// residual element, then the activation.
func winoEpiResidualTiles(p *Conv2DParams, g *winoGeom, s []float32, n, o, ty0, tiles int) {
	ep := &p.Epilogue
	oh, ow := p.OutH(), p.OutW()
	res := ep.Residual32[(n*p.O+o)*oh*ow:]
	for i := range 4 {
		pl := s[i*g.tp : i*g.tp+tiles]
		if ep.Bias32 != nil {
			epiAddScalar(pl, ep.Bias32[o])
		}
		r, q := i/2, i%2
		for ti := range pl {
			ty, tx := ty0+ti/g.tw, ti%g.tw
			pl[ti] += res[(2*ty+r)*ow+2*tx+q]
		}
		epiAct(ep, pl)
	}
}

// winoEpi applies p's epilogue to seg, a run of output channel o's
// elements whose full-resolution index starts at at (for the residual).
func winoEpi(p *Conv2DParams, seg []float32, o, at int) {
	if !p.Epilogue.on() || len(seg) == 0 {
		return
	}
	ep := p.Epilogue
	if ep.Bias32 != nil {
		ep.Bias32 = ep.Bias32[o : o+1]
	}
	if ep.Residual32 != nil {
		ep.Residual32 = ep.Residual32[at : at+len(seg)]
	}
	epiPlanes(&ep, seg, 1, 0, 1, len(seg))
}

// Conv2DWinogradOK reports whether Conv2D computes p (float32) faster with
// Winograd set: a 3×3 convolution with unit strides and dilations and one
// group, on the AVX-512 transforms, with at least 32 input and 16 output
// channels and an output at least 16 wide. With fewer input channels the
// direct kernel's 9 products a step cost less than the transforms (batch
// 1, one thread, µs direct → Winograd: the small CNN's 3→32 on 32×32 13 →
// 66, the detector's 24→24 on 80×80 368 → 395); on narrower maps a row of
// tiles leaves most of the input transform's 16 lanes idle (384→68 on
// 10×10, five tiles a row: 288 → 338, where 192→68 on 20×20 goes 482 →
// 352 and 32→64 on 16×16 46 → 30; BenchmarkConvWinogradNCHW).
func Conv2DWinogradOK(p Conv2DParams) bool {
	p.Winograd = true
	return p.winogradNCHW() && winoVec(sgemmActive.Load().nr) && p.C >= 32 && p.O >= 16 && p.OutH() >= 2 && p.OutW() >= 16
}
