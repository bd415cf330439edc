package kernels

// Implicit im2col: the convolution GEMM (conv_gemm.go) packs its im2col
// operand straight from the input into the micro-kernel's panels, so no
// im2col matrix is ever written and read back. Row k = (c·KH + i)·KW + j of
// the im2col matrix and column q (image n, output position (oy, ox)) hold
//
//	x[n][c][oy·SH − PH + i·DH][ox·SW − PW + j·DW]   (0 outside the input)
//
// which is x[base_q + kOff_k] when 0 ≤ iy_q + di_k < H and
// 0 ≤ ix_q + dj_k < W, with
//
//	base_q = n·C·H·W + iy_q·W + ix_q,  iy_q = oy·SH − PH,  ix_q = ox·SW − PW,
//	kOff_k = c·H·W + di_k·W + dj_k,    di_k = i·DH,        dj_k = j·DW.
//
// The tables hold these numbers as int32 (convGemmOK bounds them), so that
// the AVX-512 packer gathers 16 lanes per instruction with 32-bit indices.

// convKTab fills tab (4 entries per k: kOff, di, dj, 0) for the rows of one
// group's im2col matrix (cg·KH·KW of them) and returns it.
func convKTab(p Conv2DParams, tab []int32) []int32 {
	cg, hw := p.C/p.Groups, p.H*p.W
	tab = tab[:4*cg*p.KH*p.KW]
	k := 0
	for c := range cg {
		for i := range p.KH {
			for j := range p.KW {
				di, dj := i*p.DH, j*p.DW
				tab[k], tab[k+1], tab[k+2], tab[k+3] = int32(c*hw+di*p.W+dj), int32(di), int32(dj), 0
				k += 4
			}
		}
	}
	return tab
}

// convColsStride is the length of each of the three arrays of a column
// table for n columns: n rounded up to whole vectors, plus one vector,
// since a panel's packer loads whole 16-lane vectors of every array.
func convColsStride(n int) int { return (n+15)&^15 + 16 }

// convColTab fills tab (3·convColsStride(n) entries) with the columns
// [q0, q0+n) of the im2col matrix: base, then iy, then ix, each array
// convColsStride(n) long. Entries past n get an iy that no kernel row
// brings inside the input, so packing them gives zeros.
func convColTab(p Conv2DParams, q0, n int, tab []int32) []int32 {
	s := convColsStride(n)
	tab = tab[:3*s]
	base, iy, ix := tab[:s], tab[s:2*s], tab[2*s:]
	oh, ow := p.OutH(), p.OutW()
	ohw, chw := oh*ow, p.C*p.H*p.W
	img, pos := q0/ohw, q0%ohw
	oy, ox := pos/ow, pos%ow
	for r := range n {
		y, x := oy*p.SH-p.PH, ox*p.SW-p.PW
		base[r], iy[r], ix[r] = int32(img*chw+y*p.W+x), int32(y), int32(x)
		if ox++; ox == ow {
			ox = 0
			if oy++; oy == oh {
				oy = 0
				img++
			}
		}
	}
	for r := n; r < s; r++ {
		base[r], iy[r], ix[r] = 0, convColOutside, 0
	}
	return tab
}

// convColOutside is the iy of a column past the matrix's end: iy + di
// stays ≥ H for every kernel row (both are far below 2³¹).
const convColOutside = 1 << 30

// convPackGo writes the panel of the im2col matrix's rows ktab (kb of
// them) and the columns of the table cols (stride s, see convColTab):
// d[k·w + r] for r < w. x is the input of the group's first channel. The
// panel's columns fall into segments that read consecutive elements of
// one input row (with unit column stride, one output row's worth each);
// when they are at least 4 columns long on average, each segment of each
// row is one clipped copy, else every element is read on its own.
func convPackGo(d, x []float32, ktab []int32, kb int, cols []int32, s, w, h, wd int) {
	base, iy, ix := cols[:w], cols[s:s+w], cols[2*s:2*s+w]
	var starts [65]int
	n := 0
	for r := range w {
		if n == len(starts)-1 {
			n = w // too many to keep: element by element
			break
		}
		past := iy[r] == convColOutside
		if r == 0 || iy[r] != iy[r-1] || !past && (base[r] != base[r-1]+1 || ix[r] != ix[r-1]+1) {
			starts[n] = r
			n++
		}
	}
	if 4*n > w {
		convPackElems(d, x, ktab, kb, base, iy, ix, h, wd)
		return
	}
	starts[n] = w
	for k := range kb {
		kt := ktab[4*k : 4*k+4]
		kOff, di, dj := kt[0], kt[1], kt[2]
		row := d[k*w : k*w+w]
		for g := range n {
			a, b := starts[g], starts[g+1]
			seg := row[a:b]
			c0 := int(ix[a] + dj) // input column of the segment's first lane
			lo, hi := max(0, -c0), min(b-a, wd-c0)
			if uint32(iy[a]+di) >= uint32(h) || hi <= lo {
				clear(seg)
				continue
			}
			clear(seg[:lo])
			clear(seg[hi:])
			src := int(base[a] + kOff)
			copy(seg[lo:hi], x[src+lo:src+hi])
		}
	}
}

// convPackElems is convPackGo one element at a time.
func convPackElems(d, x []float32, ktab []int32, kb int, base, iy, ix []int32, h, wd int) {
	w := len(base)
	for k := range kb {
		kt := ktab[4*k : 4*k+4]
		kOff, di, dj := kt[0], kt[1], kt[2]
		row := d[k*w : k*w+w]
		for r := range row {
			v := float32(0)
			if uint32(iy[r]+di) < uint32(h) && uint32(ix[r]+dj) < uint32(wd) {
				v = x[base[r]+kOff]
			}
			row[r] = v
		}
	}
}

// convPack is convPackGo through the AVX-512 gather loop where there is
// one (convPackVec).
func convPack(d, x []float32, ktab []int32, kb int, cols []int32, s, w, h, wd int) {
	if kb == 0 || convPackVec(d, x, ktab, kb, cols, s, w, h, wd) {
		return
	}
	convPackGo(d, x, ktab, kb, cols, s, w, h, wd)
}

// convPackRuns reports whether each of the nv 16-lane vectors of the
// column table cols (stride s) covers input elements step apart: in every
// lane that is a column (not past the table's end), base step more than
// the lane before (1: consecutive elements; 2: every other one, as a
// column stride of 2 reads within an output row). The lanes may span
// input rows (an output row that ends where the next one starts, as with
// unit column stride and "same" padding): which lanes hold input and
// which padding is decided per lane from iy and ix, so only the addresses
// must be evenly spaced.
func convPackRuns(cols []int32, s, nv, step int) bool {
	base, iy := cols[:16*nv], cols[s:s+16*nv]
	for v := range nv {
		r0 := 16 * v
		for r := r0 + 1; r < r0+16; r++ {
			if iy[r] == convColOutside {
				break
			}
			if base[r] != base[r0]+int32(step*(r-r0)) {
				return false
			}
		}
	}
	return true
}

// convPackHalves reports whether each half (8 lanes) of each of the nv
// vectors of the column table cols (stride s) reads every other input
// element from its first lane on: base 2 more than the lane before in
// every lane that is a column. A vector whose output row ends at lane 8
// (a map 8 wide, or 8 columns past whole vectors) has its halves in two
// input rows; within one row the whole vector qualifies
// (convPackRuns(cols, s, nv, 2) implies this).
func convPackHalves(cols []int32, s, nv int) bool {
	base, iy := cols[:16*nv], cols[s:s+16*nv]
	for h := 0; h < 16*nv; h += 8 {
		for r := h + 1; r < h+8; r++ {
			if iy[r] == convColOutside {
				break
			}
			if base[r] != base[h]+int32(2*(r-h)) {
				return false
			}
		}
	}
	return true
}
