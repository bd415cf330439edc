package kernels

// Conv2DParams describes a 2-D convolution of an N×C×H×W input (NCHW) with
// an O×(C/Groups)×KH×KW weight (OIHW), symmetric zero padding, strides and
// dilations. The output is N×O×OutH()×OutW().
type Conv2DParams struct {
	N, C, H, W int // input
	O, KH, KW  int // output channels and kernel size
	SH, SW     int // strides, >= 1
	PH, PW     int // zero padding on each side, >= 0
	DH, DW     int // dilations, >= 1
	Groups     int // >= 1, divides C and O
	// Epilogue is applied by Conv2D to each block of the output as soon
	// as it is complete (a fused convolution); the zero value does
	// nothing, and the gradients ignore it.
	Epilogue Epilogue
	// Pool2 makes out the 2×2 stride-2 max pool of the convolution after
	// its epilogue (conv_pool.go): N×O×⌊OH/2⌋×⌊OW/2⌋ elements, each the
	// value MaxPool2DValues would write, so that the full-resolution
	// output need not reach memory. The gradients ignore it.
	Pool2 bool
	// Packed, when it holds the weights packed by PackConv2D for a
	// convolution of the same form (a weight constant at inference,
	// packed once), gives the float32 batched GEMM its weight panels
	// ready, or the direct kernel its weights reordered; anything else
	// (nil, another form or kernel) is ignored and the weights are packed
	// as the call goes. The gradients ignore it.
	Packed []float32
	// Winograd computes a float32 3×3 convolution with unit strides and
	// dilations and groups 1 by Winograd's F(2×2, 3×3) (winograd.go), in
	// the kernels that have that path: within float32 rounding of the
	// direct sums, not their bits. The gradients ignore it.
	Winograd bool
}

// OutH is the output height: (H + 2·PH − DH·(KH−1) − 1)/SH + 1. It may be
// zero or negative when the dilated kernel is larger than the padded input;
// callers check that before running.
func (p Conv2DParams) OutH() int { return convOut(p.H, p.KH, p.SH, p.PH, p.DH) }

// OutW is the output width.
func (p Conv2DParams) OutW() int { return convOut(p.W, p.KW, p.SW, p.PW, p.DW) }

func convOut(in, k, s, pad, d int) int {
	num := in + 2*pad - d*(k-1) - 1
	if num < 0 {
		return 0
	}
	return num/s + 1
}

// direct reports whether the convolution is a plain matrix product per
// sample (1×1 kernel, unit strides, no padding), needing no im2col.
func (p Conv2DParams) direct() bool {
	return p.KH == 1 && p.KW == 1 && p.SH == 1 && p.SW == 1 && p.PH == 0 && p.PW == 0
}

// rowBlock is how many output rows one im2col block covers: as many as
// keep the block (C/Groups·KH·KW × rows·OutW elements) within
// conv2dBlockElems, at least one. Blocking keeps the im2col matrix in the
// cache while the GEMM packs it, instead of writing and re-reading a
// matrix KH·KW times the size of the input, and bounds the workspace.
func (p Conv2DParams) rowBlock() int {
	kk := p.C / p.Groups * p.KH * p.KW
	oh, ow := p.OutH(), p.OutW()
	if kk == 0 || ow == 0 {
		return max(oh, 1)
	}
	return max(1, min(oh, conv2dBlockElems/(kk*ow)))
}

// conv2dBlockElems bounds the elements of one im2col block (see rowBlock).
var conv2dBlockElems = 128 * 1024

// colSize is the length of one im2col block:
// (C/Groups·KH·KW) × (rowBlock·OutW).
func (p Conv2DParams) colSize() int {
	return p.C / p.Groups * p.KH * p.KW * p.rowBlock() * p.OutW()
}

// conv2dPlan says how Conv2D spreads its work: parts goroutines each take a
// contiguous range of samples and call single-threaded GEMMs, or (parts =
// 1) samples run in turn with multi-threaded GEMMs and im2col. Samples in
// parallel win whenever there are at least as many samples as threads:
// measured on 2 cores (BenchmarkConvPlan, f32), batch-parallel vs
// GEMM-threaded gave about 100 vs 60 GFLOP/s on ResNet's 64→64 3×3 56×56
// (batch 8), 17 vs 8 on LeNet's 6→16 5×5 14×14 and 15 vs 15 on LeNet's
// 1→6 5×5 28×28 (batch 64): each goroutine packs its own small GEMM with
// no synchronisation, and im2col runs in parallel too.
func (p Conv2DParams) conv2dPlan(threads int) (parts, gemmThreads int) {
	threads = max(threads, 1)
	flops := 2 * p.O * (p.C / p.Groups) * p.KH * p.KW * p.OutH() * p.OutW()
	if conv2dForceGemmThreads || p.N < threads {
		return 1, threads
	}
	return nnParts(threads, p.N, flops), 1
}

// conv2dForceGemmThreads makes Conv2D run samples one after the other with
// multi-threaded GEMMs; benchmarks flip it to compare the two plans.
var conv2dForceGemmThreads = false

// Conv2DWorkspace is the number of elements of scratch that Conv2D needs
// with the given thread count, whatever the element type: the larger of
// Conv2DWorkspaceFor's two answers.
func Conv2DWorkspace(p Conv2DParams, threads int) int {
	return max(Conv2DWorkspaceFor(p, threads, true), Conv2DWorkspaceFor(p, threads, false))
}

// Conv2DWorkspaceFor is the scratch Conv2D needs for float32 (f32) or
// float64 elements, for the kernel fwdAlgo picks (conv_algo.go). Float32
// convolutions with unit strides and at most 16 output channels per group
// or a shallow depth run the direct kernel (see perf_conv.go): the
// reordered weights plus a padded sample per goroutine. Other float32 convolutions run the batched
// GEMM (conv_gemm.go), which packs straight from the input into the GEMM's
// own buffers: 0. Depthwise convolutions (conv_depthwise.go) need a padded
// plane per goroutine with AVX-512 (float32), else nothing. Otherwise it is
// one im2col block per goroutine, 0 for 1×1 convolutions without stride or
// padding and for empty outputs. With Pool2 it is convPoolWorkspace's
// (conv_pool.go).
func Conv2DWorkspaceFor(p Conv2DParams, threads int, f32 bool) int {
	if p.N == 0 || p.O == 0 || p.OutH()*p.OutW() == 0 {
		return 0
	}
	if f32 && p.fwdAlgo(true) == convWinograd {
		return p.winoWorkspace(threads)
	}
	if p.Pool2 {
		return p.convPoolWorkspace(threads, f32)
	}
	switch p.fwdAlgo(f32) {
	case convDirect:
		return convDirectWorkspace(p, p.convDirectFwdPad(), p.convDirectParts(threads))
	case convGemm:
		return 0
	case convDepthwise:
		return p.convDepthwiseWorkspace(threads, f32)
	}
	return p.im2colWorkspace(threads)
}

// im2colWorkspace is the scratch of the im2col path: one im2col block per
// goroutine, 0 for 1×1 convolutions without stride or padding.
func (p Conv2DParams) im2colWorkspace(threads int) int {
	if p.direct() {
		return 0
	}
	parts, _ := p.conv2dPlan(threads)
	return min(parts, max(p.N, 1)) * p.colSize()
}

// Conv2D computes out = conv2d(x, w) through im2col and GEMM: for each
// sample and group, out_g (O/G × OH·OW) = w_g (O/G × C/G·KH·KW) · col_g,
// or for float32 with the direct kernel or the batched GEMM (see
// Conv2DWorkspaceFor and conv_algo.go),
// where col_g is the group's im2col matrix, built and multiplied one block
// of output rows at a time (see rowBlock). With p.Epilogue each sample's
// output (each block of output channels on the direct kernel) gets it
// right after it is computed. ws must hold at least
// Conv2DWorkspace(p, threads) elements. Each output element is computed by
// one GEMM whose summation order does not depend on threads, so results are
// the same for every thread count.
func Conv2D[T nnFloat](p Conv2DParams, x, w, out, ws []T, threads int) {
	oh, ow := p.OutH(), p.OutW()
	ohw := oh * ow
	if p.N == 0 || p.O == 0 || ohw == 0 {
		return
	}
	if p.Pool2 {
		conv2DPool(p, x, w, out, ws, threads)
		return
	}
	if conv2DFast(p, x, w, out, ws, threads) {
		return
	}
	conv2DIm2col(p, x, w, out, ws, threads)
}

// conv2DIm2col is Conv2D's im2col path. A function of its own: its
// goroutines capture p, which sends p to the heap, and the other paths
// should not pay for that.
func conv2DIm2col[T nnFloat](p Conv2DParams, x, w, out, ws []T, threads int) {
	oh, ow := p.OutH(), p.OutW()
	ohw := oh * ow
	cg, og := p.C/p.Groups, p.O/p.Groups
	kk := cg * p.KH * p.KW
	chw, hw := p.C*p.H*p.W, p.H*p.W
	parts, gemmThreads := p.conv2dPlan(threads)
	col, rb := p.colSize(), p.rowBlock()
	nnForWorkers(parts, p.N, func(part, lo, hi int) {
		var buf []T
		if !p.direct() {
			buf = ws[part*col : (part+1)*col]
		}
		for n := lo; n < hi; n++ {
			for g := range p.Groups {
				xg := x[n*chw+g*cg*hw : n*chw+(g+1)*cg*hw]
				outg := out[(n*p.O+g*og)*ohw:]
				wg := w[g*og*kk:]
				if p.direct() {
					nnGemm(false, false, og, ohw, kk, 1, wg, max(kk, 1), xg, ohw, 0, outg, ohw, gemmThreads)
					continue
				}
				for y0 := 0; y0 < oh; y0 += rb {
					y1 := min(y0+rb, oh)
					cols := (y1 - y0) * ow
					im2colPar(p, cg, xg, buf, y0, y1, gemmThreads)
					nnGemm(false, false, og, cols, kk, 1, wg, max(kk, 1), buf, cols, 0, outg[y0*ow:], ohw, gemmThreads)
				}
			}
			convEpilogue(p, out, n, gemmThreads)
		}
	})
}

// convEpilogue applies p.Epilogue to the output of sample n, its channels
// split over threads.
func convEpilogue[T nnFloat](p Conv2DParams, out []T, n, threads int) {
	if !p.Epilogue.on() {
		return
	}
	hw := p.OutH() * p.OutW()
	nnFor(threads, p.O, hw, func(lo, hi int) {
		epiPlanes(&p.Epilogue, out, p.O, n*p.O+lo, n*p.O+hi, hw)
	})
}

// im2colPar is im2colRows split over channels.
func im2colPar[T nnFloat](p Conv2DParams, channels int, x, col []T, y0, y1, threads int) {
	hw := p.H * p.W
	rows := p.KH * p.KW * (y1 - y0) * p.OutW()
	nnFor(threads, channels, rows, func(lo, hi int) {
		im2colRows(p, hi-lo, x[lo*hw:hi*hw], col[lo*rows:hi*rows], y0, y1)
	})
}

// Im2col writes the im2col matrix of channels input planes (x holds
// channels×H×W) into col, a (channels·KH·KW) × (OutH·OutW) row-major
// matrix: row (c·KH + i)·KW + j, column y·OutW + x holds the input at
// (c, y·SH − PH + i·DH, x·SW − PW + j·DW), or 0 in the padding.
func Im2col[T nnFloat](p Conv2DParams, channels int, x, col []T) {
	im2colRows(p, channels, x, col, 0, p.OutH())
}

// im2colRows is Im2col restricted to the output rows [y0, y1): col is
// (channels·KH·KW) × ((y1−y0)·OutW). With unit column stride each row of
// col is a strided block copy of the input (copy2D); padding is zeroed
// around it.
func im2colRows[T nnFloat](p Conv2DParams, channels int, x, col []T, y0, y1 int) {
	ow := p.OutW()
	ohw, hw := (y1-y0)*ow, p.H*p.W
	for c := range channels {
		xc := x[c*hw : (c+1)*hw]
		for i := range p.KH {
			ya, yb := convValidRows(p, i, y0, y1)
			for j := range p.KW {
				row := col[((c*p.KH+i)*p.KW+j)*ohw:][:ohw]
				off := j*p.DW - p.PW
				lo, hi := convValid(off, p.SW, p.W, ow)
				clear(row[:(ya-y0)*ow])
				clear(row[(yb-y0)*ow:])
				if lo > 0 || hi < ow {
					for y := ya; y < yb; y++ {
						r := row[(y-y0)*ow : (y-y0+1)*ow]
						for k := range r[:lo] {
							r[k] = 0
						}
						for k := range r[hi:] {
							r[hi+k] = 0
						}
					}
				}
				if yb <= ya || hi <= lo {
					continue
				}
				ih := ya*p.SH - p.PH + i*p.DH
				if p.SW == 1 {
					copy2D(row[(ya-y0)*ow+lo:], ow, xc[ih*p.W+lo+off:], p.SH*p.W, yb-ya, hi-lo)
					continue
				}
				for y := ya; y < yb; y++ {
					r := row[(y-y0)*ow : (y-y0+1)*ow]
					xr := xc[(ih+(y-ya)*p.SH)*p.W:][:p.W]
					for k := lo; k < hi; k++ {
						r[k] = xr[k*p.SW+off]
					}
				}
			}
		}
	}
}

// convValidRows returns the output rows [ya, yb) within [y0, y1) whose input
// row y·SH − PH + i·DH for kernel row i lies inside the input.
func convValidRows(p Conv2DParams, i, y0, y1 int) (ya, yb int) {
	first := p.PH - i*p.DH // ih >= 0  <=>  y·SH >= first
	ya = y0
	if first > 0 {
		ya = max(y0, (first+p.SH-1)/p.SH)
	}
	last := p.H - 1 + p.PH - i*p.DH // ih <= H−1  <=>  y·SH <= last
	yb = y0
	if last >= 0 {
		yb = min(y1, last/p.SH+1)
	}
	ya = min(ya, y1)
	return ya, max(ya, yb)
}

// Col2im is the adjoint of Im2col: it adds each element of col into the
// input position it was read from (padding positions are dropped). x
// (channels×H×W) is accumulated into, not overwritten.
func Col2im[T nnFloat](p Conv2DParams, channels int, col, x []T) {
	oh, ow := p.OutH(), p.OutW()
	ohw, hw := oh*ow, p.H*p.W
	for c := range channels {
		xc := x[c*hw : (c+1)*hw]
		for i := range p.KH {
			for j := range p.KW {
				row := col[((c*p.KH+i)*p.KW+j)*ohw:][:ohw]
				off := j*p.DW - p.PW
				lo, hi := convValid(off, p.SW, p.W, ow)
				for y := range oh {
					ih := y*p.SH - p.PH + i*p.DH
					if ih < 0 || ih >= p.H {
						continue
					}
					r := row[y*ow : (y+1)*ow]
					xr := xc[ih*p.W : (ih+1)*p.W]
					for k := lo; k < hi; k++ {
						xr[k*p.SW+off] += r[k]
					}
				}
			}
		}
	}
}

// convValid returns the range [lo,hi) of output columns k whose input
// column k·s + off lies in [0, w), clamped to [0, ow].
func convValid(off, s, w, ow int) (lo, hi int) {
	if off < 0 {
		lo = (-off + s - 1) / s
	}
	if w-1-off >= 0 {
		hi = (w-1-off)/s + 1
	}
	lo = min(lo, ow)
	hi = max(min(hi, ow), lo)
	return lo, hi
}
