//go:build !purego

package kernels

import (
	"fmt"
	"slices"
	"testing"
)

// TestNCHWcGeometryEvenItems: a batch whose tiles run down the samples
// gets as many items for each thread, its rows split where groups of
// output blocks × bands of samples do not divide among the threads
// (ppyoloe_s's 192-channel convolutions: three groups, two threads), and
// on one thread the rows are not split.
func TestNCHWcGeometryEvenItems(t *testing.T) {
	for _, c := range []struct {
		n, c, h, o, stride, threads int
		items, parts                int
	}{
		{8, 192, 10, 192, 1, 1, 3, 1},
		{8, 192, 10, 192, 1, 2, 6, 2},
		{8, 192, 10, 192, 1, 3, 3, 1},
		{8, 192, 10, 192, 1, 4, 12, 4},
		{8, 128, 40, 192, 2, 2, 6, 2},
		{8, 96, 20, 96, 1, 2, 2, 1},
		{8, 96, 20, 96, 1, 3, 6, 3},
		{8, 64, 8, 64, 1, 2, 2, 2},
		{8, 64, 8, 16, 1, 1, 1, 1},
		{40, 192, 10, 192, 1, 2, 18, 2},
		{48, 192, 10, 192, 1, 2, 18, 2},
		{32, 192, 10, 192, 1, 2, 6, 1},
	} {
		p := Conv2DParams{N: c.n, C: c.c, H: c.h, W: c.h, O: c.o, KH: 3, KW: 3, SH: c.stride, SW: c.stride, PH: 1, PW: 1, DH: 1, DW: 1}
		g := newNCHWcGeometry(p, zmmBlock, true, c.threads)
		if !g.down || g.items() != c.items || g.parts != c.parts {
			t.Errorf("%d×%d×%d²→%d /%d on %d threads: down %v, %d items in %d parts, want down, %d in %d",
				c.n, c.c, c.h, c.o, c.stride, c.threads, g.down, g.items(), g.parts, c.items, c.parts)
		}
	}
}

// TestNCHWcGeometrySpread: a single sample's items along the rows cover
// every output once and, on more than one thread, come in a multiple of
// the threads where the plane allows (ppyoloe_s's 192-channel layers on
// 10×10 and 20×20 planes: three groups of output blocks), of near-equal
// sizes: bands of rows one row apart at most, segments of a pointwise
// plane all alike but a last one no longer.
func TestNCHWcGeometrySpread(t *testing.T) {
	for _, c := range []struct {
		c, h, o, k, stride, threads int
		items                       int
	}{
		{192, 10, 192, 3, 1, 2, 6},
		{192, 10, 192, 3, 1, 1, 6},
		{384, 10, 192, 1, 1, 2, 6},
		{384, 10, 192, 1, 1, 1, 6},
		{48, 80, 64, 1, 1, 1, 67},
		{128, 40, 192, 3, 2, 2, 18},
		{192, 20, 192, 1, 1, 2, 18},
		{96, 20, 96, 3, 1, 2, 10},
		{96, 40, 48, 1, 1, 2, 17},
		{96, 20, 96, 3, 1, 3, 12},
	} {
		pad := c.k / 2
		p := Conv2DParams{N: 1, C: c.c, H: c.h, W: c.h, O: c.o, KH: c.k, KW: c.k, SH: c.stride, SW: c.stride, PH: pad, PW: pad, DH: 1, DW: 1}
		g := newNCHWcGeometry(p, zmmBlock, true, c.threads)
		name := fmt.Sprintf("%d×%d²→%d %d×%d/%d on %d threads", c.c, c.h, c.o, c.k, c.k, c.stride, c.threads)
		if g.items() != c.items {
			t.Errorf("%s: %d items, want %d", name, g.items(), c.items)
		}
		covered := make([]int, g.ob*g.oh*g.ow)
		minRows, maxRows := g.oh, 0
		for i := range g.items() {
			o0, f, r0, r1, x0, x1 := g.item(i)
			minRows, maxRows = min(minRows, r1-r0), max(maxRows, r1-r0)
			if x1 < g.ow && x1-x0 != g.segLen || x1-x0 > g.segLen {
				t.Errorf("%s: item %d has pixels [%d, %d) of a row of %d in segments of %d", name, i, x0, x1, g.ow, g.segLen)
			}
			for o := o0; o < o0+f; o++ {
				for r := r0; r < r1; r++ {
					for x := x0; x < x1; x++ {
						covered[(o*g.oh+r)*g.ow+x]++
					}
				}
			}
		}
		if i := slices.IndexFunc(covered, func(n int) bool { return n != 1 }); i >= 0 {
			t.Errorf("%s: output element %d covered %d times", name, i, covered[i])
		}
		if maxRows-minRows > 1 {
			t.Errorf("%s: bands of %d to %d rows", name, minRows, maxRows)
		}
	}
}
