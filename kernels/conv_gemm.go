package kernels

import (
	"runtime"
	"sync"
	"unsafe"
)

// The float32 convolution as one GEMM per group over the whole batch:
//
//	C (O/G × N·OH·OW) = w_g (O/G × C/G·KH·KW) · im2col_g (C/G·KH·KW × N·OH·OW)
//
// with the im2col operand packed straight from the input into the
// micro-kernel's panels (conv_gemm_pack.go): no im2col matrix, and the
// weights are packed once per block of nc columns — once per call when
// the batch's output positions fit in one block — instead of once per
// image (or, with p.Packed, never: conv_gemm_packed.go). Per image, as
// the im2col path does it, a 2×2 output map (ResNet's last stage) has four
// columns against weights of up to 512×4608: packing those for every
// image cost more than the products. 1×1 convolutions need no special
// case: their im2col rows are the input's channel planes.
//
// When the batch has fewer output positions than output channels allow
// filling vectors with (a few columns against many channels: batch 1 on a
// small map), the product is computed transposed, Cᵀ = im2colᵀ · w_gᵀ, so
// that the vector lanes run over output channels instead of over the few
// columns; the weights are then the B operand.
//
// Each element of C is computed by one micro-kernel call per kc slice of
// the depth, with tiles at fixed positions (splits of the work fall on
// tile boundaries) and kc fixed by the depth, so results do not depend on
// the thread count. p.Epilogue is applied after the last slice to blocks
// of whole panels (convEpiSpan), to a scratch block as it is copied out,
// or to the transposed product's block before it is transposed.

// convEpiBlock applies ep to the output channels [o0, o0+rows) at the
// columns [q0, q1) of C (column q: image q / ohw, position q % ohw), each
// element as epiPlanes treats it: an image whose positions the columns
// cover all is rows whole planes, one block for epiPlanes; the rest go
// one run per channel.
func convEpiBlock(ep *Epilogue, out []float32, channels, o0, rows, q0, q1, ohw int) {
	for q := q0; q < q1; {
		n, pos := q/ohw, q%ohw
		run := min(q1-q, ohw-pos)
		if run == ohw {
			epiPlanes(ep, out, channels, n*channels+o0, n*channels+o0+rows, ohw)
		} else {
			for i := range rows {
				convEpiRun(ep, out, channels, n*channels+o0+i, pos, pos+run, ohw)
			}
		}
		q += run
	}
}

// convEpiRun applies ep to the positions [lo, hi) of output plane q
// (channel q % channels, planes hw apart): bias, residual, activation,
// as epiPlanes does to whole planes.
func convEpiRun(ep *Epilogue, out []float32, channels, q, lo, hi, hw int) {
	bias, res := epiData[float32](ep)
	v := out[q*hw+lo : q*hw+hi]
	if bias != nil && (ep.Act == ActNone || ep.Act == ActRelu) && hasEpiPlanesVec {
		var r []float32
		if res != nil {
			r = res[q*hw+lo : q*hw+hi]
		}
		c := q % channels
		epiPlanesF32Vec(v, bias[c:c+1], r, ep.Act == ActRelu, len(v))
		return
	}
	if bias != nil && res == nil && epiBiasSiluOK(ep, len(v)) {
		epiBiasSilu(v, bias[q%channels])
		return
	}
	if bias != nil {
		epiAddScalar(v, bias[q%channels])
	}
	if res != nil {
		add2D(v, 0, res[q*hw+lo:q*hw+hi], 0, 1, len(v))
	}
	epiAct(ep, v)
}

// convGemmOrient, when not 0, forces the plain (1) or transposed (−1)
// product for tests.
var convGemmOrient int8

// convGemmOK reports whether Conv2D on float32 takes this path: a
// non-empty depth and input (an empty one, all padding, is left to
// im2col) small enough for the int32 tables. Without the vector packer
// (convPackVecOK), a column-strided convolution's panels are read one
// element at a time: on maps of 64 outputs or more im2col's block copies
// are then faster (measured with the AVX2 GEMM, one thread: ResNet's
// 7×7/2 stem at batch 64 38 ms against 22), on smaller ones packing the
// weights once still wins (256→512 3×3/2 on 4×4 maps: 7.3 against 52).
func (p Conv2DParams) convGemmOK() bool {
	if p.C/p.Groups == 0 || p.KH*p.KW == 0 || p.H*p.W == 0 {
		return false
	}
	if !convPackVecOK() && p.SW > 1 && p.OutH()*p.OutW() >= 64 {
		return false
	}
	span := int64(p.N+2) * int64(p.C) * int64(p.H+2*p.PH+p.DH*p.KH+p.SH) * int64(p.W+2*p.PW+p.DW*p.KW+p.SW)
	return span < 1<<30
}

// convGemmScratchElems bounds the C block that the paths writing through
// a scratch block (small output maps, the transposed product) hold (a
// variable so that tests can make blocks small).
var convGemmScratchElems = 128 * 1024

// convGemmTransMax is the most output positions (over the batch) for which
// the transposed product is considered on any convolution.
const convGemmTransMax = 64

// convGemmTransWide bounds Cᵀ (output positions × output channels of a
// group, in elements) for the transposed product past convGemmTransMax
// positions, on products without column stride (the strided product,
// conv_gemm_strided.go, takes those with it): the block blockT holds,
// as large as the plain product's scratch blocks. It lets in the
// detector's 10×10 maps at batch 1 and 2, 100 or 200 positions against
// 192–512 output channels, whose plain product's last panel fills 4 of a
// vector's 16 lanes (one thread, CPU µs, batch 1: 192→192 3×3 410–481 →
// 376–405, 384→384 1×1 210–221 → 188, 384→512 1×1 281–295 → 237–248;
// batch 2 and 3 8–17% faster too).
const convGemmTransWide = 128 * 1024

// convGemmJob is one Conv2D call on this path. Jobs are recycled so that
// a call allocates nothing once warm.
type convGemmJob struct {
	p         Conv2DParams
	x, w, out []float32
	kern      *gemmKernel[float32]
	ktab      []int32    // the im2col rows (convKTab)
	k, q, ohw int        // depth, columns (N·OH·OW), positions per image
	kc        int        // depth of a packed slice, fixed by k
	trans     bool       // computing Cᵀ (see above)
	strided   bool       // computing Cᵀ with A read in place (conv_gemm_strided.go)
	padS      convPadded // the strided product's padded rows, ch 0 without (stridedPadInit)
	ktabPad   []int32    // the im2col rows in padS (convKTab)
	scratch   bool       // C goes through a scratch block (else straight to out)
	gridR     int        // work items per group: gridR × gridC blocks of C
	gridC     int
	epi       bool      // p.Epilogue does something
	pw        []float32 // the weights packed (p.Packed past its header), or nil
	pwWidth   int       // output channels per group rounded to whole panels in pw
	run       func(worker, item int)
}

var convGemmJobs = sync.Pool{New: func() any {
	j := new(convGemmJob)
	j.run = j.item
	return j
}}

// conv2DGemm is Conv2D on this path; out is fully written.
func conv2DGemm(p Conv2DParams, x, w, out []float32, threads int) {
	oh, ow := p.OutH(), p.OutW()
	cg, og := p.C/p.Groups, p.O/p.Groups
	if len(x) < p.N*p.C*p.H*p.W || len(w) < p.O*cg*p.KH*p.KW || len(out) < p.N*p.O*oh*ow {
		panic("kernels: conv2d operands shorter than their shapes")
	}
	j := convGemmJobs.Get().(*convGemmJob)
	j.p, j.x, j.w, j.out = p, x, w, out
	j.epi = p.Epilogue.on()
	j.kern = sgemmActive.Load()
	j.k, j.ohw = cg*p.KH*p.KW, oh*ow
	j.q = p.N * j.ohw
	j.kc = balancedBlock(j.k, j.kern.kc, 1)
	if need := 4 * j.k; cap(j.ktab) < need {
		j.ktab = make([]int32, need)
	}
	j.ktab = convKTab(p, j.ktab[:cap(j.ktab)])
	j.trans = convGemmTransposed(p, j.kern)
	// The strided product (conv_gemm_strided.go) reads the weights packed
	// for it; packing them per block of positions would cost more.
	j.strided = !j.trans && convGemmStridedOK(p, j.kern) && convPackedPanels(p, j.kern, true, j.k) != nil
	j.trans = j.trans || j.strided
	j.stridedPadInit()
	j.pw, j.pwWidth = convPackedPanels(p, j.kern, j.trans, j.k), 0
	if j.pw != nil {
		form := ConvPackPlain
		if j.trans {
			form = ConvPackTrans
		}
		j.pwWidth = convPackedWidth(og, j.kern, form)
	}
	j.scratch = j.trans || j.ohw < j.kern.nr
	rows, cols := og, j.q
	if j.trans {
		rows, cols = j.q, og
	}
	// Goroutines as the GEMM would use for the product (gemmParallel), on
	// blocks of C chosen as for its streaming case (convGemmGrid); splits
	// fall on tile boundaries, so they never change results.
	work := og * j.q * j.k * p.Groups
	if j.k < gemmShallowK {
		work /= 4
	}
	t := max(1, min(threads, runtime.GOMAXPROCS(0), work/gemmMinWork))
	j.gridR, j.gridC = 1, 1
	if t > p.Groups {
		j.gridR, j.gridC = convGemmGrid(rows, cols, j.kern, ceilDiv(t, p.Groups), j.pw != nil, j.trans)
	}
	items := p.Groups * j.gridR * j.gridC
	if t <= 1 {
		for i := range items {
			j.item(0, i)
		}
	} else {
		perfRun(t, items, j.run)
	}
	j.p, j.x, j.w, j.out, j.kern, j.pw = Conv2DParams{}, nil, nil, nil, nil, nil
	convGemmJobs.Put(j)
}

// convWeightsCost is what convGemmGrid charges per element of weights
// packed once that a block of C reads, in multiply-adds: twice the
// packing of an element (gemmPackCost). At inference the weights come
// from memory on every call (resnet18ish has 44 MB of them), and a block
// reads those of all its output channels: split by columns, each
// goroutine reads all of them, split by output channels, its share, and
// packs the im2col columns that the other packs too. Where the columns
// are few that trade wins: on layer 2 of resnet18ish at batch 1 (128
// output channels, 64 columns), in the network, two threads took 0.76–0.80
// of one thread's time on its 3×3 layers, 0.91–0.99 on the first (stride
// 2) and 1.4–2.0 on the 1×1 downsample split by columns; 0.62–0.63,
// 0.82–0.83 and 1.0 split by output channels (medians, quiet moments;
// see the commit).
const convWeightsCost = 2 * gemmPackCost

// convGemmGrid splits C (rows×cols; the output channels are its rows, or
// with trans its columns) into blocks for t goroutines as the GEMM's
// streaming case does (gemmStreamItems), but charging the weights as
// convWeightsCost when they are packed already (packed) and the product
// has few columns: at most convGemmTransMax output positions, as at
// batch 1 on small maps. With more (at batch 8 the same layers and
// those of layer 3 of resnet18ish), the two splits measured alike.
func convGemmGrid(rows, cols int, kern *gemmKernel[float32], t int, packed, trans bool) (gridR, gridC int) {
	rowCost, colCost, positions := gemmPackCost, gemmPackCost, cols
	if trans {
		positions = rows
	}
	if packed && positions <= convGemmTransMax {
		if trans {
			colCost = convWeightsCost
		} else {
			rowCost = convWeightsCost
		}
	}
	return gemmBlockItems(rows, cols, kern.mr, kern.nr, t, rowCost, colCost)
}

// convGemmTransposed reports whether conv2DGemm computes p as the
// transposed product (see above): few output positions over the batch
// (convGemmTransMax, or convGemmTransWide's block), which would fill the
// vector lanes worse than the output channels do.
func convGemmTransposed(p Conv2DParams, kern *gemmKernel[float32]) bool {
	if convGemmOrient != 0 {
		return convGemmOrient < 0
	}
	og, q := p.O/p.Groups, p.N*p.OutH()*p.OutW()
	if q > convGemmTransMax && (p.SW != 1 || q*og > convGemmTransWide) {
		return false
	}
	lanes := max(kern.lanes, 1)
	return ceilDiv(og, lanes)*lanes*q < ceilDiv(q, lanes)*lanes*og
}

// weights returns the packed panels of group g's output channels from i0
// (a whole number of panels in) for the slice of the depth at pc, kb
// deep, from the packed copy j.pw.
func (j *convGemmJob) weights(g, pc, kb, i0 int) []float32 {
	return j.pw[(g*j.k+pc)*j.pwWidth+i0*kb:]
}

// item computes work item i: group i / (gridR·gridC), then one block of C.
func (j *convGemmJob) item(_, i int) {
	per := j.gridR * j.gridC
	g, b := i/per, i%per
	og := j.p.O / j.p.Groups
	rows, cols := og, j.q
	if j.trans {
		rows, cols = j.q, og
	}
	r0, r1 := panelRange(rows, j.kern.mr, j.gridR, b/j.gridC)
	c0, c1 := panelRange(cols, j.kern.nr, j.gridC, b%j.gridC)
	if r0 == r1 || c0 == c1 {
		return
	}
	ws := convScratchPool.Get().(*convScratch)
	if j.strided {
		j.blockS(ws, g, r0, r1, c0, c1)
	} else if j.trans {
		j.blockT(ws, g, r0, r1, c0, c1)
	} else {
		j.block(ws, g, r0, r1, c0, c1)
	}
	convScratchPool.Put(ws)
}

// group returns the group's input (from its first channel) and weights.
func (j *convGemmJob) group(g int) (xg, wg []float32) {
	p := j.p
	cg, og := p.C/p.Groups, p.O/p.Groups
	return j.x[g*cg*p.H*p.W:], j.w[g*og*j.k:]
}

// block computes rows [r0, r1) (output channels of group g) and columns
// [c0, c1) of C. When the rows' weights are small enough (gemmStreams) it
// packs them all once per slice of the depth and then, panel by panel,
// packs nr im2col columns and runs their tiles while the panel is in L1
// (as gemmStreamB does); otherwise, in BLIS order, it packs a block of
// columns per slice and a block of rows at a time.
func (j *convGemmJob) block(ws *convScratch, g, r0, r1, c0, c1 int) {
	p, kern := j.p, j.kern
	mr, nr := kern.mr, kern.nr
	xg, wg := j.group(g)
	rows := r1 - r0
	stream := gemmStreams(kern, rows, j.k)
	nc := kern.nc
	if j.scratch {
		nc = max(nr, min(nc, convGemmScratchElems/rows/nr*nr))
	}
	nc = balancedBlock(c1-c0, nc, nr)
	mc, bw := balancedBlock(rows, kern.mc, mr), nc
	if stream {
		mc, bw = rows, nr
	}
	ap, bp, tmp := ws.panels(ceilDiv(mc, mr)*mr*j.kc, bw*j.kc, mr*nr)
	pk := kern.pack.orDefault()
	for jc := c0; jc < c1; jc += nc {
		nb := min(nc, c1-jc)
		s := convColsStride(nb)
		cols := convColTab(p, jc, nb, ws.colTab(3*s))
		var cs []float32
		if j.scratch {
			cs = ws.cBlock(rows * nb)
		}
		for pc := 0; pc < j.k; pc += j.kc {
			kb := min(j.kc, j.k-pc)
			kt := j.ktab[4*pc : 4*(pc+kb)]
			var beta float32
			if pc > 0 {
				beta = 1 // later slices accumulate onto the first
			}
			if stream {
				a := ap
				if j.pw != nil {
					a = j.weights(g, pc, kb, r0)
				} else {
					packA(ap, pk, false, wg, j.k, r0, pc, rows, kb, mr)
				}
				epi, span, from := j.epi && pc+kb == j.k, convEpiSpan(rows, nr), 0
				for jr := 0; jr < nb; jr += nr {
					nw := min(nr, nb-jr)
					if base, ok := j.inPlace(cols[jr:], s, nw, (jc+jr)%j.ohw); ok && !j.scratch {
						j.tilesInPlace(a, xg, base, kt, g, r0, rows, jc+jr, kb, beta)
					} else {
						convPack(bp, xg, kt, kb, cols[jr:], s, nr, p.H, p.W)
						if j.scratch {
							macroKernel(kern, a, bp, tmp, rows, nw, kb, 1, beta, cs[jr:], nb)
							continue
						}
						j.tiles(a, bp, tmp, g, r0, rows, jc+jr, nw, kb, beta)
					}
					if epi && (jr+nw == nb || jr+nw-from >= span) {
						j.epiBlock(g, r0, rows, jc+from, jc+jr+nw)
						from = jr + nw
					}
				}
				continue
			}
			for jr := 0; jr < nb; jr += nr {
				convPack(bp[jr*kb:], xg, kt, kb, cols[jr:], s, nr, p.H, p.W)
			}
			for ic := r0; ic < r1; ic += mc {
				mb := min(mc, r1-ic)
				a := ap
				if j.pw != nil {
					a = j.weights(g, pc, kb, ic)
				} else {
					packA(ap, pk, false, wg, j.k, ic, pc, mb, kb, mr)
				}
				if j.scratch {
					macroKernel(kern, a, bp, tmp, mb, nb, kb, 1, beta, cs[(ic-r0)*nb:], nb)
					continue
				}
				if !j.epi || pc+kb < j.k {
					j.tiles(a, bp, tmp, g, ic, mb, jc, nb, kb, beta)
					continue
				}
				span := convEpiSpan(mb, nr)
				for jg := 0; jg < nb; jg += span {
					w := min(span, nb-jg)
					j.tiles(a, bp[jg*kb:], tmp, g, ic, mb, jc+jg, w, kb, beta)
					j.epiBlock(g, ic, mb, jc+jg, jc+jg+w)
				}
			}
		}
		if j.scratch {
			j.scatter(cs, g, r0, rows, jc, nb)
		}
	}
}

// tiles runs the macro-kernel of one packed block straight into out: a
// tile whose columns lie in one image is a strided block of that image's
// output (rows OH·OW apart); one that spans images is computed into tmp
// and added (or, for the first slice, copied) into each image's part.
// The caller applies the epilogue (epiBlock).
func (j *convGemmJob) tiles(ap, bp, tmp []float32, g, ic, mb, jc, nb, kb int, beta float32) {
	kern, ohw := j.kern, j.ohw
	mr, nr := kern.mr, kern.nr
	o0 := g*(j.p.O/j.p.Groups) + ic
	for jr := 0; jr < nb; jr += nr {
		nw := min(nr, nb-jr)
		n, pos := (jc+jr)/ohw, (jc+jr)%ohw
		for ir := 0; ir < mb; ir += mr {
			a, b := ap[ir*kb:], bp[jr*kb:]
			if pos+nw <= ohw {
				c := j.out[(n*j.p.O+o0+ir)*ohw+pos:]
				gemmTile(kern, a, b, tmp, mb-ir, nb-jr, kb, 0, 0, 1, beta, c, ohw)
			} else {
				j.tileSpanning(a, b, tmp, mb-ir, nb-jr, kb, beta, o0+ir, n, pos)
			}
		}
	}
}

// convEpiElems is about how many output elements a pass of the epilogue
// takes at once on the paths writing straight to out: a block of whole
// panels small enough to be in cache still, with runs long enough that
// the bias add and the activation run as vector loops rather than as a
// call per tile row (SiLU on a 32-column tile row cost more than the
// separate silu pass over the whole output). A variable so that tests can
// make the passes one panel wide.
var convEpiElems = 16 * 1024

// convEpiSpan is the columns of one epilogue pass over rows rows: whole
// panels of nr, at least one.
func convEpiSpan(rows, nr int) int {
	return max(nr, convEpiElems/max(rows, 1)/nr*nr)
}

// epiBlock applies the epilogue to the output channels i0, i0+1, … (rows
// of them) of group g, columns [q0, q1) of C, whose sums are complete.
func (j *convGemmJob) epiBlock(g, i0, rows, q0, q1 int) {
	convEpiBlock(&j.p.Epilogue, j.out, j.p.O, g*(j.p.O/j.p.Groups)+i0, rows, q0, q1, j.ohw)
}

// tileSpanning computes the tile of packed panels a, b (at most mb rows
// and nb columns left in the block) into tmp and adds it (beta 0: copies
// it) into the output rows o, o+1, … from image n, position pos on.
func (j *convGemmJob) tileSpanning(a, b, tmp []float32, mb, nb, kb int, beta float32, o, n, pos int) {
	kern, ohw := j.kern, j.ohw
	mr, nr := kern.mr, kern.nr
	nw := min(nr, nb)
	gemmTile(kern, a, b, tmp, mb, nb, kb, 0, 0, 1, 0, tmp, nr)
	for i := range min(mr, mb) {
		src := tmp[i*nr : i*nr+nw]
		for q, nn, pp := 0, n, pos; q < nw; q, nn, pp = q+ohw-pp, nn+1, 0 {
			run := min(nw-q, ohw-pp)
			dst := j.out[(nn*j.p.O+o+i)*ohw+pp:][:run]
			if beta == 0 {
				copy(dst, src[q:q+run])
				continue
			}
			add2D(dst, 0, src[q:q+run], 0, 1, run) // the vector loop, as the micro-kernel adds to C
		}
	}
}

// scatter copies rows (output channels r0, r0+1, … of group g) of the C
// block cs, columns [jc, jc+nb), into out, with the epilogue. What of it
// does not read out goes on cs first (convEpiSplit), along its rows of nb
// columns rather than along out's planes, and the copy goes one image at
// a time, all rows at once (copy2D): on small maps a plane is a few
// elements (4 on a 2×2 map), and a call per plane cost as much as the
// product (ResNet's 256→512 1×1/2 at batch 64).
func (j *convGemmJob) scatter(cs []float32, g, r0, rows, jc, nb int) {
	ohw := j.ohw
	o0 := g*(j.p.O/j.p.Groups) + r0
	var pre, rest Epilogue
	if j.epi {
		pre, rest = convEpiSplit(&j.p.Epilogue, o0, rows)
	}
	epiPlanes(&pre, cs, rows, 0, rows, nb)
	n, pos := jc/ohw, jc%ohw
	for q := 0; q < nb; {
		run := min(nb-q, ohw-pos)
		copy2D(j.out[(n*j.p.O+o0)*ohw+pos:], ohw, cs[q:], nb, rows, run)
		q += run
		n, pos = n+1, 0
	}
	if rest.on() {
		convEpiBlock(&rest, j.out, j.p.O, o0, rows, jc, jc+nb, ohw)
	}
}

// convEpiSplit splits ep, for the output channels [o0, o0+rows), into
// pre, the part that does not read out (all of ep without a residual,
// else its bias), with its bias from o0 on, and rest, what is left to
// apply in out. Applied one after the other, each element gets the steps
// epiPlanes gives it, in its order and with its roundings: the same bits.
func convEpiSplit(ep *Epilogue, o0, rows int) (pre, rest Epilogue) {
	var bias []float32
	if ep.Bias32 != nil {
		bias = ep.Bias32[o0 : o0+rows]
	}
	switch {
	case ep.Residual32 == nil:
		pre = *ep
		pre.Bias32 = bias
		return pre, Epilogue{}
	case bias == nil:
		return Epilogue{}, *ep
	}
	rest = *ep
	rest.Bias32 = nil
	return Epilogue{Bias32: bias}, rest
}

// blockT computes rows [r0, r1) (columns of the im2col matrix) and
// columns [c0, c1) (output channels of group g) of Cᵀ into a scratch
// block, then transposes it into out and applies the epilogue. The rows
// are few (convGemmTransMax, convGemmTransWide), so it packs them all per
// slice of the depth and streams the weights panel by panel.
func (j *convGemmJob) blockT(ws *convScratch, g, r0, r1, c0, c1 int) {
	p, kern := j.p, j.kern
	mr, nr := kern.mr, kern.nr
	xg, wg := j.group(g)
	rows, width := r1-r0, c1-c0
	ap, bp, tmp := ws.panels(ceilDiv(rows, mr)*mr*j.kc, nr*j.kc, mr*nr)
	s := convColsStride(rows)
	cols := convColTab(p, r0, rows, ws.colTab(3*s))
	cs := ws.cBlock(rows * width)
	pk := kern.pack.orDefault()
	for pc := 0; pc < j.k; pc += j.kc {
		kb := min(j.kc, j.k-pc)
		kt := j.ktab[4*pc : 4*(pc+kb)]
		var beta float32
		if pc > 0 {
			beta = 1
		}
		for ir := 0; ir < rows; ir += mr {
			convPack(ap[ir*kb:], xg, kt, kb, cols[ir:], s, mr, p.H, p.W)
		}
		for jr := 0; jr < width; jr += nr {
			nw := min(nr, width-jr)
			b := bp
			if j.pw != nil {
				b = j.weights(g, pc, kb, c0+jr)
			} else {
				packB(bp, pk, true, wg, j.k, pc, c0+jr, kb, nw, nr)
			}
			macroKernel(kern, ap, b, tmp, rows, nw, kb, 1, beta, cs[jr:], width)
		}
	}
	o0 := g*(p.O/p.Groups) + c0
	if j.epi {
		j.epiTransposed(cs, o0, r0, rows, width)
	}
	for i := range rows {
		n, pos := (r0+i)/j.ohw, (r0+i)%j.ohw
		dst := j.out[(n*p.O+o0)*j.ohw+pos:]
		for o, v := range cs[i*width : (i+1)*width] {
			dst[o*j.ohw] = v
		}
	}
}

// epiTransposed applies the epilogue to the block cs of Cᵀ (rows columns
// of C from r0, by width output channels from o0) before it is
// transposed into out: the bias along cs's rows, the residual read
// across out's planes, then the activation over the whole block, in the
// order and with the roundings of epiPlanes, so the bits are those out's
// planes would get. Per output channel the runs would be as short as an
// image's output positions (4 on a 2×2 map).
func (j *convGemmJob) epiTransposed(cs []float32, o0, r0, rows, width int) {
	ep := &j.p.Epilogue
	bias, res := epiData[float32](ep)
	cs = cs[:rows*width]
	if bias != nil {
		add2D(cs, width, bias[o0:o0+width], 0, rows, width)
	}
	if res != nil {
		for i := range rows {
			n, pos := (r0+i)/j.ohw, (r0+i)%j.ohw
			src := res[(n*j.p.O+o0)*j.ohw+pos:]
			row := cs[i*width : (i+1)*width]
			for o := range row {
				row[o] += src[o*j.ohw]
			}
		}
	}
	epiAct(ep, cs)
}

// convScratch is one goroutine's buffers on this path and the depthwise
// kernel's, recycled through a pool like the GEMM's packing buffers.
type convScratch struct {
	mem  []float32 // backing store of the packed panels and tmp
	a, b []float32
	tmp  []float32
	c    []float32
	cols []int32
	taps []int64    // the depthwise kernel's tap offsets (conv_depthwise.go)
	pad  []float32  // the strided product's padded rows (stridedPadded)
	padS convPadded // their geometry
}

var convScratchPool = sync.Pool{New: func() any { return new(convScratch) }}

// panels returns cache-line-aligned buffers of na, nb and nt elements.
func (ws *convScratch) panels(na, nb, nt int) (a, b, tmp []float32) {
	const pad = gemmAlign / 4
	round := func(n int) int { return ceilDiv(n, pad) * pad }
	if len(ws.a) < na || len(ws.b) < nb || len(ws.tmp) < nt {
		na, nb, nt = round(max(na, len(ws.a))), round(max(nb, len(ws.b))), round(max(nt, len(ws.tmp)))
		ws.mem = make([]float32, na+nb+nt+pad)
		off := 0
		if r := int(uintptr(unsafe.Pointer(&ws.mem[0])) % gemmAlign); r != 0 {
			off = (gemmAlign - r) / 4
		}
		m := ws.mem[off:]
		ws.a, ws.b, ws.tmp = m[:na:na], m[na:na+nb:na+nb], m[na+nb:na+nb+nt:na+nb+nt]
	}
	return ws.a, ws.b, ws.tmp
}

// cBlock returns a buffer of n elements for a block of C.
func (ws *convScratch) cBlock(n int) []float32 {
	if len(ws.c) < n {
		ws.c = make([]float32, n)
	}
	return ws.c[:n]
}

// colTab returns a buffer of n entries for a column table.
func (ws *convScratch) colTab(n int) []int32 {
	if len(ws.cols) < n {
		ws.cols = make([]int32, n)
	}
	return ws.cols[:n]
}
