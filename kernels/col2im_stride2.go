package kernels

import "math/bits"

// col2imStride2Off turns col2imStride2 off (tests compare it with the
// scalar loop).
var col2imStride2Off bool

// col2imStride2 is col2imRows for float32 and column stride 2 with the
// AVX-512 loop of perf_amd64.s: per channel and kernel row, each input
// row takes its kernel columns' terms in a register, 16 columns at a
// time, and is stored once, where the scalar loop loads and stores an
// element per term and cannot use vectors at all. With stride 2 a kernel
// column's terms land on every other column of the input row: lane L of
// the chunk starting at input column w0 takes output column
// (w0 + L − lw)/2 where that is whole (lw = j·DW − PW, the input column
// of output column 0), that is src element base + L>>1 with base =
// ⌈(w0 − lw)/2⌉, on the lanes of the right parity that fall inside the
// input and the output rows. The terms are added in the same order.
func col2imStride2(p Conv2DParams, channels int, col, x []float32, y0, y1 int) {
	ow := p.OutW()
	ohw := (y1 - y0) * ow
	chunks := (p.W + 15) / 16
	var buf [160]int64
	tab := buf[:0]
	if n := chunks * (1 + 3*p.KW); n > len(buf) {
		tab = make([]int64, 0, n)
	}
	lo, hi, reached := 0, 0, false // src elements read from a row start: [lo, hi)
	for c := range chunks {
		w0 := 16 * c
		tab = append(tab, int64(1)<<min(16, p.W-w0)-1)
		for j := range p.KW {
			lw := j*p.DW - p.PW
			base := (w0 - lw + 1) >> 1
			var lanes, loads int64
			for l := range min(16, p.W-w0) {
				if (w0+l-lw)&1 != 0 {
					continue
				}
				if ox := (w0 + l - lw) >> 1; ox >= 0 && ox < ow {
					lanes |= 1 << l
					loads |= 1 << (l >> 1)
				}
			}
			off := j*ohw + base
			if loads != 0 {
				first := off + bits.TrailingZeros64(uint64(loads))
				last := off + 63 - bits.LeadingZeros64(uint64(loads))
				if !reached {
					lo, hi, reached = first, last+1, true
				}
				lo, hi = min(lo, first), max(hi, last+1)
			}
			tab = append(tab, lanes, loads, int64(off))
		}
	}
	col2imVecRows(p, channels, col, x, y0, y1, tab, chunks, lo, hi, true)
}
