package kernels

// Column-strided convolutions without gathered panels. A convolution with
// column stride 2 (the detector's downsampling layers and its stem) reads
// every other input element along an output row, so the plain product's
// im2col panels, whose lanes run over output positions, must be gathered
// (convPackPairsF32): on 32→48 3×3/2 at 160×160 the gathering took as long
// as the multiply-adds. Computed transposed instead — Cᵀ = im2colᵀ · wᵀ,
// lanes over output channels, the weights packed once as the B operand —
// the micro-kernel broadcasts one input element per output position and k
// step, and a broadcast can read it straight from the input at any
// stride (the generator's stridedAKernel): a tile of output positions in
// one output row whose taps all lie inside the input packs nothing. Tiles
// at the padded border pack their A panel as blockT does. The block is
// transposed into out's planes 16×16 in registers, and the epilogue runs
// over out as the plain product's passes do (convEpiBlock), on blocks of
// about convEpiElems: per output row (40 positions by 96 channels at
// 80×80 → 40×40) its calls cost a tenth of the layer.
//
// Every element of C is the same chain of fused multiply-adds over the
// same slices of the depth as in the plain product, stored the same way,
// and the epilogue is the plain product's, so the bits are the same.

// convStridedKernel is a micro-kernel whose A is read in place, rows two
// elements apart, at a + koff[4s] for k step s (stridedAKernel).
type convStridedKernel func(k int, a *float32, koff *int32, b, c *float32, ldc int, alpha, beta float32)

// convStrided3Kernel is convStridedKernel for three vectors of output
// channels: the first two from the packed panel at b, the third from the
// next panel at b2.
type convStrided3Kernel func(k int, a *float32, koff *int32, b, b2, c *float32, ldc int, alpha, beta float32)

// convStrided3Max is the most rows of a three-vector kernel (27
// accumulators).
const convStrided3Max = 9

// convStridedOff, when set, keeps column-strided convolutions on the
// plain product (tests and benchmarks compare the two); convStrided3Off
// runs three vectors of output channels as two and one.
var convStridedOff, convStrided3Off bool

// convGemmStridedOK reports whether conv2DGemm may compute p as the
// strided transposed product (not when a test forces the orientation):
// column stride 2 with the kernels for it, output channels per group in
// whole vectors (so Cᵀ's blocks need no padding), output rows of at
// least convStridedMinRow positions, and a kernel wider than 1×1: with a
// 1×1 kernel's short depth the transposes cost more than the gathers
// they replace (ResNet's 64→128 1×1/2 downsampling on 16×16, batch 64,
// one thread, CPU µs: 432–570 plain, 629–739 strided).
func convGemmStridedOK(p Conv2DParams, kern *gemmKernel[float32]) bool {
	ks := convStridedKernels(kern)
	return !convStridedOff && convGemmOrient == 0 && ks != nil && p.SW == 2 && p.O/p.Groups%kern.lanes == 0 && p.O/p.Groups >= kern.lanes &&
		p.KH*p.KW > 1 && p.OutW() >= convStridedMinRow && !convGemmTransposed(p, kern)
}

// convStridedMinRow is the narrowest output row the strided product
// takes. The detector's 10×10 outputs (192→192 and 256→384 3×3/2 on
// 20×20) gain from it in tiles of 9 rows, while the plain product's last
// panel there is 4 positions in a 16-lane vector: batch 1, CPU µs,
// 469–532 → 391–400 and 1067–1983 → 1028–1162. ResNet's 64→128 3×3/2
// with rows of 8 was even (batch 8: 483–512 plain, 496–566 strided), so
// it is left as it was.
const convStridedMinRow = 10

// blockS computes rows [r0, r1) (output positions over the batch) and
// columns [c0, c1) (output channels of group g) of Cᵀ, a few output rows
// of one image at a time into a scratch block, then transposes the block
// into out's planes (scatterT) and applies the epilogue there. Interior stretches of the
// rows run in place in tiles of balanced heights (39 positions: three of
// 13, not 14, 14 and 11); the positions that read padding (an output
// row's first one, say) are gathered across the rows into packed tiles
// of up to 14 (one position alone is a 1-row tile, which runs at a
// seventh of the 14-row one's rate per multiply-add).
func (j *convGemmJob) blockS(ws *convScratch, g, r0, r1, c0, c1 int) {
	p, kern := j.p, j.kern
	mr := kern.mr
	width := c1 - c0
	ow := p.OutW()
	o0 := g*(p.O/p.Groups) + c0
	// Rows per block: its Cᵀ about convEpiElems, as the plain product's
	// epilogue passes.
	span := max(1, convEpiElems/(ow*width)) * ow
	from := r0 // the first position without the epilogue
	for q := r0; q < r1; {
		pos := q % j.ohw
		e := min(r1, q-pos%ow+span, q-pos+j.ohw)
		rows := e - q
		cs := ws.cBlock(rows*width + width*mr)
		cs, tb := cs[:rows*width], cs[rows*width:]
		for pc := 0; pc < j.k; pc += j.kc {
			var pend stridedBorder
			for r := q; r < e; {
				re := min(e, r-r%j.ohw%ow+ow) // the output row's end
				a, b := j.stridedInterior(r, re)
				for t := r; t < a; t++ {
					j.stridedBorderAdd(ws, &pend, t, g, pc, c0, width, q, cs, tb)
				}
				cnt := b - a
				tiles := ceilDiv(cnt, mr)
				for i := range tiles {
					t := a + i*cnt/tiles
					j.stridedTile(t, a+(i+1)*cnt/tiles-t, g, pc, c0, width, cs[(t-q)*width:])
				}
				for t := b; t < re; t++ {
					j.stridedBorderAdd(ws, &pend, t, g, pc, c0, width, q, cs, tb)
				}
				r = re
			}
			j.stridedBorderFlush(ws, &pend, g, pc, c0, width, q, cs, tb)
		}
		j.scatterT(cs, o0, q, rows, width)
		if j.epi && ((e-from)*width >= convEpiElems || e == r1) {
			convEpiBlock(&p.Epilogue, j.out, p.O, o0, width, from, e, j.ohw)
			from = e
		}
		q = e
	}
}

// stridedSlice returns the slice of the depth at pc: its depth, the rows
// of the im2col row table and the multiplier of C's old values (0 for
// the first slice, 1 for those that add to it).
func (j *convGemmJob) stridedSlice(pc int) (kb int, kt []int32, beta float32) {
	kb = min(j.kc, j.k-pc)
	if pc > 0 {
		beta = 1
	}
	return kb, j.ktab[4*pc : 4*(pc+kb)], beta
}

// stridedTile runs the in-place tile of the h output positions from
// column t of C (stridedInterior's) for the slice of the depth at pc and
// the output channels [c0, c0+width) of group g, into cs (rows width
// apart, from the tile's first).
func (j *convGemmJob) stridedTile(t, h, g, pc, c0, width int, cs []float32) {
	p, kern := j.p, j.kern
	kb, kt, beta := j.stridedSlice(pc)
	base, ok := j.stridedInPlace(t, h)
	if !ok {
		panic("kernels: strided tile reads padding")
	}
	xg, _ := j.group(g)
	ks, k3 := convStridedKernels(kern), convStrided3Kernels(kern)
	for jr := 0; jr < width; jr += kern.nr {
		b := j.weights(g, pc, kb, c0+jr)
		if width-jr == 3*kern.lanes && k3 != nil && !convStrided3Off {
			// The last three vectors in one pass, in tiles of at most
			// convStrided3Max rows, rather than two and then one.
			b2 := j.weights(g, pc, kb, c0+jr+kern.nr)
			parts := ceilDiv(h, convStrided3Max)
			for i := range parts {
				t0, t1 := i*h/parts, (i+1)*h/parts
				k3[t1-t0-1](kb, &xg[base+t0*p.SW], &kt[0], &b[0], &b2[0], &cs[t0*width+jr], width, 1, beta)
			}
			return
		}
		v := min(kern.nr, width-jr) / kern.lanes
		ks[h-1][v-1](kb, &xg[base], &kt[0], &b[0], &cs[jr], width, 1, beta)
	}
}

// stridedBorder is the output positions (columns of C) that read padding,
// gathered for one packed tile.
type stridedBorder struct {
	q [16]int
	n int
}

// stridedBorderAdd adds column t of C to the pending border tile and runs
// the tile when it is full.
func (j *convGemmJob) stridedBorderAdd(ws *convScratch, pend *stridedBorder, t, g, pc, c0, width, q int, cs, tb []float32) {
	pend.q[pend.n] = t
	if pend.n++; pend.n == j.kern.mr {
		j.stridedBorderFlush(ws, pend, g, pc, c0, width, q, cs, tb)
	}
}

// stridedBorderFlush runs the pending border tile: its im2col columns
// packed as blockT packs them (zeros for padding), the product into tb
// (its rows loaded from cs first when the slice adds to them), then
// copied back to the rows of cs (the block from column q of C).
func (j *convGemmJob) stridedBorderFlush(ws *convScratch, pend *stridedBorder, g, pc, c0, width, q int, cs, tb []float32) {
	h := pend.n
	if h == 0 {
		return
	}
	pend.n = 0
	p, kern := j.p, j.kern
	mr := kern.mr
	kb, kt, beta := j.stridedSlice(pc)
	s := convColsStride(mr)
	tab := ws.colTab(3 * s)
	base, iy, ix := tab[:s], tab[s:2*s], tab[2*s:]
	ow, chw := p.OutW(), p.C*p.H*p.W
	for i, t := range pend.q[:h] {
		n, pos := t/j.ohw, t%j.ohw
		y, x := pos/ow*p.SH-p.PH, pos%ow*p.SW-p.PW
		base[i], iy[i], ix[i] = int32(n*chw+y*p.W+x), int32(y), int32(x)
	}
	for i := h; i < s; i++ {
		base[i], iy[i], ix[i] = 0, convColOutside, 0
	}
	ap, _, _ := ws.panels(mr*j.kc, kern.nr*j.kc, mr*kern.nr)
	xg, _ := j.group(g)
	convPack(ap, xg, kt, kb, tab, s, mr, p.H, p.W)
	if beta != 0 {
		for i, t := range pend.q[:h] {
			copy(tb[i*width:(i+1)*width], cs[(t-q)*width:])
		}
	}
	for jr := 0; jr < width; jr += kern.nr {
		v := min(kern.nr, width-jr) / kern.lanes
		b := j.weights(g, pc, kb, c0+jr)
		kern.edge[h-1][v-1](kb, &ap[0], &b[0], &tb[jr], width, 1, beta)
	}
	for i, t := range pend.q[:h] {
		copy(cs[(t-q)*width:(t-q+1)*width], tb[i*width:])
	}
}

// scatterT writes the block cs of Cᵀ (rows output positions from column
// q of C, one image's, by width output channels from o0) into out's
// planes (convStridedScatter).
func (j *convGemmJob) scatterT(cs []float32, o0, q, rows, width int) {
	n, pos := q/j.ohw, q%j.ohw
	convStridedScatter(j.out[(n*j.p.O+o0)*j.ohw+pos:], cs, j.ohw, width, rows, width)
}

// convStridedScatterGo is convStridedScatter's loop: d[o*ldd+i] =
// src[i*lds+o] for i < rows, o < cols.
func convStridedScatterGo(d, src []float32, ldd, lds, rows, cols int) {
	for o := range cols {
		for i := range rows {
			d[o*ldd+i] = src[i*lds+o]
		}
	}
}

// stridedInterior returns the columns [a, b) of C within [q, e) (one
// output row's) whose taps all lie inside the input, q ≤ a ≤ b ≤ e: none
// on an output row that reads padding.
func (j *convGemmJob) stridedInterior(q, e int) (a, b int) {
	p := j.p
	ow := p.OutW()
	pos := q % j.ohw
	y := pos/ow*p.SH - p.PH
	if y < 0 || y+(p.KH-1)*p.DH >= p.H {
		return e, e
	}
	row := q - pos%ow                         // the output row's first column
	lo := ceilDiv(p.PW, p.SW)                 // the first ox with x ≥ 0
	hi := (p.W-1-(p.KW-1)*p.DW+p.PW)/p.SW + 1 // past the last ox inside
	if p.W-1-(p.KW-1)*p.DW+p.PW < 0 {
		hi = 0
	}
	a = min(max(row+lo, q), e)
	b = min(max(row+hi, a), e)
	return a, b
}

// stridedInPlace reports whether the h output positions from column q of
// C, all in one output row, read only input inside the sample for every
// tap, and returns the first one's input offset (as convColTab's base).
func (j *convGemmJob) stridedInPlace(q, h int) (base int, ok bool) {
	p := j.p
	ow := p.OutW()
	n, pos := q/j.ohw, q%j.ohw
	oy, ox := pos/ow, pos%ow
	y, x := oy*p.SH-p.PH, ox*p.SW-p.PW
	if y < 0 || y+(p.KH-1)*p.DH >= p.H || x < 0 || x+(h-1)*p.SW+(p.KW-1)*p.DW >= p.W {
		return 0, false
	}
	return n*p.C*p.H*p.W + y*p.W + x, true
}
