package kernels

import "unsafe"

// Tile of the portable micro-kernel: 16 scalar accumulators fit the 16 FP
// registers of amd64 and leave arm64 room for operands.
const (
	goMR = 4
	goNR = 4
)

// goKernel is the portable micro-kernel, used where no assembly exists and
// as the reference the assembly kernels are tested against.
func goKernel[T float](k int, a, b, c *T, ldc int, alpha, beta T) {
	ap := unsafe.Slice(a, k*goMR)
	bp := unsafe.Slice(b, k*goNR)
	var c00, c01, c02, c03 T
	var c10, c11, c12, c13 T
	var c20, c21, c22, c23 T
	var c30, c31, c32, c33 T
	for p := 0; p < k; p++ {
		av := ap[p*goMR : p*goMR+goMR : p*goMR+goMR]
		bv := bp[p*goNR : p*goNR+goNR : p*goNR+goNR]
		a0, a1, a2, a3 := av[0], av[1], av[2], av[3]
		b0, b1, b2, b3 := bv[0], bv[1], bv[2], bv[3]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	acc := [goMR][goNR]T{
		{c00, c01, c02, c03},
		{c10, c11, c12, c13},
		{c20, c21, c22, c23},
		{c30, c31, c32, c33},
	}
	cs := unsafe.Slice(c, (goMR-1)*ldc+goNR)
	for i := range goMR {
		row := cs[i*ldc : i*ldc+goNR : i*ldc+goNR]
		if beta == 0 {
			for j := range goNR {
				row[j] = alpha * acc[i][j]
			}
		} else {
			for j := range goNR {
				row[j] = alpha*acc[i][j] + beta*row[j]
			}
		}
	}
}
