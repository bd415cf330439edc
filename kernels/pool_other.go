//go:build !amd64 || purego

package kernels

func maxTapsF32Vec(dst, src []float32, offs []int64, n, rows, dstStride, srcStride, stride int) bool {
	return false
}

func maxPool2x2ValuesF32Vec(w, oh, ow int, xp, op []float32) bool { return false }

func maxPool3x3S2ValuesF32Vec(planes, h, w, oh, ow int, x, out []float32) bool { return false }
