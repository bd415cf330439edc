package kernels

import "fmt"

// The direct kernel's weights reordered once. conv2DDirect reads a tile's
// weights step by step (wt[s·ob + o], convDirectTile's ob channels), so it
// reorders the O×C/G×KH×KW weights into that order on every call: about
// a sixth of the small CNN's 32→64 layer at batch 1. For weights constant
// at inference PackConv2D writes that order once (form ConvPackDirect)
// and conv2DDirect reads it from Conv2DParams.Packed instead: the same
// values in the same places, so the same bits.
//
// Layout: one cache line of header (the mark, the tile's channels, the
// form, the steps C/G·KH·KW, the output channels per group, the groups),
// then the weights as conv2DDirect's reordering writes them.

// ConvPackDirect is the form of packed weights the direct kernel reads
// (Conv2DPackForm): its tiles' weights step by step.
const ConvPackDirect = 3

// convDirectPackedLen is the length of p's weights packed for the direct
// kernel: the header and the weights.
func (p Conv2DParams) convDirectPackedLen() int {
	return packedHeader[float32]() + p.O*(p.C/p.Groups)*p.KH*p.KW
}

// convDirectHeader is the header a packed copy for p carries.
func (p Conv2DParams) convDirectHeader() [6]uint32 {
	tob, _ := p.convDirectTile()
	return [6]uint32{convPackedMagic, uint32(tob), ConvPackDirect, uint32(p.C / p.Groups * p.KH * p.KW), uint32(p.O / p.Groups), uint32(p.Groups)}
}

// packConv2DDirect writes w reordered for the direct kernel, with its
// header, into dst (convDirectPackedLen(p) elements).
func packConv2DDirect(p Conv2DParams, w, dst []float32) {
	n, nw := p.convDirectPackedLen(), p.O*(p.C/p.Groups)*p.KH*p.KW
	if len(dst) < n || len(w) < nw {
		panic(fmt.Sprintf("kernels: PackConv2D: dst %d (need %d), w %d (need %d)", len(dst), n, len(w), nw))
	}
	h := packedHeader[float32]()
	clear(dst[:h])
	for i, v := range p.convDirectHeader() {
		dst[i] = fromBits[float32](v)
	}
	convDirectReorder(p, w, dst[h:n])
}

// convDirectPacked returns the reordered weights in p.Packed when it
// holds them for this call (form, tile and dimensions), else nil: a copy
// made for the GEMM, for another tile or for other weights is never
// misread.
func convDirectPacked(p Conv2DParams) []float32 {
	pw, h := p.Packed, packedHeader[float32]()
	if len(pw) < p.convDirectPackedLen() {
		return nil
	}
	for i, v := range p.convDirectHeader() {
		if toBits(pw[i]) != v {
			return nil
		}
	}
	return pw[h:p.convDirectPackedLen()]
}

// convDirectReorder writes w into wt in the order conv2DDirect reads: per
// group, block of 16 output channels and tile of tob channels in the block
// (convDirectTile), the tile's weights step by step: wt[s·ob + o] =
// w[o][c][i][j] for step s = (c, i, j).
func convDirectReorder(p Conv2DParams, w, wt []float32) {
	og, nsteps := p.O/p.Groups, p.C/p.Groups*p.KH*p.KW
	tob, _ := p.convDirectTile()
	for g := range p.Groups {
		for b0 := 0; b0 < og; b0 += 16 {
			for t0 := b0; t0 < min(og, b0+16); t0 += tob {
				ob := min(tob, og-t0, b0+16-t0)
				blk := wt[(g*og+t0)*nsteps : (g*og+t0+ob)*nsteps]
				for o := range ob {
					wo := w[(g*og+t0+o)*nsteps : (g*og+t0+o+1)*nsteps]
					for s, v := range wo {
						blk[s*ob+o] = v
					}
				}
			}
		}
	}
}
