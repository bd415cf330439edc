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
// Convolutions with column stride 1 on output rows of 40 positions or
// more (the detector's stage layer on 40×40) take it too: the
// plain product reads a panel in place only when its 32 positions lie in
// one output row's interior, so on those planes it packs nearly every
// panel. The stride-2 kernels run such a row's even positions and then
// its odd ones (stridedRun).
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

// convStridedStep is the distance (input elements) between the rows of A
// that the strided kernels read: the column stride of 2 they were made
// for, and that of every other position with column stride 1
// (stridedRun).
const convStridedStep = 2

// convStridedS1MinRow is the narrowest output row the strided product
// takes with column stride 1. The detector's 48→48 3×3 on 40×40 gains
// from it, with padded rows (convStridedS1PadMax). Its 96→96 3×3 on
// 20×20 gained at batch 8 (CPU µs, one thread 3127–3349 → 2875–3285, two
// 1518 → 1478) but lost at batch 1 on two threads (wall 225–244 →
// 254–264) and was even on one; ResNet's 128→128 3×3 on 8×8 lost (batch
// 8, 823–860 → 964–1259), the detector's 192→192 3×3 on 10×10 was even.
const convStridedS1MinRow = 40

// convGemmStridedOK reports whether conv2DGemm may compute p as the
// strided transposed product (not when a test forces the orientation):
// column stride 2 with the kernels for it (or 1 on output rows of at
// least convStridedS1MinRow positions), output channels per group in
// whole vectors (so Cᵀ's blocks need no padding), output rows of at
// least convStridedMinRow positions, and a kernel wider than 1×1: with a
// 1×1 kernel's short depth the transposes cost more than the gathers
// they replace (ResNet's 64→128 1×1/2 downsampling on 16×16, batch 64,
// one thread, CPU µs: 432–570 plain, 629–739 strided).
func convGemmStridedOK(p Conv2DParams, kern *gemmKernel[float32]) bool {
	ks := convStridedKernels(kern)
	return !convStridedOff && convGemmOrient == 0 && ks != nil && (p.SW == 2 || p.SW == 1 && p.OutW() >= convStridedS1MinRow) && p.O/p.Groups%kern.lanes == 0 && p.O/p.Groups >= kern.lanes &&
		p.KH*p.KW > 1 && p.OutW() >= convStridedMinRow(p) && !convGemmTransposed(p, kern)
}

// convStridedMinRow is the narrowest output row the strided product
// takes: 10 positions, or 8 with padded rows (stridedPadInit). The
// detector's 10×10 outputs (192→192 and 256→384 3×3/2 on 20×20) gain
// from it in tiles of 9 rows, while the plain product's last panel there
// is 4 positions in a 16-lane vector: batch 1, CPU µs, 469–532 → 391–400
// and 1067–1983 → 1028–1162. ResNet's 64→128 3×3/2 with rows of 8 was
// even with border tiles (batch 8: 483–512 plain, 496–566 strided), and
// gains with padded rows (batch 64, CPU ms: 4.11–5.52 → 3.62–4.30).
func convStridedMinRow(p Conv2DParams) int {
	if p.convDirectFwdPad().size() <= p.stridedPadMax() && (p.PH > 0 || p.PW > 0) {
		return 8
	}
	return 10
}

// blockS computes rows [r0, r1) (output positions over the batch) and
// columns [c0, c1) (output channels of group g) of Cᵀ, a few output rows
// of one image at a time into a scratch block, then transposes the block
// into out's planes (scatterT) and applies the epilogue there. Interior
// stretches of the rows run in place in tiles of balanced heights (39
// positions: three of 13, not 14, 14 and 11); the positions that read
// padding (an output row's first one, say) are gathered across the rows
// into packed tiles of up to 14 (one position alone is a 1-row tile,
// which runs at a seventh of the 14-row one's rate per multiply-add).
// With padded rows (stridedPadInit) the block's input rows are copied
// into them first, and every position runs in place.
func (j *convGemmJob) blockS(ws *convScratch, g, r0, r1, c0, c1 int) {
	p, kern := j.p, j.kern
	mr := kern.mr
	width := c1 - c0
	ow := p.OutW()
	o0 := g*(p.O/p.Groups) + c0
	xg, _ := j.group(g)
	var xp []float32
	if j.padS.ch > 0 {
		xp = ws.stridedPadded(j.padS)
	}
	// Rows per block: its Cᵀ about convEpiElems, as the plain product's
	// epilogue passes.
	span := max(1, convEpiElems/(ow*width)) * ow
	from := r0 // the first position without the epilogue
	for q := r0; q < r1; {
		pos := q % j.ohw
		e := min(r1, q-pos%ow+span, q-pos+j.ohw)
		rows := e - q
		tpLen := j.stridedPlanesLen(rows, width)
		cs := ws.cBlock(rows*width + width*mr + tpLen)
		cs, tb, tp := cs[:rows*width], cs[rows*width:rows*width+width*mr], cs[rows*width+width*mr:]
		if xp != nil && (q == r0 || pos == 0) {
			// The rows of every block of this image at once: one copy
			// per plane, not one per block (on 20×20 planes of 96
			// channels the per-block copies took 4% of the layer).
			last := (min(r1, q-pos+j.ohw) - 1) % j.ohw / ow
			j.stridedFillRows(xp, xg[q/j.ohw*p.C*p.H*p.W:], pos/ow*p.SH, last*p.SH+(p.KH-1)*p.DH+1)
		}
		for pc := 0; pc < j.k; pc += j.kc {
			var pend stridedBorder
			for r := q; r < e; {
				re := min(e, r-r%j.ohw%ow+ow) // the output row's end
				if xp != nil {
					rp := r % j.ohw
					j.stridedRun(xp, rp/ow*p.SH*j.padS.wp+rp%ow*p.SW, re-r, j.ktabPad, g, pc, c0, width, cs[(r-q)*width:])
					r = re
					continue
				}
				a, b := j.stridedInterior(r, re)
				for t := r; t < a; t++ {
					j.stridedBorderAdd(ws, &pend, t, g, pc, c0, width, q, cs, tb)
				}
				if b > a {
					base, ok := j.stridedInPlace(a, b-a)
					if !ok {
						panic("kernels: strided tile reads padding")
					}
					j.stridedRun(xg, base, b-a, j.ktab, g, pc, c0, width, cs[(a-q)*width:])
				}
				for t := b; t < re; t++ {
					j.stridedBorderAdd(ws, &pend, t, g, pc, c0, width, q, cs, tb)
				}
				r = re
			}
			j.stridedBorderFlush(ws, &pend, g, pc, c0, width, q, cs, tb)
		}
		j.scatterT(cs, tp, o0, q, rows, width)
		if j.epi && ((e-from)*width >= convEpiElems || e == r1) {
			convEpiBlock(&p.Epilogue, j.out, p.O, o0, width, from, e, j.ohw)
			from = e
		}
		q = e
	}
}

// stridedSlice returns the slice of the depth at pc: its depth, the rows
// of the im2col row table ktab and the multiplier of C's old values (0
// for the first slice, 1 for those that add to it).
func (j *convGemmJob) stridedSlice(pc int, ktab []int32) (kb int, kt []int32, beta float32) {
	kb = min(j.kc, j.k-pc)
	if pc > 0 {
		beta = 1
	}
	return kb, ktab[4*pc : 4*(pc+kb)], beta
}

// stridedRun runs the cnt output positions of one output row whose first
// one's taps start at src[base] (offsets ktab, all inside src) in place,
// for the slice of the depth at pc and the output channels [c0,
// c0+width) of group g, into cs (rows width apart, from the run's first).
// The kernels read rows convStridedStep input elements apart: column
// stride 2 runs the positions in order; column stride 1 runs the even
// positions and then the odd ones (stridedPhase), each reading every
// other input element into every other row of cs: the same multiply-adds
// per element of C, so the same bits, without a stride-1 set of kernels.
func (j *convGemmJob) stridedRun(src []float32, base, cnt int, ktab []int32, g, pc, c0, width int, cs []float32) {
	if j.p.SW == convStridedStep {
		j.stridedPhase(src, base, cnt, 1, ktab, g, pc, c0, width, cs)
		return
	}
	j.stridedPhase(src, base, (cnt+1)/2, 2, ktab, g, pc, c0, width, cs)
	j.stridedPhase(src, base+1, cnt/2, 2, ktab, g, pc, c0, width, cs[width:])
}

// stridedPhase runs cnt output positions il apart (il·SW =
// convStridedStep input elements), the first one's taps at src[base],
// into cs's rows il·width apart, in tiles of balanced heights.
func (j *convGemmJob) stridedPhase(src []float32, base, cnt, il int, ktab []int32, g, pc, c0, width int, cs []float32) {
	kern := j.kern
	kb, kt, beta := j.stridedSlice(pc, ktab)
	ks, k3 := convStridedKernels(kern), convStrided3Kernels(kern)
	ldc := il * width
	mr := kern.mr
	if width == 3*kern.lanes && k3 != nil && !convStrided3Off {
		// Only three-vector passes: tiles of up to their height, not
		// of 14 split in two (10 positions as 5 and 5).
		mr = convStrided3Max
	}
	tiles := ceilDiv(cnt, mr)
	for i := range tiles {
		t0 := i * cnt / tiles
		h := (i+1)*cnt/tiles - t0
		a, c := src[base+t0*convStridedStep:], cs[t0*ldc:]
		for jr := 0; jr < width; jr += kern.nr {
			b := j.weights(g, pc, kb, c0+jr)
			if width-jr == 3*kern.lanes && k3 != nil && !convStrided3Off {
				// The last three vectors in one pass, in tiles of at most
				// convStrided3Max rows, rather than two and then one.
				b2 := j.weights(g, pc, kb, c0+jr+kern.nr)
				parts := ceilDiv(h, convStrided3Max)
				for i := range parts {
					t0, t1 := i*h/parts, (i+1)*h/parts
					k3[t1-t0-1](kb, &a[t0*convStridedStep], &kt[0], &b[0], &b2[0], &c[t0*ldc+jr], ldc, 1, beta)
				}
				break
			}
			v := min(kern.nr, width-jr) / kern.lanes
			ks[h-1][v-1](kb, &a[0], &kt[0], &b[0], &c[jr], ldc, 1, beta)
		}
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
	kb, kt, beta := j.stridedSlice(pc, j.ktab)
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
// planes (convStridedScatter), through tp (stridedPlanesLen) when the
// planes alias (stridedPlanesAlias).
func (j *convGemmJob) scatterT(cs, tp []float32, o0, q, rows, width int) {
	n, pos := q/j.ohw, q%j.ohw
	dst := j.out[(n*j.p.O+o0)*j.ohw+pos:]
	if !j.stridedPlanesAlias() {
		convStridedScatter(dst, cs, j.ohw, width, rows, width)
		return
	}
	ld := stridedPlanesLd(rows)
	convStridedScatter(tp, cs, ld, width, rows, width)
	for o := range width {
		copy(dst[o*j.ohw:o*j.ohw+rows], tp[o*ld:o*ld+rows])
	}
}

// convStridedAliasElems is the plane size (elements) of which a multiple
// makes the output planes alias in the L1 cache: 16 stores of one 16×16
// transpose to planes 2 KiB apart or a multiple of it fall into a few
// cache sets, and ran 4–8 times slower than to planes 1 KiB or 6.25 KiB
// apart (a 256-position block of 64 channels into 32×32 planes 9.8 µs,
// into 33×33-sized ones 1.7). Those blocks go to planes stridedPlanesLd
// apart first and then a copy per plane, which writes each one in order.
const convStridedAliasElems = 512

// stridedPlanesAlias reports whether the output planes alias in the L1
// cache (convStridedAliasElems).
func (j *convGemmJob) stridedPlanesAlias() bool { return j.ohw%convStridedAliasElems == 0 }

// stridedPlanesLd is the distance between the planes of scatterT's
// scratch for a block of rows positions: whole 64-byte lines and one
// more, so that they fall into different cache sets.
func stridedPlanesLd(rows int) int { return (rows+15)&^15 + 16 }

// stridedPlanesLen is the length of scatterT's scratch for a block of
// rows positions by width channels (0 when the planes do not alias).
func (j *convGemmJob) stridedPlanesLen(rows, width int) int {
	if !j.stridedPlanesAlias() {
		return 0
	}
	return width * stridedPlanesLd(rows)
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

// convStridedPadMax is the largest padded sample of a group (elements)
// whose rows the strided product copies into padded rows (stridedPadInit).
// ResNet's 7×7/2 stem on 64×64 (3×70×70) takes them: its output rows of
// 32 positions have 3 that read padding, and with the rows above and
// below the border tiles were 18% of the positions, packed and 18% of
// the time; copying the rows costs a few µs per image. The detector's
// samples (93 Ki elements and more) keep their border tiles, a few per
// cent of their positions.
const convStridedPadMax = 32 << 10

// convStridedS1PadMax is convStridedPadMax for column stride 1: 40×40
// planes of 48 channels (84 Ki elements padded) take padded rows. Their
// border tiles, the first and last position of every output row and the
// whole first and last rows, were a tenth of the positions packed, and
// the rows split into even and odd positions leave tiles of 9 or 10
// rather than 13 or 14 (48→48 3×3 on 40×40, batch 1, CPU µs: 405–459
// with border tiles, 359–373 padded).
const convStridedS1PadMax = 128 << 10

// stridedPadMax is the largest padded sample for which the strided
// product copies p's rows into padded rows.
func (p Conv2DParams) stridedPadMax() int {
	if p.SW == 1 {
		return convStridedS1PadMax
	}
	return convStridedPadMax
}

// convStridedPadOff, when set, keeps the strided product off padded rows
// (tests compare the two).
var convStridedPadOff bool

// stridedPadInit sets up the strided product's padded rows when p has
// padding and a sample small enough (convStridedPadMax): each block then
// copies its input rows into zero-padded rows and runs every position in
// place, reading the padding's zeros where the border tiles packed them.
// The products are the same multiply-adds in the same order, so the bits
// are the same.
func (j *convGemmJob) stridedPadInit() {
	p := j.p
	j.padS = convPadded{}
	if !j.strided || convStridedPadOff || p.PH == 0 && p.PW == 0 {
		return
	}
	pad := p.convDirectFwdPad()
	if pad.size() > p.stridedPadMax() {
		return
	}
	j.padS = pad
	pp := p
	pp.H, pp.W = pad.hp, pad.wp
	if need := 4 * j.k; cap(j.ktabPad) < need {
		j.ktabPad = make([]int32, need)
	}
	j.ktabPad = convKTab(pp, j.ktabPad[:cap(j.ktabPad)])
}

// stridedPadded returns the goroutine's padded rows for pad, their
// borders zero: kept with their geometry, so that a block copies only
// its input rows into them (convPadded.fillRows, which zeroes the
// borders of every row it fills, took a sixth of ResNet's 64→128 3×3/2
// at batch 64 on its 18×18 planes).
func (ws *convScratch) stridedPadded(pad convPadded) []float32 {
	if ws.padS != pad {
		n := pad.size()
		if cap(ws.pad) < n {
			ws.pad = make([]float32, n)
		}
		ws.pad = ws.pad[:n]
		clear(ws.pad)
		ws.padS = pad
	}
	return ws.pad
}

// stridedFillRows copies the input rows among the padded rows [r0, r1)
// of every plane of xp (stridedPadded's, j.padS) from src (the group's
// planes of one image).
func (j *convGemmJob) stridedFillRows(xp, src []float32, r0, r1 int) {
	for ch := range j.padS.ch {
		j.padS.copyRows(xp, src, ch, r0, r1)
	}
}
