package kernels

// Depthwise convolution (groups = input channels = output channels): each
// output plane is one input plane filtered by its own KH×KW kernel. Through
// im2col each group would be a GEMM with one row, packed and multiplied
// per image and channel; here each plane is computed directly. Every output
// element is one sum over the kernel taps (i, j) in order, computed by one
// goroutine, so results do not depend on the thread count.
//
// With AVX-512 (float32) the plane is copied once, zero-padded and split
// by column phase (column k·SW + φ of the padded plane goes to phase φ,
// column k), so that for every tap the output row reads a contiguous run
// of one phase, whatever the column stride; convRows then computes up to
// 6 output rows of 16 columns at a time with one fused multiply-add per
// tap. Elsewhere a Go loop adds each tap's weighted input row into the
// output row. Each finished plane gets p.Epilogue.

// depthwise reports whether the convolution is depthwise.
func (p Conv2DParams) depthwise() bool {
	return p.Groups > 1 && p.C == p.Groups && p.O == p.Groups
}

// convDepthwiseParts is how many goroutines take the N·C planes.
func (p Conv2DParams) convDepthwiseParts(threads int) int {
	return nnParts(threads, p.N*p.C, p.KH*p.KW*p.OutH()*p.OutW())
}

// convDepthwisePhases describes the phase-split padded plane: SW phases of
// hp rows of wq columns, plus slack for the 16-lane loads past the end.
type convDepthwisePhases struct{ hp, wq int }

func (p Conv2DParams) convDepthwisePhases() convDepthwisePhases {
	return convDepthwisePhases{hp: p.H + 2*p.PH, wq: ceilDiv(p.W+2*p.PW, p.SW)}
}

func (p Conv2DParams) convDepthwiseBuf() int {
	ph := p.convDepthwisePhases()
	return p.SW*ph.hp*ph.wq + ph.wq + 32
}

// convDepthwiseWorkspace is the scratch of the depthwise kernel: a padded
// plane per goroutine for the vector kernel, none for the Go loop.
func (p Conv2DParams) convDepthwiseWorkspace(threads int, f32 bool) int {
	if !f32 || !convRowOK() {
		return 0
	}
	return p.convDepthwiseParts(threads) * p.convDepthwiseBuf()
}

// conv2DDepthwise is Conv2D for depthwise convolutions with a non-empty
// output; ws holds convDepthwiseWorkspace elements. With one goroutine it
// calls the loop itself, so that the call allocates nothing (the
// goroutines' closures, in a function of their own, capture p).
func conv2DDepthwise[T nnFloat](p Conv2DParams, x, w, out, ws []T, threads int) {
	parts := p.convDepthwiseParts(threads)
	xf, vec := any(x).([]float32)
	vec = vec && convRowOK()
	switch {
	case parts > 1:
		conv2DDepthwiseParallel(p, x, w, out, ws, parts, vec)
	case vec:
		p.convDepthwiseVec(xf, any(w).([]float32), any(out).([]float32), any(ws).([]float32), 0, p.N*p.C)
	default:
		convDepthwiseGo(p, x, w, out, 0, p.N*p.C)
	}
}

// conv2DDepthwiseParallel is conv2DDepthwise on parts goroutines, with
// the vector kernel (vec) or the Go loop.
func conv2DDepthwiseParallel[T nnFloat](p Conv2DParams, x, w, out, ws []T, parts int, vec bool) {
	if vec {
		xf, wf, of, wsf := any(x).([]float32), any(w).([]float32), any(out).([]float32), any(ws).([]float32)
		size := p.convDepthwiseBuf()
		nnForParts(parts, p.N*p.C, func(part, lo, hi int) {
			p.convDepthwiseVec(xf, wf, of, wsf[part*size:(part+1)*size], lo, hi)
		})
		return
	}
	nnForParts(parts, p.N*p.C, func(_, lo, hi int) { convDepthwiseGo(p, x, w, out, lo, hi) })
}

// convDepthwiseGo computes the output planes [lo, hi) (image·C + channel)
// with Go loops.
func convDepthwiseGo[T nnFloat](p Conv2DParams, x, w, out []T, lo, hi int) {
	oh, ow := p.OutH(), p.OutW()
	hw, ohw, kk := p.H*p.W, oh*ow, p.KH*p.KW
	for pl := lo; pl < hi; pl++ {
		xc, oc, wc := x[pl*hw:(pl+1)*hw], out[pl*ohw:(pl+1)*ohw], w[pl%p.C*kk:(pl%p.C+1)*kk]
		clear(oc)
		for y := range oh {
			orow := oc[y*ow : (y+1)*ow]
			for i := range p.KH {
				ih := y*p.SH - p.PH + i*p.DH
				if ih < 0 || ih >= p.H {
					continue
				}
				xr := xc[ih*p.W : (ih+1)*p.W]
				for j := range p.KW {
					off := j*p.DW - p.PW
					lo, hi := convValid(off, p.SW, p.W, ow)
					wv := wc[i*p.KW+j]
					if p.SW == 1 {
						dst := orow[lo:hi]
						for k, v := range xr[lo+off : hi+off] {
							dst[k] += wv * v
						}
						continue
					}
					for k := lo; k < hi; k++ {
						orow[k] += wv * xr[k*p.SW+off]
					}
				}
			}
		}
		epiPlanes(&p.Epilogue, out, p.O, pl, pl+1, ohw)
	}
}

// convDepthwiseOffs appends to offs the offset of each tap (i, j) in the
// phase-split plane (see convDepthwiseFill) and returns it with the
// largest.
func (p Conv2DParams) convDepthwiseOffs(offs []int64) ([]int64, int) {
	ph := p.convDepthwisePhases()
	plane, maxOff := ph.hp*ph.wq, 0
	for i := range p.KH {
		for j := range p.KW {
			col := j * p.DW
			off := col%p.SW*plane + i*p.DH*ph.wq + col/p.SW
			offs = append(offs, int64(off))
			maxOff = max(maxOff, off)
		}
	}
	return offs, maxOff
}

// convDepthwiseVec computes the output planes [lo, hi) with the AVX-512
// rows kernel (see above); buf holds convDepthwiseBuf elements.
func (p Conv2DParams) convDepthwiseVec(x, w, out, buf []float32, lo, hi int) {
	// The offsets come from a pooled buffer: convRows calls the assembly
	// through a table, so a stack array would escape on every call.
	ws := convScratchPool.Get().(*convScratch)
	defer convScratchPool.Put(ws)
	offs, maxOff := p.convDepthwiseOffs(ws.taps[:0])
	ws.taps = offs
	oh, ow := p.OutH(), p.OutW()
	hw, ohw, kk := p.H*p.W, oh*ow, p.KH*p.KW
	wq := p.convDepthwisePhases().wq
	rows := convRowsMax(1)
	buf = buf[:p.convDepthwiseBuf()]
	for pl := lo; pl < hi; pl++ {
		p.convDepthwiseFill(buf, x[pl*hw:(pl+1)*hw])
		oc, wc := out[pl*ohw:(pl+1)*ohw], w[pl%p.C*kk:(pl%p.C+1)*kk]
		for x0 := 0; x0 < ow; x0 += 16 {
			for y := 0; y < oh; y += rows {
				r := min(rows, oh-y)
				convRows(1, r, buf, y*p.SH*wq+x0, p.SH*wq, offs, 0, maxOff, wc, oc[y*ow+x0:], ohw, ow, min(16, ow-x0))
			}
		}
		epiPlanes(&p.Epilogue, out, p.O, pl, pl+1, ohw)
	}
}

// convDepthwiseFill writes the padded, phase-split copy of one input
// plane (H×W) into buf: phase φ, row r, column k holds padded column
// k·SW + φ of padded row r; everything else is zero.
func (p Conv2DParams) convDepthwiseFill(buf, src []float32) {
	ph := p.convDepthwisePhases()
	plane := ph.hp * ph.wq
	clear(buf)
	for phase := range p.SW {
		// Phase column k holds input column k·SW + phase − PW.
		k0 := max(0, ceilDiv(p.PW-phase, p.SW))
		for r := range p.H {
			row := buf[phase*plane+(r+p.PH)*ph.wq : phase*plane+(r+p.PH+1)*ph.wq]
			sr := src[r*p.W : (r+1)*p.W]
			if p.SW == 1 {
				copy(row[p.PW:], sr)
				continue
			}
			for k, c := k0, k0*p.SW+phase-p.PW; k < ph.wq && c < p.W; k, c = k+1, c+p.SW {
				row[k] = sr[c]
			}
		}
	}
}
