//go:build !amd64 || purego

package kernels

func col2imStride2F32Vec(dst, src []float32, tab []int64, dstStride, srcStride, rows, chunks, kw, width, lo, hi int) {
	panic("kernels: no AVX-512 col2im on this build")
}

func col2imStride2OK() bool { return false }
