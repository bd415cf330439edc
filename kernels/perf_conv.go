package kernels

import "sync"

// The direct forward convolution for float32 with unit strides: each
// output row of up to 16 columns is a sum of (input row slice × weight)
// terms accumulated in registers for up to 16 output channels and several
// rows at once (convRows), over a zero-padded copy of the sample's input,
// so that no im2col matrix is built and no GEMM packs it. It serves the
// layers with few output channels per group (LeNet's 1→6 and 6→16), for
// which the GEMM runs on thin, short matrices and the im2col copies cost
// as much as the products: measured on LeNet's layers (batch 64, one
// thread) it takes 0.4 and 0.55 of the time. (The same kernel computing
// the input gradient as a full correlation of the padded output gradient
// was slower than GEMM + col2im there: the padding doubles its products.)
//
// Every output element is one chain of fused multiply-adds over the steps
// in a fixed order (input channel, kernel row, kernel column for the
// forward; kernel row, output channel, kernel column for the input
// gradient), computed by one goroutine, so results do not depend on the
// thread count.

// convDirectMaxCh is the most channels per group on the accumulating side
// (outputs for the forward, inputs for the input gradient) for which the
// direct kernels are used.
const convDirectMaxCh = 16

// convDirectOff turns the direct kernels off, or the forward's epilogue in
// its kernel (epi), or its 2×2 pool in registers (poolRegs), so that
// benchmarks and tests compare the paths.
var convDirectOff struct{ fwd, bwd, filter, epi, poolRegs bool }

// convDirectFwd reports whether Conv2D on float32 uses the direct kernel:
// few output channels per group, or a shallow depth (C/G·KH·KW up to
// convDirectMaxDepth), where the GEMM's tiles do little work per pass
// over their output (measured with 8 images, one thread: 3→32 3×3 on
// 32×32 0.21 against 0.27 ms, 8→32 0.41 against 0.47, 1→32 5×5 0.12
// against 0.19; even at depth 144, 16→32 3×3).
func (p Conv2DParams) convDirectFwd() bool {
	return convRowOK() && !convDirectOff.fwd && p.SH == 1 && p.SW == 1 && !p.direct() && p.C/p.Groups > 0 &&
		(p.O/p.Groups <= convDirectMaxCh || p.C/p.Groups*p.KH*p.KW <= convDirectMaxDepth || p.convDirectWide())
}

// convDirectWide reports whether a deeper forward convolution still runs
// faster on the direct kernel than on the batched GEMM, which packs its
// im2col panels: output rows of whole 16-lane vectors, a padded sample
// (per group) small enough to stay in L2 while each block of 16 output
// channels reads it again, enough output positions that the weights'
// reordering (once per call) costs little; the depth is summed in the
// GEMM's slices (convDirectSlice), so that the two compute every element
// as the same chains of fused multiply-adds in the same order and give
// the same bits. One
// thread, CPU ms per call (-bench ConvAlgo with both forced), the small
// CNN's 32→64 layer on 16×16: batch 4 0.36–0.37 either way, batch 8
// 0.71–0.72 against 0.72–0.80, batch 64 6.0–6.3 against 6.7–6.9. At
// batch 1 (256 positions) the weights' reordering decided it, until it
// was done once at inference (conv_direct_packed.go): CPU µs per call
// with bias and ReLU (-bench ConvDirectPacked, three rounds under load),
// direct 48–50 with its weights packed once against the GEMM's 51–54
// packed once or 52 not; without the pack cache the direct kernel's
// 58–60 now loses to the GEMM's 52 there.
//
// A larger sample is read again by each block, but with at most
// convDirectWideBlocks blocks of output channels the direct kernel still
// wins, its tiles computing strips of rows (convDirectStrip) while
// their input is in cache: ppyoloe_s's 16→32 3×3 on 160×160 (a padded
// sample of 420 Ki elements) and 24→24 on 80×80, with bias and SiLU,
// one thread, the minimum over 40–160 calls alternating the two in one
// process, batch 1: 1.56–1.58 → 1.42–1.48 ms and 391–392 → 352–353 µs;
// batch 8: 14.7–16.3 → 13.4–15.3 ms and 3.42–3.51 → 3.22–3.36 ms.
//
// Deeper than one GEMM slice too: resnet18ish's 64→64 3×3 on 16×16
// (depth 576, two slices), whose GEMM packs every im2col panel (16-wide
// rows all touch the padding) and runs 64 rows as 4 × 14 + 8, with bias
// and ReLU and weights packed once, one thread, the minimum of 3 calls
// in 8 rounds alternating the two in one process under load: batch 64
// 10.0 → 7.7 ms (the direct kernel faster in 7 of 8 rounds), batch 8 and
// 1 (×8, ×64 calls) 7.6 → 7.0 and 6.7 → 6.6 ms.
func (p Conv2DParams) convDirectWide() bool {
	small := p.convDirectFwdPad().size() <= convDirectWideSample || ceilDiv(p.O/p.Groups, 16) <= convDirectWideBlocks
	return p.OutW()%16 == 0 && small && p.N*p.OutH()*p.OutW() >= convDirectWideCols
}

// convDirectSlice is how many steps of the depth the direct forward sums
// in one chain before the next slice adds onto it: all of them, but for
// a convolution the direct kernel takes only by convDirectWide, the
// GEMM's depth slices (balancedBlock of its kc), each later slice added
// onto the sums before as the GEMM's micro-kernel adds it onto C
// (convRowsEpi's add), so that the bits are those of the GEMM it
// replaces. (ResNet's 64→64 3×3 on 16×16, depth 576: two slices of 288.)
func (p Conv2DParams) convDirectSlice() int {
	depth := p.C / p.Groups * p.KH * p.KW
	if p.O/p.Groups <= convDirectMaxCh || depth <= convDirectMaxDepth {
		return depth
	}
	return balancedBlock(depth, sgemmActive.Load().kc, 1)
}

// convDirectWideSample is the largest padded sample (elements, 256 KiB)
// for convDirectWide with more than convDirectWideBlocks blocks of 16
// output channels per group, and convDirectWideCols the fewest output
// positions over the batch (one 16×16 map).
const (
	convDirectWideSample = 64 << 10
	convDirectWideBlocks = 2
	convDirectWideCols   = 256
)

// convDirectMaxDepth is the deepest convolution the forward direct kernel
// takes whatever its output channels.
const convDirectMaxDepth = 96

// convPadded is the zero-padded copy of one group of a sample: ch planes
// of hp×wp with the data at (top, left), plus 16 elements of slack for the
// loads of the last row.
type convPadded struct {
	ch, h, w, hp, wp, top, left int
}

func (c convPadded) size() int { return c.ch*c.hp*c.wp + 16 }

// fill writes src (ch planes of h×w) into buf's interior, a strided
// block copy per plane, and, when borders is set, zeroes its borders and
// slack. Nothing but fill and fillRows writes a padded buffer, so one
// already filled with the same geometry keeps its zero borders and a
// refill may skip them.
func (c convPadded) fill(buf, src []float32, borders bool) {
	buf = buf[:c.size()]
	plane := c.hp * c.wp
	for ch := range c.ch {
		bp := buf[ch*plane : (ch+1)*plane]
		if borders {
			clear(bp[:c.top*c.wp])
			clear(bp[(c.top+c.h)*c.wp:])
			for r := range c.h {
				row := bp[(c.top+r)*c.wp : (c.top+r+1)*c.wp]
				clear(row[:c.left])
				clear(row[c.left+c.w:])
			}
		}
		copy2D(bp[c.top*c.wp+c.left:], c.wp, src[ch*c.h*c.w:(ch+1)*c.h*c.w], c.w, c.h, c.w)
	}
	if borders {
		clear(buf[c.ch*plane:])
	}
}

// fillRows writes the padded rows [r0, r1) of every plane of buf from
// src (ch planes of h×w): the input rows among them, and zeros for their
// borders and the padding rows; with the last row, the slack too. A
// forward band needs only its own rows, so each goroutine that computes
// bands of one sample copies those, not the whole sample (1.6 MB for
// ppyoloe_s's 16→16 layer at 160×160, which each of two goroutines
// copied at batch 1). Rows narrower than convPadClearWidth are cleared
// whole before the copy: two calls of clear per row cost more than
// clearing the interior too (the small CNN's 32×16×16 input took 3–4 µs
// in 1,100 calls, 7% of the model at batches 1 and 8).
func (c convPadded) fillRows(buf, src []float32, r0, r1 int) {
	buf = buf[:c.size()]
	plane := c.hp * c.wp
	y0, y1 := max(r0, c.top)-c.top, min(r1, c.top+c.h)-c.top // the input rows among them
	whole := c.w < convPadClearWidth
	for ch := range c.ch {
		bp := buf[ch*plane : (ch+1)*plane]
		if y1 <= y0 || whole {
			clear(bp[r0*c.wp : r1*c.wp])
		} else {
			clear(bp[r0*c.wp : (c.top+y0)*c.wp])
			clear(bp[(c.top+y1)*c.wp : r1*c.wp])
			for y := y0; y < y1; y++ {
				row := bp[(c.top+y)*c.wp : (c.top+y+1)*c.wp]
				clear(row[:c.left])
				clear(row[c.left+c.w:])
			}
		}
		c.copyRows(buf, src, ch, r0, r1)
	}
	if r1 == c.hp {
		clear(buf[c.ch*plane:])
	}
}

// copyRows copies the input rows among the padded rows [r0, r1) of plane
// ch of buf from src (the sample's planes), leaving the borders as they
// are.
func (c convPadded) copyRows(buf, src []float32, ch, r0, r1 int) {
	y0, y1 := max(r0, c.top)-c.top, min(r1, c.top+c.h)-c.top
	if y1 > y0 {
		copy2D(buf[ch*c.hp*c.wp+(c.top+y0)*c.wp+c.left:], c.wp, src[ch*c.h*c.w+y0*c.w:(ch+1)*c.h*c.w], c.w, y1-y0, c.w)
	}
}

// convPadClearWidth is the row width from which fillRows clears only the
// borders of the input rows: clearing a row of 64 elements costs about
// what two calls of clear do.
const convPadClearWidth = 64

// convDirectFwdPad is the padded input of the forward.
func (p Conv2DParams) convDirectFwdPad() convPadded {
	return convPadded{ch: p.C / p.Groups, h: p.H, w: p.W, hp: p.H + 2*p.PH, wp: p.W + 2*p.PW, top: p.PH, left: p.PW}
}

// convDirectWorkspace is the scratch of the direct kernels: the reordered
// weights, then per goroutine one padded sample (and with Pool2 one block
// of output channels to pool).
func convDirectWorkspace(p Conv2DParams, pad convPadded, parts int) int {
	return p.O*(p.C/p.Groups)*p.KH*p.KW + parts*(pad.size()+p.convDirectPoolBlock())
}

// convDirectPoolBlock is the scratch per goroutine of the direct forward
// with the 2×2 max pool (conv_pool.go): one block of output channels at
// full resolution, which the pool reads while it is in cache; none where
// the kernel pools in its registers (convPoolRegs).
func (p Conv2DParams) convDirectPoolBlock() int {
	if !p.Pool2 || p.convPoolRegs() {
		return 0
	}
	return min(16, p.O/p.Groups) * p.OutH() * p.OutW()
}

// conv2DDirect is Conv2D for float32 through convRows: for each sample,
// group, block of up to 16 output channels, output row and 16-column
// chunk, out = Σ over (c, i, j) of w[o][c][i][j] · xpad[c][y+i·DH][x+j·DW].
func conv2DDirect(p Conv2DParams, x, w, out, ws []float32, threads int) {
	cg := p.C / p.Groups
	pad := p.convDirectFwdPad()
	plane := pad.hp * pad.wp
	nsteps := cg * p.KH * p.KW
	job := getConvDirectJob(nsteps)
	offs := job.offs
	maxOff := 0
	for c := range cg {
		for i := range p.KH {
			for j := range p.KW {
				off := c*plane + i*p.DH*pad.wp + j*p.DW
				offs[(c*p.KH+i)*p.KW+j] = int64(off)
				maxOff = max(maxOff, off)
			}
		}
	}
	// wt is the weights in the order the tiles read them
	// (convDirectReorder): the copy packed once (conv_direct_packed.go),
	// else reordered into the workspace.
	wt := convDirectPacked(p)
	if wt == nil {
		wt = ws[:p.O*nsteps]
		convDirectReorder(p, w, wt)
	}
	items, _, rows := p.convDirectItems(threads)
	parts := p.convDirectParts(threads)
	job.p, job.pad, job.x, job.out, job.wt, job.bufs, job.nsteps, job.maxOff = p, pad, x, out, wt, ws[p.O*nsteps:], nsteps, maxOff
	job.epi, job.bandRows = p.convDirectEpi(), rows
	job.tileOB, job.tileRows = p.convDirectTile()
	job.stripRows = p.convDirectStrip(job.tileRows)
	job.slice = p.convDirectSlice()
	job.stripBlocks = p.convDirectStripBlocks()
	job.poolRegs = p.convPoolRegs()
	for range parts {
		job.filled = append(job.filled, convFilled{ng: -1})
	}
	nnForWorkersRanger(parts, items, job)
	putConvDirectJob(job)
}

// convDirectTileForce, when ob is set, is the tile convDirectTile and
// convDirectBwdTile return (its rows capped at the kernel's), for tests
// and benchmarks that compare tiles.
var convDirectTileForce struct{ ob, rows int }

// convDirectTile is the kernel shape conv2DDirect calls: ob of a block's
// (up to 16) output channels by rows output rows. The kernels keep a
// step's weights in registers across the rows (convRowsSteps in perfgen),
// so a step of an ob×rows tile loads ob + rows values for ob·rows fused
// multiply-adds; a block of 16 channels in one call per row (16×1, a
// broadcast load per multiply-add) loads 17 per 16. So the block is split
// into equal tiles of at most 8 channels, whose kernels take 3 to 6 rows,
// and the rows per call are the most, from 2 (1 on a map of one row), that
// leave the fewest rows to a last, shorter call. Measured with -bench ConvDirectTile, one thread
// under load, µs per call (16×1 → 8×2, 8×3, 6×4): the small CNN's
// 32→64 layer at batch 64 3841 → 3226, 3328, 3139 (min of 4); its 3→32
// layer 817 → 719, 764, 718; LeNet's 6→16 layer 288 → 263, 266, 270.
func (p Conv2DParams) convDirectTile() (ob, rows int) {
	og := max(1, min(16, p.O/p.Groups))
	if f := convDirectTileForce; f.ob > 0 {
		ob = min(f.ob, og)
		return ob, max(1, min(f.rows, convRowsMax(ob)))
	}
	ob = convTileChannels(og)
	oh := max(1, p.OutH())
	rows = 1
	best := 0.0
	for r := min(2, oh); r <= min(oh, convRowsMax(ob)); r++ {
		// The share of rows in calls of r rows.
		if fill := float64(oh/r*r) / float64(oh); fill >= best {
			rows, best = r, fill
		}
	}
	return ob, rows
}

// convDirectStripForce, when set, is convDirectStrip's strip in tile
// rows, for benchmarks.
var convDirectStripForce int

// convDirectStrip is how many output rows, a multiple of the tile's rows,
// each tile of a block computes before the next tile: 4 calls' worth, so
// that the strip's input rows are still in cache when the next tile
// reads them. On ppyoloe_s's 16→16 layer at 160×160, whose padded sample
// (1.6 MB) outgrows L2, whole-map strips re-read it from L3 per tile.
// One thread under load, µs per call (-bench ConvDirectStrip, strips of
// all rows → 4 tile rows, three rounds): that layer at batch 8 with its
// ReLU in the kernel 6426, 8905, 8698 → 6084, 7705, 7538, with SiLU 7966,
// 10801, 11315 → 6984, 9326, 9035; the small CNN's 32→64 at batch 8 with
// ReLU 405, 408, 398 → 388, 388, 388; its 3→32 84, 86, 84 → 83, 86, 84.
// (Strips of one tile row: 6087, 7711, 7593 on the first, but 90, 94, 93
// on the last.) A padded sample of at most convDirectWholeStrip elements
// stays in L1 and L2 whatever the order, and there the strip is the whole
// map, fewer and longer calls: with the pool in registers, one thread,
// minimum µs per call over 4,000 alternating, the small CNN's 3→32
// 10.06 → 9.80 at batch 1 and 76.4 → 74.4 at batch 8, its 32→64 42.8 →
// 42.5 and 335 → 332.
func (p Conv2DParams) convDirectStrip(rows int) int {
	if convDirectStripForce > 0 {
		return convDirectStripForce * rows
	}
	if p.convDirectFwdPad().size() <= convDirectWholeStrip {
		return max(4, ceilDiv(p.OutH(), rows)) * rows
	}
	return 4 * rows
}

// convDirectWholeStrip is the largest padded sample (elements, 64 KiB)
// whose strips are the whole map (convDirectStrip).
const convDirectWholeStrip = 16 << 10

// convDirectStripBlocks reports whether the direct forward runs every
// block of output channels of a band on a strip before the next strip
// (runWorker): where the padded sample is larger than
// convDirectWideSample, which each block would read again from beyond L2
// (ppyoloe_s's 16→32 on 160×160 and 24→24 on 80×80); a smaller sample
// stays in L2 anyway, and there each block's weights stay in L1 across
// its strips instead of all blocks' cycling through it per strip
// (resnet18ish's layer 1: 147 KB of them).
func (p Conv2DParams) convDirectStripBlocks() bool {
	return p.convDirectFwdPad().size() > convDirectWideSample
}

// convTileChannels is the channels of each of the equal tiles, at most 8,
// that a block of n ≤ 16 channels is cut into (convDirectTile).
func convTileChannels(n int) int { return ceilDiv(n, ceilDiv(n, 8)) }

// convDirectEpi reports whether conv2DDirect applies its epilogue in the
// kernel (convRowsEpi) as it stores each vector: a bias and ReLU or no
// activation, no residual (epiPlanes' one-pass case, with the same bits).
// That spares a second pass over each block, a tenth of the small CNN's
// first layer, whose blocks (16 planes of 32×32) outgrow L1.
func (p Conv2DParams) convDirectEpi() bool {
	ep := &p.Epilogue
	return !convDirectOff.epi && ep.Bias32 != nil && ep.Residual32 == nil && (ep.Act == ActNone || ep.Act == ActRelu)
}

// convDirectItems is how conv2DDirect divides its work on threads
// goroutines: items of one band of rows output rows (the last band may
// have fewer) of one block of up to 16 output channels of one group of
// one sample, nb blocks per group. Splitting a sample's blocks, not just
// the samples, lets a batch of one use more than one thread; where that
// leaves fewer blocks than perfItemsPerWorker per goroutine (ppyoloe_s's
// 16→16 layer on 160×160 and its 6-channel heads at batch 1: one block,
// which ran on one goroutine; 16 and 4 channels: two blocks, one four
// times the other), the rows are cut into bands too, enough for
// perfItemsPerWorker items per goroutine, each a whole number of the
// kernel's row groups. Fewer blocks than goroutines get one band per
// goroutine instead: each band copies its padded rows channel by channel
// and runs its own kernel calls, which on a small deep map cost more than
// the split saves (ppyoloe_s's 384→6 head on 10×10, batch 1, two threads,
// min µs per call: 5 bands 42.6, as one thread, 2 bands 31.8; 96→6 on
// 40×40 71 → 60; 16→16 on 160×160 350 → 343). Every output element is
// the same chain of fused multiply-adds whichever band holds it.
func (p Conv2DParams) convDirectItems(threads int) (items, nb, rows int) {
	nb = ceilDiv(p.O/p.Groups, 16)
	blocks := p.N * p.Groups * nb
	oh := p.OutH()
	rows = oh
	if want := threads * perfItemsPerWorker; threads > 1 && blocks < want && !p.Pool2 {
		_, group := p.convDirectTile()
		bands := ceilDiv(want, blocks)
		if blocks < threads {
			bands = ceilDiv(threads, blocks)
		}
		rows = max(group, ceilDiv(ceilDiv(oh, bands), group)*group)
	}
	return blocks * ceilDiv(oh, rows), nb, rows
}

// convDirectParts is how many goroutines conv2DDirect uses (each with a
// padded sample in the workspace).
func (p Conv2DParams) convDirectParts(threads int) int {
	items, _, rows := p.convDirectItems(threads)
	cost := 2 * min(16, p.O/p.Groups) * (p.C / p.Groups) * p.KH * p.KW * rows * p.OutW()
	return nnParts(threads, items, cost)
}

// convDirectJob is conv2DDirect's loop over samples. It is recycled with
// its offsets table (convDirectJobs), so that a call makes no Go
// allocation.
type convDirectJob struct {
	p              Conv2DParams
	pad            convPadded
	x, out, wt     []float32
	bufs           []float32 // per worker, a padded sample
	offs           []int64   // per step, its offset in the padded sample
	nsteps, maxOff int
	epi            bool         // the epilogue runs in the kernel (convDirectEpi)
	bandRows       int          // output rows per item (convDirectItems)
	tileOB         int          // output channels per kernel call (convDirectTile)
	tileRows       int          // output rows per kernel call
	stripRows      int          // output rows each tile computes before the next tile (convDirectStrip)
	slice          int          // steps summed in one chain (convDirectSlice)
	stripBlocks    bool         // every block of a band on a strip before the next strip (convDirectStripBlocks)
	poolRegs       bool         // the kernel stores the 2×2 pool (convPoolRegs)
	filled         []convFilled // per worker, what its padded copy holds
}

// convFilled is what a worker's padded copy holds: the padded rows [r0,
// r1) of sample and group ng (n·Groups + g), or nothing where ng < 0.
type convFilled struct{ ng, r0, r1 int }

// need makes the copy hold the padded rows [r0, r1) of ng, copying those
// it lacks: all of them for another sample or a range apart from the one
// held, else the rows on either side of it.
func (f *convFilled) need(pad convPadded, buf, src []float32, ng, r0, r1 int) {
	if ng != f.ng || r1 < f.r0 || r0 > f.r1 {
		pad.fillRows(buf, src, r0, r1)
		*f = convFilled{ng, r0, r1}
		return
	}
	if r0 < f.r0 {
		pad.fillRows(buf, src, r0, f.r0)
		f.r0 = r0
	}
	if r1 > f.r1 {
		pad.fillRows(buf, src, f.r1, r1)
		f.r1 = r1
	}
}

var convDirectJobs = sync.Pool{New: func() any { return new(convDirectJob) }}

// getConvDirectJob returns a job whose offs holds nsteps entries.
func getConvDirectJob(nsteps int) *convDirectJob {
	j := convDirectJobs.Get().(*convDirectJob)
	if cap(j.offs) < nsteps {
		j.offs = make([]int64, nsteps)
	}
	j.offs = j.offs[:nsteps]
	return j
}

// putConvDirectJob drops what j points to but its offsets table, and
// recycles it.
func putConvDirectJob(j *convDirectJob) {
	*j = convDirectJob{offs: j.offs[:0], filled: j.filled[:0]}
	convDirectJobs.Put(j)
}

// runWorker computes the items [lo, hi) (convDirectItems), filling the
// worker's padded copy of a sample's group when the item moves to
// another (once per call and worker where all are one sample's bands).
// Items are numbered with the block of output channels fastest, and on
// a large sample (convDirectStripBlocks) a run of them that shares a
// sample, group and band is computed strip by strip, every block's tiles
// on a strip before the next strip, so that the strip's input rows stay
// in L2 while all blocks read them: a padded sample larger than L2 (1.6
// MB for ppyoloe_s's 16→32 at 160×160) was read again from L3 for each
// block.
func (j *convDirectJob) runWorker(worker, lo, hi int) {
	p, pad := &j.p, j.pad
	oh, ow := p.OutH(), p.OutW()
	cg, og := p.C/p.Groups, p.O/p.Groups
	ohw := oh * ow
	nb, bands := ceilDiv(og, 16), ceilDiv(oh, j.bandRows)
	per := pad.size() + p.convDirectPoolBlock()
	buf := j.bufs[worker*per : worker*per+pad.size()]
	poolBlk := j.bufs[worker*per+pad.size() : (worker+1)*per]
	filled := &j.filled[worker]
	for it := lo; it < hi; {
		// Bands outside blocks: a goroutine's run of items is whole bands
		// of rows, whose padded rows it copies once for all blocks, and
		// which the op before wrote on its core when it split its output
		// by rows (perfJob.claim).
		bf, band, ng := it%nb, it/nb%bands, it/nb/bands
		// The blocks [bf, bl) of this sample's group and band: one with
		// the pool (its scratch holds one block) or a sample that stays
		// in L2 (convDirectStripBlocks).
		bl := min(nb, bf+hi-it)
		if p.Pool2 || !j.stripBlocks {
			bl = bf + 1
		}
		it += bl - bf
		n, g := ng/p.Groups, ng%p.Groups
		y0 := band * j.bandRows
		y1 := min(oh, y0+j.bandRows)
		// The padded rows the band's output rows read.
		r0, r1 := y0*p.SH, min(pad.hp, (y1-1)*p.SH+(p.KH-1)*p.DH+1)
		filled.need(pad, buf, j.x[(n*p.C+g*cg)*p.H*p.W:(n*p.C+(g+1)*cg)*p.H*p.W], ng, r0, r1)
		// The block's output planes: its own in out, or the pool's scratch.
		blockOut := func(b int) []float32 {
			b0 := b * 16
			ob := min(16, og-b0)
			if j.poolRegs {
				pq := (oh / 2) * (ow / 2)
				return j.out[(n*p.O+g*og+b0)*pq : (n*p.O+g*og+b0+ob)*pq]
			}
			if p.Pool2 {
				return poolBlk[:ob*ohw]
			}
			return j.out[(n*p.O+g*og+b0)*ohw : (n*p.O+g*og+b0+ob)*ohw]
		}
		// Strips of stripRows rows (convDirectStrip), in each every
		// block's tiles in turn.
		for s0 := y0; s0 < y1; s0 += j.stripRows {
			s1 := min(y1, s0+j.stripRows)
			for b := bf; b < bl; b++ {
				j.strip(buf, g, b*16, blockOut(b), s0, s1)
			}
		}
		for b := bf; b < bl; b++ {
			b0 := b * 16
			ob := min(16, og-b0)
			q := n*p.O + g*og + b0
			switch {
			case j.poolRegs: // the kernel stored the pool
			case j.epi && p.Pool2:
				pq := (oh / 2) * (ow / 2)
				pp := Pool2DParams{N: 1, C: ob, H: oh, W: ow, KH: 2, KW: 2, SH: 2, SW: 2}
				maxPoolValuePlanes(&pp, blockOut(b), j.out[q*pq:(q+ob)*pq], 0, ob)
			case j.epi:
			case bands == 1:
				epiPlanes(&p.Epilogue, j.out, p.O, q, q+ob, ohw)
			case p.Epilogue.on():
				for i := range ob {
					convEpiRun(&p.Epilogue, j.out, p.O, q+i, y0*ow, y1*ow, ohw)
				}
			}
		}
	}
}

// strip computes the output rows [s0, s1) of the block of output
// channels from b0 of group g into ob0 (the block's planes), its tiles of
// tileOB channels in turn, each tileRows rows a call, the rows looped
// over in the kernel: whole groups of rows, then the rest. Per 16-column
// chunk the depth runs in slices (convDirectSlice), each adding onto the
// sums of the one before while they are in L1; with epi the last applies
// the bias and ReLU in registers.
func (j *convDirectJob) strip(buf []float32, g, b0 int, ob0 []float32, s0, s1 int) {
	p, pad := &j.p, j.pad
	oh, ow := p.OutH(), p.OutW()
	ohw, og := oh*ow, p.O/p.Groups
	ob := min(16, og-b0)
	rows := j.tileRows
	full := s0 + (s1-s0)/rows*rows
	relu := j.epi && p.Epilogue.Act == ActRelu
	for t0 := 0; t0 < ob; t0 += j.tileOB {
		tob := min(j.tileOB, ob-t0)
		blk := j.wt[(g*og+b0+t0)*j.nsteps : (g*og+b0+t0+tob)*j.nsteps]
		var bias []float32
		if j.epi {
			bias = p.Epilogue.Bias32[g*og+b0+t0:]
		}
		if j.poolRegs {
			// ob0 is the pooled planes; each call computes whole row
			// pairs of whole chunks over the whole depth (convPoolRegs).
			pw, pohw := ow/2, (oh/2)*(ow/2)
			for x0 := 0; x0 < ow; x0 += 16 {
				convRowsEpiPool(tob, rows, (s1-s0)/rows, buf, s0*pad.wp+x0, pad.wp, j.offs, 0, j.maxOff, blk, ob0[t0*pohw+s0/2*pw+x0/2:], pohw, pw, bias, relu)
			}
			continue
		}
		tout := ob0[t0*ohw:]
		for x0 := 0; x0 < ow; x0 += 16 {
			lanes := min(16, ow-x0)
			for ps := 0; ps < j.nsteps; ps += j.slice {
				pe := min(j.nsteps, ps+j.slice)
				offs, w, last := j.offs[ps:pe], blk[ps*tob:pe*tob], pe == j.nsteps
				sb := bias
				if !last {
					sb = nil
				}
				if full > s0 {
					convRowsEpi(tob, rows, (full-s0)/rows, buf, s0*pad.wp+x0, pad.wp, offs, 0, j.maxOff, w, tout[s0*ow+x0:], ohw, ow, lanes, sb, relu && last, ps > 0)
				}
				if full < s1 {
					convRowsEpi(tob, s1-full, 1, buf, full*pad.wp+x0, pad.wp, offs, 0, j.maxOff, w, tout[full*ow+x0:], ohw, ow, lanes, sb, relu && last, ps > 0)
				}
			}
		}
	}
}

// convDirectFilter reports whether Conv2DGradFilter on float32 uses the
// direct kernel (convFilter): unit strides, kernels up to 7 wide.
func (p Conv2DParams) convDirectFilter() bool {
	return convRowOK() && !convDirectOff.filter && p.SH == 1 && p.SW == 1 && !p.direct() &&
		convFilterMaxOB(p.KW) > 0 && p.C/p.Groups > 0 && p.O/p.Groups > 0
}

// convDirectFilterPad is the padded copy of one whole sample (all
// channels) that the direct filter gradient reads.
func (p Conv2DParams) convDirectFilterPad() convPadded {
	return convPadded{ch: p.C, h: p.H, w: p.W, hp: p.H + 2*p.PH, wp: p.W + 2*p.PW, top: p.PH, left: p.PW}
}

// convDirectFilterWorkspace is the scratch of the direct filter gradient:
// a partial sum per chunk but the first, and per goroutine the padded
// samples of one chunk.
func convDirectFilterWorkspace(p Conv2DParams, parts int, into bool) int {
	per := min(p.N, BatchGroup)
	pad := p.convDirectFilterPad()
	return p.conv2dFilterSlots(into)*p.filterSize() + parts*(per*(pad.size()-16)+16)
}

// conv2DGradFilterDirect is Conv2DGradFilter for float32 through
// convFilter: per chunk of samples, dw[o][c][i][j] = Σ over the chunk's
// samples, output rows and 16-column pieces of dy[o][y][x] ·
// xpad[c][y+i·DH][x+j·DW], summed per lane in that order and then across
// lanes; the chunks' sums (BatchGroup samples each) are then added in
// order, as in Conv2DGradFilter.
func conv2DGradFilterDirect(p Conv2DParams, dy, x, dw, ws []float32, threads int, into bool) {
	fs := p.filterSize()
	dw = dw[:fs]
	oh, ow := p.OutH(), p.OutW()
	ohw := oh * ow
	cg, og := p.C/p.Groups, p.O/p.Groups
	kk := p.KH * p.KW
	per := min(p.N, BatchGroup)
	pad := p.convDirectFilterPad()
	plane := pad.hp * pad.wp
	sampleSize := p.C * plane
	bufSize := per*sampleSize + 16
	parts, _ := p.conv2dFilterPlan(threads)
	slots := p.conv2dFilterSlots(into)
	partial := ws[:slots*fs]
	bufs := ws[slots*fs:]
	// Output-channel blocks: as few as the kernel allows, of equal size.
	obMax := convFilterMaxOB(p.KW)
	nb := (og + obMax - 1) / obMax
	obSize := (og + nb - 1) / nb
	// The row pairs: (dy offset, x offset, lane mask) per sample, output
	// row and 16-column piece, relative to the chunk, for a chunk of per
	// samples; a chunk of k samples takes the first k·pieces of them, and
	// maxDY[k], maxX[k] are the most dy elements read from a row start and
	// the largest x offset among those. Built once per call: the chunks
	// share it.
	pieces := oh * ((ow + 15) / 16)
	tab := make([]int64, 0, 3*per*pieces)
	maxDY, maxX := make([]int, per+1), make([]int, per+1)
	for s := range per {
		mdy, mx := maxDY[s], maxX[s]
		for y := range oh {
			for x0 := 0; x0 < ow; x0 += 16 {
				d, xo, lanes := s*p.O*ohw+y*ow+x0, s*sampleSize+y*pad.wp+x0, min(16, ow-x0)
				tab = append(tab, int64(d), int64(xo), int64(1)<<lanes-1)
				mdy, mx = max(mdy, d+lanes), max(mx, xo)
			}
		}
		maxDY[s+1], maxX[s+1] = mdy, mx
	}
	conv2dFilterWaves(p, dw, partial, parts, into, func(worker, ch int, acc []float32) {
		buf := bufs[worker*bufSize : (worker+1)*bufSize]
		n0, n1 := p.conv2dFilterSamples(ch)
		for s := range n1 - n0 {
			one := pad
			one.ch = p.C
			one.fill(buf[s*sampleSize:s*sampleSize+one.size()], x[(n0+s)*p.C*p.H*p.W:(n0+s+1)*p.C*p.H*p.W], true)
		}
		clear(buf[(n1-n0)*sampleSize:])
		k := n1 - n0
		dyc := dy[n0*p.O*ohw : n1*p.O*ohw]
		for g := range p.Groups {
			for o0 := 0; o0 < og; o0 += obSize {
				ob := min(obSize, og-o0)
				for c := range cg {
					for i := range p.KH {
						out := acc[((g*og+o0)*cg+c)*kk+i*p.KW:]
						xb := buf[(g*cg+c)*plane+i*p.DH*pad.wp:]
						convFilter(ob, p.KW, dyc[(g*og+o0)*ohw:], xb, tab[:3*k*pieces], maxDY[k], maxX[k], out, cg*kk, ohw, p.DW)
					}
				}
			}
		}
	})
}

// convDirectBwd reports whether Conv2DGradInput on float32 uses the direct
// kernel: unit strides, 2 to 16 input channels per group, and column
// padding no wider than the dilated kernel. (With one input channel there
// is a single accumulator chain per row and GEMM + col2im is faster:
// 0.29 against 0.40 ms on LeNet's first layer; on its second, 6 channels,
// the direct kernel takes 0.41 ms against 0.48.)
func (p Conv2DParams) convDirectBwd() bool {
	cg := p.C / p.Groups
	return convRowOK() && !convDirectOff.bwd && p.SH == 1 && p.SW == 1 && !p.direct() &&
		cg >= 2 && cg <= convDirectMaxCh && p.O/p.Groups > 0 && p.PW <= (p.KW-1)*p.DW
}

// convDirectBwdTile is the kernel shape conv2DGradInputDirect calls: cb of
// a group's (at most 16) input channels by up to rows input rows, those
// that take the same kernel rows. As in the forward (convDirectTile), the
// channels are cut into equal tiles of at most 8, whose kernels keep a
// step's weights in registers across their 3 to 6 rows, instead of 16 in
// one call per row.
func (p Conv2DParams) convDirectBwdTile() (cb, rows int) {
	cg := max(1, min(16, p.C/p.Groups))
	if f := convDirectTileForce; f.ob > 0 {
		cb = min(f.ob, cg)
		return cb, max(1, min(f.rows, convRowsMax(cb)))
	}
	cb = convTileChannels(cg)
	return cb, convRowsMax(cb)
}

// convDirectBwdPad is the output gradient of one group of a sample with
// (KW−1)·DW − PW zero columns on the left and enough on the right for
// input rows W wide.
func (p Conv2DParams) convDirectBwdPad() convPadded {
	return convPadded{ch: p.O / p.Groups, h: p.OutH(), w: p.OutW(), hp: p.OutH(), wp: p.W + (p.KW-1)*p.DW,
		left: (p.KW-1)*p.DW - p.PW}
}

// conv2DGradInputDirect is Conv2DGradInput for float32 through convRows:
//
//	dx[c][h][w] = Σ over (i, o, j) of w[o][c][i][j] · dy[o][h+PH−i·DH][w+PW−j·DW]
//
// for blocks of up to 16 input channels, the steps ordered by kernel row
// so that each input row takes the contiguous run of steps whose output
// row exists; columns outside dy read the zero padding.
func conv2DGradInputDirect(p Conv2DParams, dy, w, dx, ws []float32, threads int) {
	oh := p.OutH()
	cg, og := p.C/p.Groups, p.O/p.Groups
	kk := cg * p.KH * p.KW
	pad := p.convDirectBwdPad()
	plane := oh * pad.wp
	perI := og * p.KW // steps per kernel row
	nsteps := p.KH * perI
	offs := make([]int64, nsteps)
	// Offsets are relative to the padded row h+PH (which may lie outside
	// dy: only the steps of valid rows are run).
	minI, maxI := make([]int, p.KH), make([]int, p.KH)
	for i := range p.KH {
		minI[i], maxI[i] = int(^uint(0)>>1), -int(^uint(0)>>1)-1
		for o := range og {
			for j := range p.KW {
				off := o*plane - i*p.DH*pad.wp + (p.KW-1-j)*p.DW
				offs[(i*og+o)*p.KW+j] = int64(off)
				minI[i], maxI[i] = min(minI[i], off), max(maxI[i], off)
			}
		}
	}
	// wt holds, per group and tile of tcb input channels
	// (convDirectBwdTile), the weights step by step: wt[s·cb + c] =
	// w[o][c][i][j] for step s = (i, o, j).
	wt := ws[:p.Groups*cg*nsteps]
	tcb, maxRows := p.convDirectBwdTile()
	for g := range p.Groups {
		for c0 := 0; c0 < cg; c0 += tcb {
			cb := min(tcb, cg-c0)
			blk := wt[(g*cg+c0)*nsteps : (g*cg+c0+cb)*nsteps]
			for i := range p.KH {
				for o := range og {
					for j := range p.KW {
						s := (i*og+o)*p.KW + j
						for c := range cb {
							blk[s*cb+c] = w[(g*og+o)*kk+((c0+c)*p.KH+i)*p.KW+j]
						}
					}
				}
			}
		}
	}
	// rowSteps gives input row h its kernel rows [ia, ib): those with
	// 0 ≤ h+PH−i·DH < OH.
	rowSteps := func(h int) (ia, ib int) {
		top := h + p.PH
		ia = max(0, (top-(oh-1)+p.DH-1)/p.DH)
		if top-(oh-1) <= 0 {
			ia = 0
		}
		ib = min(p.KH, top/p.DH+1)
		if top < 0 {
			ib = 0
		}
		return ia, max(ia, ib)
	}
	parts, _ := p.conv2dPlan(threads)
	bufs := ws[p.Groups*cg*nsteps:]
	hw, ohw := p.H*p.W, oh*p.OutW()
	nnForWorkers(parts, p.N, func(worker, lo, hi int) {
		buf := bufs[worker*pad.size() : (worker+1)*pad.size()]
		for n := lo; n < hi; n++ {
			for g := range p.Groups {
				pad.fill(buf, dy[(n*p.O+g*og)*ohw:(n*p.O+(g+1)*og)*ohw], true)
				// Row groups, and in each the tiles of channels in turn,
				// so that the group's rows of dy stay in cache.
				dg := dx[(n*p.C+g*cg)*hw : (n*p.C+(g+1)*cg)*hw]
				for h := 0; h < p.H; {
					ia, ib := rowSteps(h)
					rows := 1
					for rows < maxRows && h+rows < p.H {
						if a, b := rowSteps(h + rows); a != ia || b != ib {
							break
						}
						rows++
					}
					if ib == ia { // no kernel row reaches dy
						for c := range cg {
							clear(dg[c*hw+h*p.W : c*hw+(h+rows)*p.W])
						}
						h += rows
						continue
					}
					lo, hi := minI[ia], maxI[ia]
					for i := ia + 1; i < ib; i++ {
						lo, hi = min(lo, minI[i]), max(hi, maxI[i])
					}
					s0, s1 := ia*perI, ib*perI
					for c0 := 0; c0 < cg; c0 += tcb {
						cb := min(tcb, cg-c0)
						blk := wt[(g*cg+c0)*nsteps : (g*cg+c0+cb)*nsteps]
						for x0 := 0; x0 < p.W; x0 += 16 {
							convRows(cb, rows, buf, (h+p.PH)*pad.wp+x0, pad.wp, offs[s0:s1], lo, hi,
								blk[s0*cb:s1*cb], dg[c0*hw+h*p.W+x0:], hw, p.W, min(16, p.W-x0))
						}
					}
					h += rows
				}
			}
		}
	})
}
