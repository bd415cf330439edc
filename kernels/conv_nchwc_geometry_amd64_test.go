//go:build !purego

package kernels

import "testing"

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
		g := newNCHWcGeometry(p, true, c.threads)
		if !g.down || g.items() != c.items || g.parts != c.parts {
			t.Errorf("%d×%d×%d²→%d /%d on %d threads: down %v, %d items in %d parts, want down, %d in %d",
				c.n, c.c, c.h, c.o, c.stride, c.threads, g.down, g.items(), g.parts, c.items, c.parts)
		}
	}
}
