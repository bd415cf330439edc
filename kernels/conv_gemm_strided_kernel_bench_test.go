package kernels

import "testing"

// BenchmarkConvStridedKernel times the strided product's micro-kernels
// alone, as blockS calls them on the detector's 32→48 3×3/2 on 160×160
// (the three-vector 9×48 tile) and 64→96 3×3/2 on 80×80 (14×32 tiles,
// one depth slice of 288): with A and B in L1 (in-L1: three input rows
// 32 wide, a third of the depth), with A read from the full planes,
// tiles walking along an output row and the rows down the map (planes),
// and for 64→96 with its three panels of weights in turn, 108 KiB, as a
// block's tile runs them (panels). It tells what of a layer's rate is
// the kernel's own and what its memory's.
func BenchmarkConvStridedKernel(b *testing.B) {
	kern := sgemmActive.Load()
	ks, k3 := convStridedKernels(kern), convStrided3Kernels(kern)
	if ks == nil || k3 == nil || kern.mr != 14 || kern.nr != 32 {
		b.Skip("no strided kernels with 14×32 tiles")
	}
	cases := []struct {
		name        string
		c, hw, k    int // input channels, map side, depth per call
		rows, vecs  int // tile rows, vectors of 16 output channels
		panels      int // weight panels of 32 in turn
		tiles, step int // tiles per row and their distance in input columns
	}{
		{"9x48/in-L1", 32, 0, 96, 9, 3, 1, 8, 0},
		{"9x48/planes", 32, 160, 288, 9, 3, 1, 8, 18},
		{"14x32/in-L1", 64, 0, 96, 14, 2, 1, 3, 0},
		{"14x32/planes", 64, 80, 288, 14, 2, 1, 3, 26},
		{"14x32/planes/panels", 64, 80, 288, 14, 2, 3, 3, 26},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			p := Conv2DParams{N: 1, C: tc.c, H: 3, W: 32, KH: 3, KW: 3, SH: 2, SW: 2, Groups: 1, DH: 1, DW: 1}
			if tc.hw > 0 {
				p.H, p.W = tc.hw, tc.hw
			}
			ktab := convKTab(p, make([]int32, 4*p.C*9))
			x := make([]float32, p.C*p.H*p.W)
			w := make([]float32, tc.panels*2*tc.k*kern.nr)
			for i := range w {
				w[i] = float32(i%7) * 0.125
			}
			c := make([]float32, tc.rows*tc.panels*kern.nr)
			ldc := tc.vecs * kern.lanes
			if tc.panels > 1 {
				ldc = tc.panels * kern.nr
			}
			oy, lastRow := 0, (p.H-3)/2
			ns := perfLoopCPU(b, func() {
				row := 2 * oy * p.W
				oy = (oy + 1) % (lastRow + 1)
				for t := range tc.tiles {
					a := &x[row+t*tc.step]
					for pn := range tc.panels {
						bp := w[pn*tc.k*kern.nr:]
						if tc.vecs == 3 {
							k3[tc.rows-1](tc.k, a, &ktab[0], &bp[0], &w[tc.k*kern.nr], &c[0], ldc, 1, 0)
						} else {
							ks[tc.rows-1][tc.vecs-1](tc.k, a, &ktab[0], &bp[0], &c[pn*kern.nr], ldc, 1, 0)
						}
					}
				}
			})
			flops := 2 * float64(tc.tiles*tc.panels*tc.rows*tc.vecs*kern.lanes*tc.k)
			b.ReportMetric(flops/ns, "cpu-GFLOP/s")
		})
	}
}
