package kernels

import (
	"runtime"
	"sync"
)

// The float32 filter gradient as one GEMM per group over the whole batch:
//
//	dw_g (O/G × C/G·KH·KW) = dy_g (O/G × N·OH·OW) · im2col_g (C/G·KH·KW × N·OH·OW)ᵀ
//
// The depth of this product runs over the batch's output positions, which
// is the contiguous axis of both operands, so both are packed transposed:
// dy's rows with the GEMM's transposing packer, image by image, and
// im2col's with Conv2D's implicit-im2col packer (conv_gemm_pack.go) into a
// 32×32 block that the same transposing packer turns into the B panel. No
// im2col matrix is written and, unlike a product per image, each tile of
// dw accumulates the whole batch in the micro-kernel's registers, one
// depth slice after another, instead of being read and written once per
// image (on 10×10 maps a per-image product has a depth of 100).
//
// The sum over the batch is canonical (BatchGroup, conv_grad.go): each
// group of BatchGroup images gets a partial sum of its own, computed from
// zero, and the partials are added into dw in group order. Where a
// group's positions fit one depth slice (kc), the partial is the
// micro-kernel's registers and the store adds it to dw; otherwise the
// group is cut into slices fixed by the shape and counted from the group's
// first image (whole images when an image has at most kc positions, else
// equal pieces of one image), summed into a scratch block that is then
// added to dw. The tiles of dw are split between goroutines by columns,
// so each element is summed in the same order whatever the thread count
// or wherever the batch was cut into whole groups.

// convFilterGemmOff turns this path off (benchmarks compare paths).
var convFilterGemmOff bool

// convFilterGemmOK reports whether Conv2DGradFilter on float32 takes this
// path: a convolution that is not a plain product per image (those run
// one GEMM per image already, see Conv2DGradFilter), is not one the
// direct filter kernel serves better (few output channels per group, or
// maps wide enough for its 16-lane rows: OutW ≥ 64), and fits the int32
// tables of the packer. Measured on ppyoloe_s's layers at batch 8, one
// thread (BenchmarkConvGradPPYOLOE), against the direct kernel: 3×3 on
// 10×10 maps 192→192 15.4 → 5.3 ms, 384→68 10.2 → 4.4; on 20×20 96→96
// 11.2 → 5.8; on 40×40 48→48 8.0 → 6.9, 96→68 20.3 → 16.5; but on 80×80
// 24→24 6.6 against 8.3 and on 160×160 16→16 13 against 18. Against
// im2col and a GEMM per image (strided): 3×3/2 256→384 on 20×20 21.4 →
// 15.6 ms, 128→192 on 40×40 22.6 → 17.4, 64→96 on 80×80 22.1 → 19.3.
// Those were on AMD Zen 4; on Zen 5 the GEMM wins on the wide maps too
// from 16 output channels (convFilterGemmMinOWide).
func (p Conv2DParams) convFilterGemmOK() bool {
	og := p.O / p.Groups
	if convFilterGemmOff || p.direct() || !p.convGemmOK() || og < convFilterGemmMinO {
		return false
	}
	if !p.convDirectFilter() {
		return true
	}
	if p.OutW() >= 64 {
		return og >= convFilterGemmMinOWide
	}
	return og >= convFilterGemmMinODirect
}

// convFilterGemmMinO is the fewest output channels per group for which
// this path is taken: with fewer, most of the micro-kernel's rows are
// padding. Where the direct kernel could run it takes more: on LeNet's
// 6→16 5×5 with 10×10 outputs (batch 64, one thread) the direct kernel
// takes 0.55 ms, the GEMM 0.87 (convFilterGemmMinODirect). On maps at
// least 64 wide, which fill the direct kernel's 16-lane rows, the GEMM
// still wins from 16 output channels (convFilterGemmMinOWide; ppyoloe_s at
// batch 8 on Zen 5, CPU ms, one thread / two: 16→32 3×3 on 160×160 27–37
// → 18–20 / 14.5–16 → 9.5–12.4, 16→16 on 160×160 16–21 → 14–18 / 8.3–8.6
// → 7.8–8.8, 24→24 on 80×80 6.5–8.8 → 5.7–6.6 / 2.8–3.8 → 2.7–2.9).
const (
	convFilterGemmMinO       = 8
	convFilterGemmMinODirect = 32
	convFilterGemmMinOWide   = 16
)

// convFilterJob is one Conv2DGradFilter call on this path, recycled like
// convGemmJob.
type convFilterJob struct {
	p          Conv2DParams
	dy, x, dw  []float32
	kern       *gemmKernel[float32]
	ktab       []int32
	k, og, ohw int // depth of the convolution (dw's columns), rows of dw per group, positions per image
	imgs       int // images per depth slice, when an image has at most kc positions; else 0
	sub        int // positions per slice otherwise
	maxKB      int // deepest slice
	gridR      int // work items per group: gridR × gridC blocks of dw
	gridC      int
	run        func(worker, item int)
	into       bool // add to dw: the first slice accumulates too
}

var convFilterJobs = sync.Pool{New: func() any {
	j := new(convFilterJob)
	j.run = j.item
	return j
}}

// conv2DGradFilterGemm is Conv2DGradFilter on this path; dw is fully
// written, or added to (into: every slice accumulates).
func conv2DGradFilterGemm(p Conv2DParams, dy, x, dw []float32, threads int, into bool) {
	cg, og := p.C/p.Groups, p.O/p.Groups
	ohw := p.OutH() * p.OutW()
	if len(x) < p.N*p.C*p.H*p.W || len(dw) < p.filterSize() || len(dy) < p.N*p.O*ohw {
		panic("kernels: conv2d filter gradient operands shorter than their shapes")
	}
	j := convFilterJobs.Get().(*convFilterJob)
	j.p, j.dy, j.x, j.dw, j.into = p, dy, x, dw, into
	j.kern = sgemmActive.Load()
	j.k, j.og, j.ohw = cg*p.KH*p.KW, og, ohw
	if need := 4 * j.k; cap(j.ktab) < need {
		j.ktab = make([]int32, need)
	}
	j.ktab = convKTab(p, j.ktab[:cap(j.ktab)])
	kc := j.kern.kc
	if ohw <= kc {
		j.imgs, j.sub = min(kc/ohw, BatchGroup), 0
		j.maxKB = min(j.imgs, p.N) * ohw
	} else {
		j.imgs, j.sub = 0, balancedBlock(ohw, kc, 16)
		j.maxKB = j.sub
	}
	// Rows in blocks whose packed slices stay in L2 (as gemmStreams), the
	// columns split so that every goroutine gets work.
	nr := j.kern.nr
	j.gridR = ceilDiv(og, 4*j.kern.mc)
	work := og * j.k * p.N * ohw * p.Groups
	t := max(1, min(threads, runtime.GOMAXPROCS(0), work/gemmMinWork))
	j.gridC = 1
	if per := ceilDiv(t, p.Groups*j.gridR); per > 1 {
		j.gridC = min(per, ceilDiv(j.k, nr))
	}
	items := p.Groups * j.gridR * j.gridC
	if t <= 1 {
		for i := range items {
			j.item(0, i)
		}
	} else {
		perfRun(t, items, j.run)
	}
	j.p, j.dy, j.x, j.dw, j.kern = Conv2DParams{}, nil, nil, nil, nil
	convFilterJobs.Put(j)
}

// groupSlices returns how many depth slices the group of images [n0, n1)
// is cut into.
func (j *convFilterJob) groupSlices(n0, n1 int) int {
	if j.imgs > 0 {
		return ceilDiv(n1-n0, j.imgs)
	}
	return (n1 - n0) * ceilDiv(j.ohw, j.sub)
}

// slice returns depth slice s of the group whose first image is n0: its
// first column of the im2col matrix (image · OH·OW + position) and its
// depth.
func (j *convFilterJob) slice(n0, n1, s int) (q0, kb int) {
	if j.imgs > 0 {
		a := n0 + s*j.imgs
		return a * j.ohw, (min(a+j.imgs, n1) - a) * j.ohw
	}
	per := ceilDiv(j.ohw, j.sub)
	n, pos := n0+s/per, s%per*j.sub
	return n*j.ohw + pos, min(j.sub, j.ohw-pos)
}

// item computes work item i: group i / (gridR·gridC), then one block of
// dw's rows (output channels) and columns (im2col rows).
func (j *convFilterJob) item(_, i int) {
	per := j.gridR * j.gridC
	g, b := i/per, i%per
	r0, r1 := panelRange(j.og, j.kern.mr, j.gridR, b/j.gridC)
	c0, c1 := panelRange(j.k, j.kern.nr, j.gridC, b%j.gridC)
	if r0 == r1 || c0 == c1 {
		return
	}
	ws := convScratchPool.Get().(*convScratch)
	j.block(ws, g, r0, r1, c0, c1)
	convScratchPool.Put(ws)
}

// block computes rows [r0, r1) and columns [c0, c1) of group g's dw: per
// group of images and depth slice it packs the rows' dy once, then, nr
// columns at a time, packs the im2col panel and runs its tiles while the
// panel is in L1. A group of several slices sums into part (rows ×
// (c1−c0)), then added to dw; the first group writes dw itself unless
// the gradient is added into dw (into).
func (j *convFilterJob) block(ws *convScratch, g, r0, r1, c0, c1 int) {
	p, kern := j.p, j.kern
	mr, nr := kern.mr, kern.nr
	rows, width := r1-r0, c1-c0
	cg := p.C / p.Groups
	xg := j.x[g*cg*p.H*p.W:]
	dwg := j.dw[(g*j.og+r0)*j.k:]
	ap, bp, tmp := ws.panels(ceilDiv(rows, mr)*mr*j.maxKB, nr*j.maxKB, mr*nr)
	blk := ws.cBlock(nr * nr) // one im2col block, before its transpose
	pk := kern.pack.orDefault()
	s := convColsStride(j.maxKB)
	var (
		pc   *convFilterPart
		part []float32
	)
	for n0 := 0; n0 < p.N; n0 += BatchGroup {
		n1 := min(n0+BatchGroup, p.N)
		slices := j.groupSlices(n0, n1)
		own := n0 == 0 && !j.into // the group's sum is dw's first term
		dst, ldd := dwg[c0:], j.k
		if slices > 1 && !own {
			if pc == nil {
				pc = convFilterParts.Get().(*convFilterPart)
				part = pc.get(rows * width)
			}
			dst, ldd = part, width
		}
		for sl := range slices {
			q0, kb := j.slice(n0, n1, sl)
			var beta float32
			if sl > 0 || slices == 1 && !own {
				beta = 1 // later slices accumulate onto the first; a lone slice onto dw
			}
			j.packDY(ap, pk, g, r0, rows, q0, kb)
			cols := convColTab(p, q0, kb, ws.colTab(3*s))
			cs := convColsStride(kb)
			for jc := c0; jc < c1; jc += nr {
				nw := min(nr, c1-jc)
				kt := j.ktab[4*jc : 4*(jc+nw)]
				for qa := 0; qa < kb; qa += nr {
					cw := min(nr, kb-qa)
					convPack(blk, xg, kt, nw, cols[qa:], cs, cw, p.H, p.W)
					pk.transpose(bp[qa*nr:], blk, cw, cw, nw, nr)
				}
				for ir := 0; ir < rows; ir += mr {
					gemmTile(kern, ap, bp, tmp, rows, nw, kb, ir, 0, 1, beta, dst[jc-c0:], ldd)
				}
			}
		}
		if slices > 1 && !own {
			add2D(dwg[c0:], j.k, part, width, rows, width)
		}
	}
	if pc != nil {
		convFilterParts.Put(pc)
	}
}

// convFilterPart is block's scratch for a group's partial sum.
type convFilterPart struct{ buf []float32 }

var convFilterParts = sync.Pool{New: func() any { return new(convFilterPart) }}

// get returns the buffer resized to n elements.
func (c *convFilterPart) get(n int) []float32 {
	if cap(c.buf) < n {
		c.buf = make([]float32, n)
	}
	return c.buf[:n]
}

// packDY packs rows [r0, r0+rows) of group g's dy over the depth slice
// [q0, q0+kb) into ap as the GEMM's A panels, one run of positions per
// image.
func (j *convFilterJob) packDY(ap []float32, pk panelPackers[float32], g, r0, rows, q0, kb int) {
	mr := j.kern.mr
	for ir := 0; ir < rows; ir += mr {
		d := ap[ir*kb : ir*kb+kb*mr]
		h := min(mr, rows-ir)
		for q := q0; q < q0+kb; {
			n, pos := q/j.ohw, q%j.ohw
			run := min(q0+kb-q, j.ohw-pos)
			src := j.dy[(n*j.p.O+g*j.og+r0+ir)*j.ohw+pos:]
			pk.transpose(d[(q-q0)*mr:], src, j.ohw, run, h, mr)
			q += run
		}
	}
}
