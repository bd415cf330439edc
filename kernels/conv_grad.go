package kernels

// Gradients of Conv2D.
//
// With out_g = w_g · col_g per sample and group (see Conv2D), the input
// gradient is dcol_g = w_gᵀ · dout_g scattered back by Col2im, and the
// filter gradient is dw_g = Σ_n dout_g · col_gᵀ.

// Conv2DGradInputWorkspace is the number of elements of scratch that
// Conv2DGradInput needs with the given thread count: one column block per
// goroutine, as for Conv2D.
func Conv2DGradInputWorkspace(p Conv2DParams, threads int) int {
	return max(Conv2DGradInputWorkspaceFor(p, threads, true), Conv2DGradInputWorkspaceFor(p, threads, false))
}

// Conv2DGradInputWorkspaceFor is the scratch Conv2DGradInput needs for
// float32 (f32) or float64 elements: float32 with unit strides and at most
// 16 input channels per group runs the direct kernel (see perf_conv.go);
// other float32 ones with unit strides and a kernel wider than 1×1 run as
// a forward convolution (conv_grad_input_conv.go).
func Conv2DGradInputWorkspaceFor(p Conv2DParams, threads int, f32 bool) int {
	if t, ok := p.gradInputConv(); f32 && ok && p.N > 0 && p.OutH()*p.OutW() > 0 {
		return convGradInputConvWorkspace(p, t, threads)
	}
	if f32 && p.N > 0 && p.O > 0 && p.OutH()*p.OutW() > 0 && p.convDirectBwd() {
		parts, _ := p.conv2dPlan(threads)
		return convDirectWorkspace(p, p.convDirectBwdPad(), min(parts, p.N))
	}
	if p.N == 0 || p.O == 0 || p.OutH()*p.OutW() == 0 || p.direct() {
		return 0
	}
	parts, _ := p.conv2dPlan(threads)
	return min(parts, p.N) * p.gradInputColSize()
}

// gradInputRowBlock is how many output rows one column block of
// Conv2DGradInput covers: rowBlock's rule with blocks
// conv2dGradInputBlockScale times larger. Its GEMM packs the weights
// (C/Groups·KH·KW × O/Groups, megabytes on the deep strided layers) once
// per block, so larger blocks pack them less often and give the GEMM more
// columns: measured on ppyoloe_s's 3×3/2 layers at batch 8 (one thread,
// CPU time), 128→192 on 40×40 25.8 → 19.3 ms and 256→384 on 20×20 25.1 →
// 20.6 with a whole image per block.
func (p Conv2DParams) gradInputRowBlock() int {
	kk := p.C / p.Groups * p.KH * p.KW
	oh, ow := p.OutH(), p.OutW()
	if kk == 0 || ow == 0 {
		return max(oh, 1)
	}
	return max(1, min(oh, conv2dGradInputBlockScale*conv2dBlockElems/(kk*ow)))
}

// conv2dGradInputBlockScale is how many times conv2dBlockElems a column
// block of Conv2DGradInput may hold (2 MB of float32 at most).
const conv2dGradInputBlockScale = 4

// gradInputColSize is the length of one column block of
// Conv2DGradInput: (C/Groups·KH·KW) × (gradInputRowBlock·OutW).
func (p Conv2DParams) gradInputColSize() int {
	return p.C / p.Groups * p.KH * p.KW * p.gradInputRowBlock() * p.OutW()
}

// Conv2DGradInput writes into dx (N×C×H×W) the gradient of Conv2D with
// respect to its input, given the gradient dy (N×O×OutH×OutW) of its
// output and the weight w: for each sample, group and block of output
// rows, a GEMM makes the block's column matrix w_gᵀ·dy_g and Col2im adds
// it into dx. ws must hold Conv2DGradInputWorkspace(p, threads) elements.
// Samples are spread over threads as in Conv2D; each element of dx is
// summed in an order that does not depend on threads.
// Float32 convolutions with unit strides run the direct kernel
// (perf_conv.go) or, wider than 1×1, a forward convolution over dy
// (conv_grad_input_conv.go).
func Conv2DGradInput[T nnFloat](p Conv2DParams, dy, w, dx, ws []T, threads int) {
	oh, ow := p.OutH(), p.OutW()
	ohw := oh * ow
	if df, ok := any(dy).([]float32); ok && p.N > 0 && p.O > 0 && ohw > 0 {
		if t, ok := p.gradInputConv(); ok {
			conv2DGradInputConv(p, t, df, any(w).([]float32), any(dx).([]float32), any(ws).([]float32), threads)
			return
		}
	}
	if df, ok := any(dy).([]float32); ok && p.N > 0 && p.O > 0 && ohw > 0 && p.convDirectBwd() {
		// Writes every element of dx.
		conv2DGradInputDirect(p, df, any(w).([]float32), any(dx).([]float32), any(ws).([]float32), threads)
		return
	}
	if p.N == 0 || p.O == 0 || ohw == 0 {
		clear(dx[:p.N*p.C*p.H*p.W])
		return
	}
	if !p.direct() {
		clear(dx[:p.N*p.C*p.H*p.W]) // Col2im adds into dx; a direct product writes it whole
	}
	cg, og := p.C/p.Groups, p.O/p.Groups
	kk := cg * p.KH * p.KW
	chw, hw := p.C*p.H*p.W, p.H*p.W
	parts, gemmThreads := p.conv2dPlan(threads)
	col, rb := p.gradInputColSize(), p.gradInputRowBlock()
	nnForWorkers(parts, p.N, func(part, lo, hi int) {
		var buf []T
		if !p.direct() {
			buf = ws[part*col : (part+1)*col]
		}
		for n := lo; n < hi; n++ {
			for g := range p.Groups {
				dyg := dy[(n*p.O+g*og)*ohw:]
				wg := w[g*og*kk:]
				dxg := dx[n*chw+g*cg*hw : n*chw+(g+1)*cg*hw]
				if p.direct() {
					// kk = cg and ohw = hw: dx_g = w_gᵀ · dy_g.
					nnGemm(true, false, cg, hw, og, 1, wg, max(kk, 1), dyg, ohw, 0, dxg, max(hw, 1), gemmThreads)
					continue
				}
				for y0 := 0; y0 < oh; y0 += rb {
					y1 := min(y0+rb, oh)
					cols := (y1 - y0) * ow
					nnGemm(true, false, kk, cols, og, 1, wg, max(kk, 1), dyg[y0*ow:], ohw, 0, buf, cols, gemmThreads)
					col2imPar(p, cg, buf, dxg, y0, y1, gemmThreads)
				}
			}
		}
	})
}

// col2imPar is col2imRows split over channels, which write disjoint
// planes of x.
func col2imPar[T nnFloat](p Conv2DParams, channels int, col, x []T, y0, y1, threads int) {
	hw := p.H * p.W
	rows := p.KH * p.KW * (y1 - y0) * p.OutW()
	nnFor(threads, channels, rows, func(lo, hi int) {
		col2imRows(p, hi-lo, col[lo*rows:hi*rows], x[lo*hw:hi*hw], y0, y1)
	})
}

// col2imRows is Col2im restricted to the output rows [y0, y1): col is
// (channels·KH·KW) × ((y1−y0)·OutW), as im2colRows writes it; it is added
// into x. Each element of x receives its terms in the order of the loops
// (kernel row, kernel column, output row) whatever the path.
func col2imRows[T nnFloat](p Conv2DParams, channels int, col, x []T, y0, y1 int) {
	ow := p.OutW()
	ohw, hw := (y1-y0)*ow, p.H*p.W
	if cf, ok := any(col).([]float32); ok && p.SW == 1 && col2imGatherOK() {
		col2imGather(p, channels, cf, any(x).([]float32), y0, y1)
		return
	}
	if cf, ok := any(col).([]float32); ok && p.SW == 2 && col2imStride2OK() && !col2imStride2Off {
		col2imStride2(p, channels, cf, any(x).([]float32), y0, y1)
		return
	}
	for c := range channels {
		xc := x[c*hw : (c+1)*hw]
		for i := range p.KH {
			ya, yb := convValidRows(p, i, y0, y1)
			if yb <= ya {
				continue
			}
			ih := ya*p.SH - p.PH + i*p.DH
			for j := range p.KW {
				row := col[((c*p.KH+i)*p.KW+j)*ohw:][:ohw]
				off := j*p.DW - p.PW
				lo, hi := convValid(off, p.SW, p.W, ow)
				if hi <= lo {
					continue
				}
				if p.SW == 1 {
					add2D(xc[ih*p.W+lo+off:], p.SH*p.W, row[(ya-y0)*ow+lo:], ow, yb-ya, hi-lo)
					continue
				}
				for y := ya; y < yb; y++ {
					r := row[(y-y0)*ow+lo : (y-y0)*ow+hi]
					xs := xc[(ih+(y-ya)*p.SH)*p.W+lo*p.SW+off:][:(len(r)-1)*p.SW+1]
					for k, v := range r {
						xs[k*p.SW] += v
					}
				}
			}
		}
	}
}

// col2imGather is col2imRows for float32 and unit column stride with the
// AVX-512 gather loop: per channel and kernel row, each input row takes
// its kernel columns' terms in a register and is stored once, instead of
// once per kernel column. The terms are added in the same order.
func col2imGather(p Conv2DParams, channels int, col, x []float32, y0, y1 int) {
	ow := p.OutW()
	ohw := (y1 - y0) * ow
	chunks := (p.W + 15) / 16
	var buf [128]int64
	tab := buf[:0]
	if n := chunks * (1 + 2*p.KW); n > len(buf) {
		tab = make([]int64, 0, n)
	}
	lo, hi := 0, 0 // src elements reached from a row start: [lo, hi)
	for c := range chunks {
		w0 := 16 * c
		tab = append(tab, int64(1)<<min(16, p.W-w0)-1)
		for j := range p.KW {
			lw := j*p.DW - p.PW // input column of output column 0
			a := max(lw, w0, 0) - w0
			b := min(lw+ow, p.W, w0+16) - w0
			off := j*ohw + w0 - lw
			var mask int64
			if a < b {
				mask = int64(1)<<b - int64(1)<<a
				lo, hi = min(lo, off+a), max(hi, off+b)
			}
			tab = append(tab, mask, int64(off))
		}
	}
	col2imVecRows(p, channels, col, x, y0, y1, tab, chunks, lo, hi, false)
}

// col2imVecRows runs a vector col2im loop with its table over each
// channel and kernel row, on the input rows that kernel row reaches (SH
// rows apart) from the output rows [y0, y1): col2imStride2F32Vec's if
// stride2, else col2imGatherF32Vec's. (A func value instead of the flag
// would move the callers' tables to the heap.)
func col2imVecRows(p Conv2DParams, channels int, col, x []float32, y0, y1 int, tab []int64, chunks, lo, hi int, stride2 bool) {
	ow := p.OutW()
	ohw, hw := (y1-y0)*ow, p.H*p.W
	for c := range channels {
		xc := x[c*hw : (c+1)*hw]
		for i := range p.KH {
			ya, yb := convValidRows(p, i, y0, y1)
			if yb <= ya {
				continue
			}
			ih := ya*p.SH - p.PH + i*p.DH
			src := col[((c*p.KH+i)*p.KW)*ohw+(ya-y0)*ow:]
			if stride2 {
				col2imStride2F32Vec(xc[ih*p.W:], src, tab, p.SH*p.W, ow, yb-ya, chunks, p.KW, p.W, lo, hi)
			} else {
				col2imGatherF32Vec(xc[ih*p.W:], src, tab, p.SH*p.W, ow, yb-ya, chunks, p.KW, p.W, lo, hi)
			}
		}
	}
}

// BatchGroup is how many samples each partial sum covers in the kernels
// that sum over a batch the canonical way: Conv2DGradFilter (on all its
// paths, the float32 batched GEMM included: conv_grad_gemm.go) and
// ReduceSumBatch. The sum is the partial of samples [0, 4) plus that of
// [4, 8) plus ..., added one after the other in the element type, each
// partial computed the same way wherever it lies in the batch. It does
// not depend on the thread count, and a batch cut into pieces of one
// group gives the same bits when each piece's sum is added to the running
// sum in order: remat splits a training step over the batch that way
// (docs/memory.md). Four keeps two partials to run in parallel at batch 8.
const BatchGroup = 4

// conv2dFilterChunks is how many partial sums Conv2DGradFilter splits the
// samples into: one per BatchGroup samples.
func (p Conv2DParams) conv2dFilterChunks() int {
	return max(1, ceilDiv(p.N, BatchGroup))
}

// conv2dFilterMaxChunks bounds the partial sums computed at once, and so
// the useful threads and the workspace: larger batches run in waves.
const conv2dFilterMaxChunks = 8

// conv2dFilterSlots is how many partial sums Conv2DGradFilter holds in its
// workspace: the first wave's first goes straight into dw, unless the
// gradient is added into dw (into).
func (p Conv2DParams) conv2dFilterSlots(into bool) int {
	chunks := p.conv2dFilterChunks()
	if chunks <= conv2dFilterMaxChunks && !into {
		return chunks - 1
	}
	return min(chunks, conv2dFilterMaxChunks)
}

// conv2dFilterWaves runs part for every chunk of samples, up to
// conv2dFilterMaxChunks at a time on parts goroutines, chunk 0 into dw
// (unless into) and the others into partial's slots, and adds each wave's
// partials into dw in chunk order.
func conv2dFilterWaves[T nnFloat](p Conv2DParams, dw, partial []T, parts int, into bool, part func(worker, ch int, acc []T)) {
	fs := p.filterSize()
	chunks := p.conv2dFilterChunks()
	for w0 := 0; w0 < chunks; w0 += conv2dFilterMaxChunks {
		w1 := min(w0+conv2dFilterMaxChunks, chunks)
		slot := func(ch int) []T {
			i := ch - w0
			if w0 == 0 && !into {
				i--
			}
			return partial[i*fs : (i+1)*fs]
		}
		nnForWorkers(parts, w1-w0, func(worker, lo, hi int) {
			for ch := w0 + lo; ch < w0+hi; ch++ {
				acc := dw
				if ch > 0 || into {
					acc = slot(ch)
				}
				part(worker, ch, acc)
			}
		})
		first := max(w0, 1)
		if into {
			first = w0
		}
		for ch := first; ch < w1; ch++ {
			for i, v := range slot(ch) {
				dw[i] += v
			}
		}
	}
}

// conv2dFilterSamples is the samples [n0, n1) of chunk ch.
func (p Conv2DParams) conv2dFilterSamples(ch int) (n0, n1 int) {
	return ch * BatchGroup, min((ch+1)*BatchGroup, p.N)
}

// conv2dFilterPlan returns how many goroutines Conv2DGradFilter runs over
// its chunks and how many threads each GEMM gets.
func (p Conv2DParams) conv2dFilterPlan(threads int) (parts, gemmThreads int) {
	threads = max(threads, 1)
	chunks := min(p.conv2dFilterChunks(), conv2dFilterMaxChunks)
	flops := 2 * p.O * (p.C / p.Groups) * p.KH * p.KW * p.OutH() * p.OutW() * min(p.N, BatchGroup)
	parts = nnParts(threads, chunks, flops)
	return parts, max(1, threads/parts)
}

// filterSize is the number of elements of the weight, O·(C/Groups)·KH·KW.
func (p Conv2DParams) filterSize() int { return p.O * (p.C / p.Groups) * p.KH * p.KW }

// Conv2DGradFilterWorkspace is the number of elements of scratch that
// Conv2DGradFilter needs with the given thread count: a partial weight
// gradient per chunk but the first, and one column block per goroutine
// (none for direct convolutions).
func Conv2DGradFilterWorkspace(p Conv2DParams, threads int) int {
	return max(Conv2DGradFilterWorkspaceFor(p, threads, true), Conv2DGradFilterWorkspaceFor(p, threads, false))
}

// Conv2DGradFilterWorkspaceFor is the scratch Conv2DGradFilter needs for
// float32 (f32) or float64 elements: float32 convolutions on the batched
// GEMM (conv_grad_gemm.go) need none, those with unit strides on the
// direct kernel (see perf_conv.go) padded samples instead of column
// blocks.
func Conv2DGradFilterWorkspaceFor(p Conv2DParams, threads int, f32 bool) int {
	return conv2dFilterWorkspace(p, threads, f32, false)
}

// Conv2DGradFilterIntoWorkspaceFor is the scratch Conv2DGradFilterInto
// needs: a partial sum more than Conv2DGradFilter's where the batch fits
// one wave.
func Conv2DGradFilterIntoWorkspaceFor(p Conv2DParams, threads int, f32 bool) int {
	return conv2dFilterWorkspace(p, threads, f32, true)
}

func conv2dFilterWorkspace(p Conv2DParams, threads int, f32, into bool) int {
	if p.N == 0 || p.O == 0 || p.OutH()*p.OutW() == 0 {
		return 0
	}
	if f32 && p.convFilterGemmOK() {
		return 0 // packs into pooled buffers
	}
	parts, _ := p.conv2dFilterPlan(threads)
	if f32 && p.convDirectFilter() {
		return convDirectFilterWorkspace(p, parts, into)
	}
	n := p.conv2dFilterSlots(into) * p.filterSize()
	if !p.direct() {
		n += parts * p.colSize()
	}
	return n
}

// Conv2DGradFilter writes into dw (O×(C/Groups)×KH×KW) the gradient of
// Conv2D with respect to its weight, given its input x and the gradient dy
// of its output: dw_g = Σ_n dy_g[n] · col_g[n]ᵀ, one GEMM per sample, group
// and block of output rows, accumulated. The samples are split into chunks
// of BatchGroup whose partial sums run in parallel and are then added in
// order, so the result does not depend on threads or on where the batch
// was cut into whole groups.
// Float32 convolutions run the batched GEMM (conv_grad_gemm.go) or the
// direct kernel (perf_conv.go) where those are faster.
// ws must hold Conv2DGradFilterWorkspace(p, threads) elements.
func Conv2DGradFilter[T nnFloat](p Conv2DParams, dy, x, dw, ws []T, threads int) {
	conv2DGradFilter(p, dy, x, dw, ws, threads, false)
}

// Conv2DGradFilterInto adds to dw the gradient Conv2DGradFilter writes,
// partial sum by partial sum in the same order, so that a batch cut into
// pieces of whole BatchGroup groups, each piece's gradient added into the
// running one in order, gives Conv2DGradFilter's bits for the whole batch
// ws must hold Conv2DGradFilterIntoWorkspaceFor elements.
func Conv2DGradFilterInto[T nnFloat](p Conv2DParams, dy, x, dw, ws []T, threads int) {
	conv2DGradFilter(p, dy, x, dw, ws, threads, true)
}

func conv2DGradFilter[T nnFloat](p Conv2DParams, dy, x, dw, ws []T, threads int, into bool) {
	fs := p.filterSize()
	dw = dw[:fs]
	if !into {
		clear(dw)
	}
	oh, ow := p.OutH(), p.OutW()
	ohw := oh * ow
	if p.N == 0 || p.O == 0 || ohw == 0 {
		return
	}
	if df, ok := any(dy).([]float32); ok && p.convFilterGemmOK() {
		conv2DGradFilterGemm(p, df, any(x).([]float32), any(dw).([]float32), threads, into)
		return
	}
	if df, ok := any(dy).([]float32); ok && p.convDirectFilter() {
		conv2DGradFilterDirect(p, df, any(x).([]float32), any(dw).([]float32), any(ws).([]float32), threads, into)
		return
	}
	conv2DGradFilterIm2col(p, dy, x, dw, ws, threads, into)
}

// conv2DGradFilterIm2col is Conv2DGradFilter's im2col path, in a function
// of its own for the reason conv2DIm2col is (conv.go).
func conv2DGradFilterIm2col[T nnFloat](p Conv2DParams, dy, x, dw, ws []T, threads int, into bool) {
	fs := p.filterSize()
	oh, ow := p.OutH(), p.OutW()
	ohw := oh * ow
	cg, og := p.C/p.Groups, p.O/p.Groups
	kk := cg * p.KH * p.KW
	chw, hw := p.C*p.H*p.W, p.H*p.W
	parts, gemmThreads := p.conv2dFilterPlan(threads)
	slots := p.conv2dFilterSlots(into)
	partial := ws[:slots*fs]
	cols := ws[slots*fs:]
	col, rb := p.colSize(), p.rowBlock()
	conv2dFilterWaves(p, dw, partial, parts, into, func(part, ch int, acc []T) {
		var buf []T
		if !p.direct() {
			buf = cols[part*col : (part+1)*col]
		}
		clear(acc)
		n0, n1 := p.conv2dFilterSamples(ch)
		for n := n0; n < n1; n++ {
			for g := range p.Groups {
				dyg := dy[(n*p.O+g*og)*ohw:]
				xg := x[n*chw+g*cg*hw : n*chw+(g+1)*cg*hw]
				dwg := acc[g*og*kk:]
				if p.direct() {
					nnGemm(false, true, og, cg, hw, 1, dyg, max(ohw, 1), xg, max(hw, 1), 1, dwg, max(kk, 1), gemmThreads)
					continue
				}
				for y0 := 0; y0 < oh; y0 += rb {
					y1 := min(y0+rb, oh)
					nc := (y1 - y0) * ow
					im2colPar(p, cg, xg, buf, y0, y1, gemmThreads)
					nnGemm(false, true, og, kk, nc, 1, dyg[y0*ow:], ohw, buf, nc, 1, dwg, max(kk, 1), gemmThreads)
				}
			}
		}
	})
}
