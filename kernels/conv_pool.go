package kernels

// A convolution followed by a 2×2 stride-2 max pool (Conv2DParams.Pool2),
// as the small CNNs of the inference benchmark end each block with
// (conv, batch norm, ReLU, max pool; the batch norm folded and the ReLU
// fused by package optimize). Run as two ops the convolution writes its
// full-resolution output, four times the pool's, and the pool reads it
// back: at batch 64 the small CNN's first layer writes 8 MB, more than the
// caches keep, and the pool was a tenth of the model's time, bound by
// memory. On the direct kernel with its epilogue in registers
// (convDirectEpi) the kernel pools each pair of rows in its registers
// where its calls cover whole row pairs and 16-column chunks
// (convPoolRegs), else each goroutine computes one block of 16 output
// channels of a sample into a scratch block and pools it at once; every
// other kernel computes the whole output into the workspace and pools it
// after. All write the bits that Conv2D followed by MaxPool2DValues
// writes.

// convPoolDirect reports whether Conv2D with Pool2 pools block by block
// on the direct kernel.
func (p Conv2DParams) convPoolDirect(f32 bool) bool {
	return f32 && p.fwdAlgo(true) == convDirect && p.convDirectEpi()
}

// convPoolRegs reports whether the direct kernel, where it pools
// (convPoolDirect, which its callers have checked), pools in its
// registers (convRowsEpiPool) as it stores each pair of rows, so that not
// even a scratch block holds the full-resolution output: where every
// call of the kernel has an even number of rows (the tile's, dividing
// OH) of whole 16-column chunks (OW a multiple of 16) summed over the
// whole depth in one slice. The small CNN's layers, one thread, minimum wall
// time per call over 4,000 alternating with the scratch block: 3→32 on
// 32×32 10.5 → 10.05 µs at batch 1, 82 → 76 at batch 8; 32→64 on 16×16
// 43.7 → 42.7 and 344 → 335.
func (p Conv2DParams) convPoolRegs() bool {
	if !p.Pool2 || convDirectOff.poolRegs {
		return false
	}
	_, rows := p.convDirectTile()
	return rows%2 == 0 && p.OutH()%rows == 0 && p.OutW()%16 == 0 && p.convDirectSlice() == p.C/p.Groups*p.KH*p.KW
}

// convPoolParams is the pool over the convolution's output.
func (p Conv2DParams) convPoolParams() Pool2DParams {
	return Pool2DParams{N: p.N, C: p.O, H: p.OutH(), W: p.OutW(), KH: 2, KW: 2, SH: 2, SW: 2}
}

// convPoolWorkspace is Conv2DWorkspaceFor with Pool2: the direct kernel's
// (a block per goroutine included), else the full output followed by the
// convolution's own workspace.
func (p Conv2DParams) convPoolWorkspace(threads int, f32 bool) int {
	if p.convPoolDirect(f32) {
		return convDirectWorkspace(p, p.convDirectFwdPad(), p.convDirectParts(threads))
	}
	q := p
	q.Pool2 = false
	return p.N*p.O*p.OutH()*p.OutW() + Conv2DWorkspaceFor(q, threads, f32)
}

// conv2DPool is Conv2D with Pool2 (p has a non-empty convolution output).
func conv2DPool[T nnFloat](p Conv2DParams, x, w, out, ws []T, threads int) {
	if p.OutH() < 2 || p.OutW() < 2 {
		return // an empty pool
	}
	xf, f32 := any(x).([]float32)
	if f32 && p.fwdAlgo(true) == convWinograd {
		conv2DWinograd(p, xf, any(w).([]float32), any(out).([]float32), any(ws).([]float32), threads)
		return
	}
	if p.convPoolDirect(f32) {
		conv2DDirect(p, xf, any(w).([]float32), any(out).([]float32), any(ws).([]float32), threads)
		return
	}
	q := p
	q.Pool2 = false
	n := p.N * p.O * p.OutH() * p.OutW()
	Conv2D(q, x, w, ws[:n], ws[n:], threads)
	MaxPool2DValues(p.convPoolParams(), ws[:n], out, threads)
}
