//go:build !purego

package kernels

//go:generate sh -c "cd internal/avo && go run ./poolgen -out ../../pool_amd64.s -stubs ../../pool_stub_amd64.go -pkg kernels"

// maxTapsF32Vec runs maxTaps's AVX-512 loop for strides 1 and 2 and
// reports whether it did (not without AVX-512, nor for other strides).
// The caller has cut dst and src to what the loop may touch.
func maxTapsF32Vec(dst, src []float32, offs []int64, n, rows, dstStride, srcStride, stride int) bool {
	if !hasPerfAVX512 || stride > 2 || len(offs) == 0 {
		return false
	}
	for _, o := range offs {
		if o < 0 || int(o)+stride*(n-1)+(rows-1)*srcStride >= len(src) {
			panic("kernels: max pooling tap out of range")
		}
	}
	if (rows-1)*dstStride+n > len(dst) {
		panic("kernels: max pooling row out of range")
	}
	if stride == 2 {
		maxTapsS2F32AVX512(&dst[0], &src[0], &offs[0], len(offs), n, rows, dstStride, srcStride)
	} else {
		maxTapsF32AVX512(&dst[0], &src[0], &offs[0], len(offs), n, rows, dstStride, srcStride)
	}
	return true
}

// maxPool2x2ValuesF32Vec runs MaxPool2DValues on one plane for 2×2
// windows with stride 2 and no padding in one AVX-512 pass, and reports
// whether it did (not without AVX-512).
func maxPool2x2ValuesF32Vec(w, oh, ow int, xp, op []float32) bool {
	if !hasPerfAVX512 || oh == 0 || ow == 0 {
		return false
	}
	_, _ = xp[(2*oh-1)*w+2*ow-1], op[oh*ow-1]
	maxPool2x2ValuesF32AVX512(&xp[0], &op[0], w, oh, ow)
	return true
}

// maxPool3x3S2ValuesF32Vec runs MaxPool2DValues on planes consecutive
// planes for 3×3 windows with stride 2 and padding 1 (ResNet's) in one
// AVX-512 pass, and reports whether it did (not without AVX-512).
func maxPool3x3S2ValuesF32Vec(planes, h, w, oh, ow int, x, out []float32) bool {
	if !hasPerfAVX512 || planes == 0 || oh == 0 || ow == 0 {
		return false
	}
	if oh != (h+1)/2 || ow != (w+1)/2 {
		panic("kernels: 3×3 stride-2 pool of the wrong output size")
	}
	_, _ = x[planes*h*w-1], out[planes*oh*ow-1]
	maxPool3x3S2ValuesF32AVX512(&x[0], &out[0], planes, h, w, oh, ow)
	return true
}
