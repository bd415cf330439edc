package kernels

import "fmt"

// Convolution weights packed once. At inference a convolution's weights
// are the same on every call, yet the batched GEMM (conv_gemm.go) packs
// them into its micro-kernel's panels on each one; at batch 1 on small
// maps, where the weights are large and the columns few, that packing was
// near half of a ResNet's time. PackConv2D packs them once, for the
// orientation the call computes in (the weights are the A operand of the
// plain product, the B operand of the transposed one), and Conv2D reads
// its panels from that copy when Conv2DParams.Packed holds it. The panels
// are the ones the call packs for itself, so the results are the same
// bits.
//
// Layout: one cache line of header (a mark, the kernel's id, the form,
// the depth and output channels per group, the groups), then per group,
// per slice of the depth as the call cuts it (balancedBlock(k, kc, 1)),
// the panels of all the group's output channels: ceil(og/mr) panels of mr
// rows (plain) or ceil(og/nr) panels of nr columns (transposed), each as
// deep as the slice, zero past og.

// The forms of packed convolution weights (Conv2DPackForm).
const (
	ConvPackNone  = 0 // Conv2D reads no packed weights for these params
	ConvPackPlain = 1 // A panels: the plain product
	ConvPackTrans = 2 // B panels: the transposed product
)

// convPackedMagic marks a packed weights buffer's header.
const convPackedMagic = 0x5043_4e56 // "PCNV"

// Conv2DPackForm is the form of packed weights Conv2D on float32 reads for
// p: the batched GEMM's plain or transposed panels, the direct kernel's
// reordered weights (conv_direct_packed.go), or ConvPackNone for
// convolutions another kernel computes (depthwise, im2col) and for empty
// ones. It depends on the input's shape as well as the weights': the
// batch's output positions choose the kernel and the orientation.
func Conv2DPackForm(p Conv2DParams) int {
	if p.N <= 0 || p.O <= 0 || p.Groups <= 0 || p.OutH()*p.OutW() == 0 {
		return ConvPackNone
	}
	switch p.fwdAlgo(true) {
	case convDirect:
		return ConvPackDirect
	case convWinograd:
		return ConvPackWinograd
	case convGemm:
		if kern := sgemmActive.Load(); convGemmTransposed(p, kern) || convGemmStridedOK(p, kern) {
			return ConvPackTrans
		}
		return ConvPackPlain
	}
	return ConvPackNone
}

// Conv2DPackedLen is the length in float32 elements of the weights of p
// packed by PackConv2D: 0 for ConvPackNone.
func Conv2DPackedLen(p Conv2DParams) int {
	form := Conv2DPackForm(p)
	if form == ConvPackNone {
		return 0
	}
	switch form {
	case ConvPackDirect:
		return p.convDirectPackedLen()
	case ConvPackWinograd:
		return p.winoPackedLen()
	}
	kern := sgemmActive.Load()
	k := p.C / p.Groups * p.KH * p.KW
	return packedHeader[float32]() + p.Groups*k*convPackedWidth(p.O/p.Groups, kern, form)
}

// convPackedWidth is og rounded up to whole panels of the form.
func convPackedWidth(og int, kern *gemmKernel[float32], form int) int {
	w := kern.mr
	if form == ConvPackTrans {
		w = kern.nr
	}
	return ceilDiv(og, w) * w
}

// PackConv2D packs w (O×C/G×KH×KW) into dst, Conv2DPackedLen(p) elements
// long, for Conv2D with params of the same form (Conv2DPackForm).
func PackConv2D(p Conv2DParams, w, dst []float32) {
	form := Conv2DPackForm(p)
	n := Conv2DPackedLen(p)
	if form == ConvPackNone {
		panic("kernels: PackConv2D for a convolution that reads no packed weights")
	}
	switch form {
	case ConvPackDirect:
		packConv2DDirect(p, w, dst)
		return
	case ConvPackWinograd:
		packConv2DWinograd(p, w, dst)
		return
	}
	k, og := p.C/p.Groups*p.KH*p.KW, p.O/p.Groups
	if len(dst) < n || len(w) < p.O*k {
		panic(fmt.Sprintf("kernels: PackConv2D: dst %d (need %d), w %d (need %d)", len(dst), n, len(w), p.O*k))
	}
	kern := sgemmActive.Load()
	h := packedHeader[float32]()
	clear(dst[:h])
	for i, v := range []uint32{convPackedMagic, uint32(kern.id), uint32(form), uint32(k), uint32(og), uint32(p.Groups)} {
		dst[i] = fromBits[float32](v)
	}
	kc, ow := balancedBlock(k, kern.kc, 1), convPackedWidth(og, kern, form)
	pk := kern.pack.orDefault()
	for g := range p.Groups {
		wg := w[g*og*k:]
		for pc := 0; pc < k; pc += kc {
			kb := min(kc, k-pc)
			d := dst[h+(g*k+pc)*ow:]
			if form == ConvPackTrans {
				packB(d, pk, true, wg, k, pc, 0, kb, og, kern.nr)
			} else {
				packA(d, pk, false, wg, k, 0, pc, og, kb, kern.mr)
			}
		}
	}
}

// convPackedPanels returns the panels of p.Packed past the header when it
// holds the weights packed for this call (kernel, form and dimensions),
// else nil: a copy made for another kernel or orientation is never misread.
func convPackedPanels(p Conv2DParams, kern *gemmKernel[float32], trans bool, k int) []float32 {
	pw := p.Packed
	h := packedHeader[float32]()
	if len(pw) < h {
		return nil
	}
	form := ConvPackPlain
	if trans {
		form = ConvPackTrans
	}
	og := p.O / p.Groups
	for i, v := range []uint32{convPackedMagic, uint32(kern.id), uint32(form), uint32(k), uint32(og), uint32(p.Groups)} {
		if toBits(pw[i]) != v {
			return nil
		}
	}
	if len(pw) < h+p.Groups*k*convPackedWidth(og, kern, form) {
		return nil
	}
	return pw[h:]
}
