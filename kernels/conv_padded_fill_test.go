package kernels

import (
	"fmt"
	"math"
	"testing"
)

// TestConvPaddedFillRows: fillRows writes the padded rows [r0, r1) of
// every plane — the input where it lies, zeros around it, and the slack
// with the last row — and nothing else, whether its rows are narrower
// than convPadClearWidth (cleared whole, then copied) or not (borders
// cleared row by row). The buffer starts as NaN, so a border left
// unwritten, or an element written outside the rows, shows.
func TestConvPaddedFillRows(t *testing.T) {
	for _, c := range []convPadded{
		{ch: 32, h: 16, w: 16, hp: 18, wp: 18, top: 1, left: 1}, // the small CNN's second layer
		{ch: 3, h: 32, w: 32, hp: 34, wp: 34, top: 1, left: 1},  // its first
		{ch: 2, h: 5, w: 63, hp: 9, wp: 67, top: 2, left: 2},    // just narrower than the threshold
		{ch: 2, h: 7, w: 64, hp: 9, wp: 66, top: 1, left: 1},    // at it: borders row by row
		{ch: 3, h: 6, w: 70, hp: 10, wp: 75, top: 3, left: 0},   // no left border, a wide right one
		{ch: 1, h: 4, w: 9, hp: 4, wp: 9, top: 0, left: 0},      // no padding at all
		{ch: 2, h: 3, w: 100, hp: 7, wp: 104, top: 2, left: 3},  // wide, padding rows on both sides
	} {
		src := make([]float32, c.ch*c.h*c.w)
		for i := range src {
			src[i] = float32(i + 1)
		}
		for _, rr := range [][2]int{{0, c.hp}, {0, 1}, {0, c.top + 1}, {1, c.hp - 1}, {c.hp - 1, c.hp}, {c.hp / 2, c.hp}} {
			r0, r1 := rr[0], rr[1]
			if r0 >= r1 || r1 > c.hp {
				continue
			}
			name := fmt.Sprintf("%+v/rows=[%d,%d)", c, r0, r1)
			buf := make([]float32, c.size())
			for i := range buf {
				buf[i] = float32(math.NaN())
			}
			c.fillRows(buf, src, r0, r1)
			plane := c.hp * c.wp
			for ch := range c.ch {
				for r := range c.hp {
					for col := range c.wp {
						got := buf[ch*plane+r*c.wp+col]
						y, x := r-c.top, col-c.left
						switch {
						case r < r0 || r >= r1:
							if got == got {
								t.Fatalf("%s: wrote %v at plane %d, row %d, column %d, outside the rows", name, got, ch, r, col)
							}
						case y >= 0 && y < c.h && x >= 0 && x < c.w:
							if want := src[(ch*c.h+y)*c.w+x]; got != want {
								t.Fatalf("%s: plane %d, row %d, column %d = %v, want the input's %v", name, ch, r, col, got, want)
							}
						case got != 0 || math.Signbit(float64(got)):
							t.Fatalf("%s: plane %d, row %d, column %d = %v, want +0 in the padding", name, ch, r, col, got)
						}
					}
				}
			}
			for i, v := range buf[c.ch*plane:] {
				if r1 == c.hp && v != 0 {
					t.Fatalf("%s: slack %d = %v with the last row, want 0", name, i, v)
				}
				if r1 < c.hp && v == v {
					t.Fatalf("%s: slack %d written without the last row", name, i)
				}
			}
		}
	}
}
