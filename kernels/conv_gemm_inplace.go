package kernels

// Panels read in place. The convolution GEMM (conv_gemm.go) packs nr
// im2col columns for every slice of the depth before running their tiles.
// When those columns read, for every im2col row, nr consecutive input
// elements with no padding among them — unit column stride, the panel in
// one image, every tap of every column inside the input: an interior
// stretch of an output row for a 3×3 "same" convolution, any stretch of
// an image for a 1×1 one — row k of the panel is simply the input from
// base + kOff_k on, and the micro-kernel reads it there
// (gemmKernel.indirect, with the im2col row table's offsets). The
// products and their order are those of the packed panel, so the results
// are the same bits; only the copy is gone (on 160×160 maps with 16 or 32
// channels it was a sixth of the convolution's time).

// convInPlaceOff, when set, packs every panel (tests compare the two).
var convInPlaceOff bool

// inPlace reports whether the panel of nw columns whose column table
// starts at cols (stride s, see convColTab) can be read in place, and
// returns its first column's input offset. The panel must be whole (nr
// columns) and lie in one image's output (from position pos of it).
func (j *convGemmJob) inPlace(cols []int32, s, nw, pos int) (base int, ok bool) {
	p, kern := j.p, j.kern
	if convInPlaceOff || kern.indirect == nil || nw != kern.nr || p.SW != 1 || pos+nw > j.ohw {
		return 0, false
	}
	b, iy, ix := cols[:nw], cols[s:s+nw], cols[2*s:2*s+nw]
	ylast, xlast := int32((p.KH-1)*p.DH), int32((p.KW-1)*p.DW)
	h, w := int32(p.H), int32(p.W)
	for r := range nw {
		if iy[r] < 0 || iy[r]+ylast >= h || ix[r] < 0 || ix[r]+xlast >= w || b[r] != b[0]+int32(r) {
			return 0, false
		}
	}
	return int(b[0]), true
}

// tilesInPlace runs the tiles of one whole panel, its B read in place from
// the group's input xg at base (inPlace), the depth slice's rows kt of the
// im2col row table, straight into out: rows output channels of group g
// from ic, columns [q, q+nr) of C (one image's). a is the rows' packed
// panels of A for the slice, kb deep.
func (j *convGemmJob) tilesInPlace(a, xg []float32, base int, kt []int32, g, ic, rows, q, kb int, beta float32) {
	kern, ohw := j.kern, j.ohw
	mr := kern.mr
	n, pos := q/ohw, q%ohw
	o0 := g*(j.p.O/j.p.Groups) + ic
	for ir := 0; ir < rows; ir += mr {
		h := min(mr, rows-ir)
		c := j.out[(n*j.p.O+o0+ir)*ohw+pos:]
		kern.indirect[h-1](kb, &a[ir*kb], &xg[base], &kt[0], &c[0], ohw, 1, beta)
	}
}
