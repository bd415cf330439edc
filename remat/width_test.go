package remat

import (
	"slices"
	"testing"
)

// A split's widths are, for each number of pieces, the fewest whole
// groups per piece that make it (12 samples make 6 pieces of a batch of
// 64, not only the powers of two): no two make as many pieces.
func TestWidthsAreTheFewestGroupsPerPieceCount(t *testing.T) {
	for _, c := range []struct {
		n, group int
		want     []int
	}{
		{64, 4, []int{4, 8, 12, 16, 24, 32}},
		{16, 4, []int{4, 8}},
		{20, 4, []int{4, 8, 12}},
		{8, 4, []int{4}},
		{30, 1, []int{1, 2, 3, 4, 5, 6, 8, 10, 15}},
	} {
		seg := &segment{n: c.n, group: c.group}
		got := (&fitter{}).widths(seg)
		if !slices.Equal(got, c.want) {
			t.Errorf("batch %d in groups of %d: widths %v, want %v", c.n, c.group, got, c.want)
		}
		for i, k := range got {
			if k%c.group != 0 || seg.pieces(k) < 2 || i > 0 && seg.pieces(k) == seg.pieces(got[i-1]) {
				t.Errorf("batch %d in groups of %d: width %d (%d pieces) in %v", c.n, c.group, k, seg.pieces(k), got)
			}
		}
	}
}
