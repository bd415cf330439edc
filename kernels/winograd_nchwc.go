package kernels

import (
	"fmt"
	"math"
)

// Winograd's F(2×2, 3×3) (winograd.go) on the blocked layout: ConvNCHWc
// with p.Winograd. A chunk of output tiles (2×2 tiles in order
// along the rows, down the map, across the samples) is computed in three
// steps, each over the chunk in full before the next:
//
//   - the input transform: for each tile, the 4×4 patch of every input
//     block, one vector per pixel, becomes V[pos][tile][c] (16 positions,
//     channels contiguous), vector additions over the block's lanes;
//   - 16 products M[pos] (tiles × O) = V[pos] (tiles × C) · U[pos] (C × O)
//     by the GEMM's packed-B path, U = G g Gᵀ packed once (or per call by
//     the caller) as its B panels;
//   - the output transform of each tile's 16 positions of M, per block of
//     output channels, plus the bias, into the blocked output, then the
//     residual and the activation on the finished rows.
//
// Each thread takes whole chunks, each on its own scratch, with no wait
// between the steps; the chunks' cut (newWinocGeom) gives every output
// the same bits for any thread count.

// winocMagic marks a Winograd packed copy's header ("WNCB").
const winocMagic = 0x574e_4342

// winocHeader is the length of the packed copy's header: one cache line,
// so that the 16 GEMM-packed matrices after it keep their alignment.
const winocHeader = 16

// winocOK reports why p cannot run by Winograd on the blocked layout with
// block b, nil if it can: a blocked input, a 3×3 filter, strides,
// dilations and groups 1.
func winocOK(p Conv2DParams, b int, blockedIn bool) error {
	switch {
	case !blockedIn:
		return fmt.Errorf("winograd: the blocked convolution computes by Winograd from a blocked input only")
	case p.KH != 3 || p.KW != 3:
		return fmt.Errorf("winograd: a %d×%d filter, F(2×2, 3×3) takes 3×3", p.KH, p.KW)
	case p.SH != 1 || p.SW != 1 || p.DH != 1 || p.DW != 1 || p.Groups != 1:
		return fmt.Errorf("winograd: strides [%d,%d], dilations [%d,%d], groups %d: F(2×2, 3×3) takes 1, 1, 1", p.SH, p.SW, p.DH, p.DW, p.Groups)
	case p.C%b != 0 || p.O%b != 0:
		return fmt.Errorf("winograd: %d→%d channels, not whole blocks of %d", p.C, p.O, b)
	case p.C == 0:
		return fmt.Errorf("winograd: no input channels")
	}
	return nil
}

// winocMatLen is the length of one position's U packed for the GEMM.
func winocMatLen(p Conv2DParams) int { return PackedGemmBLen[float32](p.C, p.O) }

// packConvNCHWcWinogradLen is PackConvNCHWcLen for p.Winograd: the
// header and the 16 positions' C×O matrices in the GEMM's panels.
func packConvNCHWcWinogradLen(p Conv2DParams) int { return winocHeader + 16*winocMatLen(p) }

// packConvNCHWcWinograd writes the Winograd form of w (O×C×3×3) into dst:
// a header naming the block, the channels and the GEMM kernel, then for
// each position pos of the 4×4 transformed tile the C×O matrix
// U[pos][c][o] = (G g_oc Gᵀ)[pos] as PackGemmB packs it.
func packConvNCHWcWinograd(p Conv2DParams, b int, w, dst []float32) {
	kern := activeKernel[float32]()
	ml := winocMatLen(p)
	dst = dst[:winocHeader+16*ml]
	clear(dst)
	for i, v := range []uint32{winocMagic, uint32(b), uint32(p.C), uint32(p.O), uint32(kern.id)} {
		dst[i] = math.Float32frombits(v)
	}
	h := packedHeader[float32]()
	kc, nr := balancedBlock(p.C, kern.kc, 1), kern.nr
	np := ceilDiv(p.O, nr)
	for pos := range 16 {
		m := dst[winocHeader+pos*ml:][:ml]
		for i, v := range []uint32{packedMagic, uint32(kern.id), uint32(p.C), uint32(p.O)} {
			m[i] = math.Float32frombits(v)
		}
	}
	var g [9]float32
	var u [16]float32
	for o := range p.O {
		j, jj := o/nr, o%nr
		for c := range p.C {
			copy(g[:], w[(o*p.C+c)*9:][:9])
			winogradFilter(&g, &u)
			pc := c / kc * kc
			kb := min(kc, p.C-pc)
			at := winocHeader + h + pc*np*nr + j*kb*nr + (c-pc)*nr + jj
			for pos := range 16 {
				dst[pos*ml+at] = u[pos]
			}
		}
	}
}

// ConvNCHWcWinogradPacked reports whether packed holds w's Winograd form
// for p and b as PackConvNCHWc writes it with p.Winograd, for the GEMM
// kernel active now: what ConvNCHWc with p.Winograd needs. A copy packed
// before another GEMM kernel was made active is not.
func ConvNCHWcWinogradPacked(p Conv2DParams, b int, packed []float32) bool {
	if len(packed) < packConvNCHWcWinogradLen(p) {
		return false
	}
	kern := activeKernel[float32]()
	for i, v := range []uint32{winocMagic, uint32(b), uint32(p.C), uint32(p.O), uint32(kern.id)} {
		if math.Float32bits(packed[i]) != v {
			return false
		}
	}
	ml := winocMatLen(p)
	for pos := range 16 {
		if !packedFor(packed[winocHeader+pos*ml:][:ml], kern, p.C, p.O) {
			return false
		}
	}
	return true
}

// winocGeom is the shape of a Winograd convolution on the blocked layout
// and its cut into chunks of tiles for threads.
type winocGeom struct {
	p              Conv2DParams
	b              int
	oh, ow, th, tw int // output plane, its 2×2 tiles down and across
	tiles          int // over all samples: N·th·tw
	chunk, chunks  int // tiles per chunk (a multiple of the GEMM's mr), chunks
	osplit, ounit  int // ranges of output channels per chunk, in units of ounit
	parts          int // items (chunk, range) that run at once, each on its own scratch
	kern           *gemmKernel[float32]
}

// winocChunkFloats bounds a chunk's V and M together (384 KB): within the
// 1 MB L2 of a core beside the GEMM's packed panels.
const winocChunkFloats = 96 * 1024

// newWinocGeom cuts p's tiles into chunks that fit winocChunkFloats, at
// least one per thread and a multiple of the threads in number where
// there are several, so that the threads share them evenly. Each output
// gets the same bits whatever the cut: a tile's input and output
// transforms are the same in any chunk, and the GEMM's rows do not depend
// on the rows beside them (its tiles start at multiples of mr).
func newWinocGeom(p Conv2DParams, b, threads int) winocGeom {
	g := winocGeom{p: p, b: b, oh: p.OutH(), ow: p.OutW(), kern: activeKernel[float32]()}
	g.th, g.tw = ceilDiv(g.oh, 2), ceilDiv(g.ow, 2)
	g.tiles = p.N * g.th * g.tw
	g.parts = 1
	if g.tiles == 0 {
		return g
	}
	mr := g.kern.mr
	most := max(1, winocChunkFloats/(16*(p.C+p.O)*mr)) * mr
	groups := ceilDiv(g.tiles, mr)
	g.parts = nnParts(threads, groups, mr*16*p.C*p.O/16)
	g.osplit, g.ounit = 1, max(g.kern.nr, b)
	units := ceilDiv(p.O, g.ounit)
	if parts := nnParts(threads, groups*units, mr*16*p.C*g.ounit/16); groups < 2*parts && p.O/g.ounit >= 2 {
		// Too few rows of tiles to share (a small map at batch 1: 16
		// tiles are rows of 14 and 2): the chunks stay whole and each
		// one's output channels are cut in ranges of whole GEMM panels,
		// one item per range; an item recomputes its chunk's input
		// transform unless its worker has just made it.
		g.chunks = ceilDiv(g.tiles, most)
		g.chunk = ceilDiv(groups, g.chunks) * mr
		g.chunks = ceilDiv(g.tiles, g.chunk)
		g.osplit = min(units, ceilDiv(parts, g.chunks))
		g.parts = min(parts, g.chunks*g.osplit)
		return g
	}
	g.chunks = ceilDiv(g.tiles, most)
	g.chunks = min(ceilDiv(g.chunks, g.parts)*g.parts, groups)
	g.chunk = ceilDiv(groups, g.chunks) * mr
	g.chunks = ceilDiv(g.tiles, g.chunk)
	g.parts = min(g.parts, g.chunks)
	return g
}

// outRange is the output channels [o0, o1) of range r of a chunk's
// osplit: whole units of ounit (the last one to p.O), near-equal in
// number.
func (g *winocGeom) outRange(r int) (o0, o1 int) {
	u0, u1 := splitRange(ceilDiv(g.p.O, g.ounit), g.osplit, r)
	return u0 * g.ounit, min(u1*g.ounit, g.p.O)
}

// chunkLen is the scratch of one chunk: its V and M.
func (g *winocGeom) chunkLen() int { return 16 * g.chunk * (g.p.C + g.p.O) }

// winocWorkspace is the scratch ConvNCHWc takes with p.Winograd: V and M
// for each chunk that runs at once.
func winocWorkspace(p Conv2DParams, b, threads int) int {
	g := newWinocGeom(p, b, max(1, threads))
	return g.parts * g.chunkLen()
}

// convNCHWcWinograd is ConvNCHWc with p.Winograd: packed is the Winograd
// form (ConvNCHWcWinogradPacked), ws holds winocWorkspace(p, b, threads).
func convNCHWcWinograd(p Conv2DParams, b int, x, packed, out, ws []float32, threads int) {
	if err := winocOK(p, b, true); err != nil {
		panic("kernels: ConvNCHWc: " + err.Error())
	}
	if !ConvNCHWcWinogradPacked(p, b, packed) {
		panic(fmt.Sprintf("kernels: ConvNCHWc: the weights are not packed in the Winograd form for %d→%d channels in blocks of %d and this GEMM kernel", p.C, p.O, b))
	}
	g := newWinocGeom(p, b, max(1, threads))
	if need := g.parts * g.chunkLen(); len(ws) < need {
		panic(fmt.Sprintf("kernels: ConvNCHWc: winograd workspace %d, need %d", len(ws), need))
	}
	if g.tiles == 0 || p.O == 0 {
		return
	}
	_ = x[p.N*p.C*p.H*p.W-1]
	_ = out[p.N*p.O*g.oh*g.ow-1]
	if p.Epilogue.Residual32 != nil {
		_ = p.Epilogue.Residual32[p.N*p.O*g.oh*g.ow-1]
	}
	if p.Epilogue.Bias32 != nil {
		_ = p.Epilogue.Bias32[p.O-1]
	}
	j := getJob[winocJob]()
	j.g, j.ep, j.x, j.packed, j.out, j.ws = g, p.Epilogue, x, packed, out, ws
	nnForWorkersRanger(g.parts, g.chunks*g.osplit, j)
	putJob(j)
}

// winocJob runs the chunks on the threads, each on its worker's scratch.
type winocJob struct {
	g                  winocGeom
	ep                 Epilogue
	x, packed, out, ws []float32
}

// winocChunk is the tiles [t0, t1) of a chunk and its scratch: V and M,
// row i of each position's matrix for tile t0+i.
type winocChunk struct {
	t0, t1 int
	v, m   []float32
}

// runWorker computes items [lo, hi) — item i is range i%osplit of the
// output channels of chunk i/osplit — on worker's scratch: the input
// transform (once for consecutive items of one chunk), the 16 products,
// the output transform and epilogue.
func (j *winocJob) runWorker(worker, lo, hi int) {
	g := &j.g
	ws := j.ws[worker*g.chunkLen():][:g.chunkLen()]
	nv := 16 * g.chunk * g.p.C
	last := -1
	for i := lo; i < hi; i++ {
		c := i / g.osplit
		t0 := c * g.chunk
		ch := winocChunk{t0, min(t0+g.chunk, g.tiles), ws[:nv], ws[nv:]}
		if c != last {
			j.input(&ch)
			last = c
		}
		o0, o1 := g.outRange(i % g.osplit)
		j.mul(&ch, o0, o1)
	}
}

// input transforms the chunk's tiles: V[pos][tile][c] for every input
// channel.
func (j *winocJob) input(ch *winocChunk) {
	g := &j.g
	p, b := g.p, g.b
	blocks := p.C / b
	vld := g.chunk * p.C
	plane := p.H * p.W * b
	for t := ch.t0; t < ch.t1; t++ {
		n, ty, tx := t/(g.th*g.tw), t/g.tw%g.th, t%g.tw
		iy, ix := 2*ty-p.PH, 2*tx-p.PW
		vo := (t - ch.t0) * p.C
		if iy >= 0 && iy+4 <= p.H && ix >= 0 && ix+4 <= p.W {
			winocInput(b, j.x[n*blocks*plane+(iy*p.W+ix)*b:], p.W*b, plane, blocks, ch.v[vo:], vld)
			continue
		}
		// A patch over the map's edge: its zeros written once, its pixels
		// in the map gathered block by block.
		var d [16 * 16]float32
		clear(d[:16*b])
		y0, y1 := max(0, -iy), min(4, p.H-iy)
		x0, x1 := max(0, -ix), min(4, p.W-ix)
		for cb := range blocks {
			src := j.x[(n*blocks+cb)*plane:][:plane]
			for dy := y0; dy < y1; dy++ {
				row := src[(iy+dy)*p.W*b:]
				copy(d[(dy*4+x0)*b:(dy*4+x1)*b], row[(ix+x0)*b:(ix+x1)*b])
			}
			winocInput(b, d[:], 4*b, 0, 1, ch.v[vo+cb*b:], vld)
		}
	}
}

// mul computes the output channels [o0, o1) of the chunk's 16 products
// M[pos] = V[pos]·U[pos], then their output transform and epilogue.
func (j *winocJob) mul(ch *winocChunk, o0, o1 int) {
	g := &j.g
	p := g.p
	tiles := ch.t1 - ch.t0
	vld, mld, ml := g.chunk*p.C, g.chunk*p.O, winocMatLen(p)
	ws := getGemmScratch[float32]()
	for pos := range 16 {
		pb := j.packed[winocHeader+pos*ml:][:ml]
		gemmPackedRange(g.kern, ws, false, 0, tiles, o0, o1, p.O, p.C, 1, ch.v[pos*vld:][:tiles*p.C], p.C, pb, 0, ch.m[pos*mld:][:tiles*p.O], p.O)
	}
	putGemmScratch(ws)
	j.output(ch, o0/g.b, o1/g.b)
}

// output writes the chunk's tiles: Y = Aᵀ m A plus the bias for the
// output blocks [ob0, ob1), then the residual and activation run by run
// of each tile row's output rows.
func (j *winocJob) output(ch *winocChunk, ob0, ob1 int) {
	g := &j.g
	p, b := g.p, g.b
	blocks := p.O / b
	mld, plane := g.chunk*p.O, g.oh*g.ow*b
	var bias0 []float32
	if j.ep.Bias32 != nil {
		bias0 = j.ep.Bias32[ob0*b:]
	}
	for t := ch.t0; t < ch.t1; {
		n, ty := t/(g.th*g.tw), t/g.tw%g.th
		tx0 := t % g.tw
		tx1 := min(g.tw, tx0+ch.t1-t)
		base := n * blocks * plane
		for tx := tx0; tx < tx1; tx++ {
			mo := (t - ch.t0 + tx - tx0) * p.O
			y, x := 2*ty, 2*tx
			if y+2 <= g.oh && x+2 <= g.ow {
				winocOutput(b, ch.m[mo+ob0*b:], mld, ob1-ob0, j.out[base+ob0*plane+(y*g.ow+x)*b:], g.ow*b, plane, bias0)
				continue
			}
			// A tile over the output's edge: through a 2×2 buffer.
			var tmp [4 * 16]float32
			for o := ob0; o < ob1; o++ {
				var bias []float32
				if j.ep.Bias32 != nil {
					bias = j.ep.Bias32[o*b:][:b]
				}
				winocOutput(b, ch.m[mo+o*b:], mld, 1, tmp[:], 2*b, 0, bias)
				for dy := range min(2, g.oh-y) {
					for dx := range min(2, g.ow-x) {
						copy(j.out[base+o*plane+((y+dy)*g.ow+x+dx)*b:][:b], tmp[(dy*2+dx)*b:][:b])
					}
				}
			}
		}
		if j.ep.Residual32 != nil || j.ep.Act != ActNone {
			x0, x1 := 2*tx0, min(2*tx1, g.ow)
			for o := ob0; o < ob1; o++ {
				for y := 2 * ty; y < min(2*ty+2, g.oh); y++ {
					off := base + o*plane + (y*g.ow+x0)*b
					epiNCHWc(&j.ep, j.out[off:off+(x1-x0)*b], off)
				}
			}
		}
		t += tx1 - tx0
	}
}

// winocInputGo is winocInput's vector kernel in Go: V = Bᵀ d B of the
// 4×4 patches x[k·bstride + r·ld + q·b:][:b] into v[pos·vld + k·b:][:b],
// each lane as winogradInput computes it.
func winocInputGo(b int, x []float32, ld, bstride, blocks int, v []float32, vld int) {
	var d, u [16]float32
	for k := range blocks {
		for l := range b {
			for r := range 4 {
				for q := range 4 {
					d[4*r+q] = x[k*bstride+r*ld+q*b+l]
				}
			}
			winogradInput(&d, &u)
			for pos := range 16 {
				v[pos*vld+k*b+l] = u[pos]
			}
		}
	}
}

// winocOutputGo is winocOutput's vector kernel in Go: Y = Aᵀ m A (plus
// bias, if any) of the tiles m[pos·mld + k·b:][:b] into
// y[k·bstride + r·ld + q·b:][:b], each lane as winogradOutput computes it.
func winocOutputGo(b int, m []float32, mld, blocks int, y []float32, ld, bstride int, bias []float32) {
	var t [16]float32
	var o [4]float32
	for k := range blocks {
		for l := range b {
			for pos := range 16 {
				t[pos] = m[pos*mld+k*b+l]
			}
			winogradOutput(&t, &o)
			for r := range 2 {
				for q := range 2 {
					s := o[2*r+q]
					if bias != nil {
						s += bias[k*b+l]
					}
					y[k*bstride+r*ld+q*b+l] = s
				}
			}
		}
	}
}

// winocMinTiles is the fewest 2×2 output tiles, over the batch, that
// ConvNCHWcWinogradRuns computes by Winograd.
const winocMinTiles = 32

// ConvNCHWcWinogradRuns reports whether a convolution marked Winograd
// (ConvNCHWcWinogradOK) runs that way at p's batch: with at least
// winocMinTiles output tiles. With fewer, each of U's 16 positions — 16/9
// of the direct weights, read from memory in a model, where the other
// layers' weights have evicted them — serves a handful of tiles, and
// reading them outweighs the products saved: resnet18ish at batch 1
// (16 tiles on 8×8, 4 on 4×4) ran 1.29–1.58 ms on two threads with every
// such layer by Winograd against 1.18–1.41 with none, though each layer
// alone, its weights in cache, was faster. Callers decide with it once
// per shape, for the packed form as for the kernel.
func ConvNCHWcWinogradRuns(p Conv2DParams) bool {
	return p.N*ceilDiv(p.OutH(), 2)*ceilDiv(p.OutW(), 2) >= winocMinTiles
}

// ConvNCHWcWinogradOK reports whether ConvNCHWc should compute p with
// blocks of b by Winograd: the convolution is one it computes that way
// (a blocked input, 3×3, strides, dilations and groups 1), this machine
// runs the vector transforms for b, and the output is at least 4×4. On
// smaller maps the direct kernel skips the taps that fall in the padding
// — on a 2×2 map with padding 1 it adds 4 of 9, as few products as one
// Winograd tile — and Winograd's weights, 16/9 of the direct ones, are
// read for one or two tiles (resnet18ish's 512 channels on 2×2: 0.68 of
// the direct kernel's speed at batch 1, 0.86 at batch 8, one thread).
func ConvNCHWcWinogradOK(p Conv2DParams, b int) bool {
	p.Winograd = true
	return nchwcVecOK(b) && winocOK(p, b, true) == nil && p.OutH() >= 4 && p.OutW() >= 4
}
