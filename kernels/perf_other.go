//go:build !amd64 || purego

package kernels

func adamF32Vec(p, g, m, v []float32, c *[8]float64) int { return 0 }

func reluGradF32Vec(out, y, dy []float32) int { return 0 }

func block2DF32Vec(add bool, dst []float32, dstStride int, src []float32, srcStride, rows, cols int) bool {
	return false
}

func maxPool2x2F32Vec(w, oh, ow int, xp, op []float32, ip []int64) bool { return false }

func col2imGatherF32Vec(dst, src []float32, tab []int64, dstStride, srcStride, rows, chunks, kw, width, lo, hi int) {
	panic("unreachable")
}

func col2imGatherOK() bool { return false }

func reluF32Vec(out, x []float32) int { return 0 }

func convRowOK() bool { return false }

func convRowsMax(ob int) int { return 1 }

func convRows(ob, rows int, in []float32, at, rs int, offs []int64, minOff, maxOff int, w []float32, out []float32, ostride, ors, lanes int) {
	panic("unreachable")
}

func convRowsEpi(ob, rows, reps int, in []float32, at, rs int, offs []int64, minOff, maxOff int, w []float32, out []float32, ostride, ors, lanes int, bias []float32, relu, add bool) {
	panic("unreachable")
}

func convRowsEpiPool(ob, rows, reps int, in []float32, at, rs int, offs []int64, minOff, maxOff int, w []float32, out []float32, ostride, ors int, bias []float32, relu bool) {
	panic("unreachable")
}

func convFilterMaxOB(kw int) int { return 0 }

func convFilter(ob, kw int, dy, x []float32, tab []int64, maxDY, maxX int, out []float32, ostride, dystride, dw int) {
	panic("unreachable")
}

func maxPool2x2GradF32Vec(w, oh, ow int, xp, dyp, dxp []float32) bool { return false }
