package kernels

import "fmt"

// copy2D copies a rows×cols block of src, whose rows start srcStride
// elements apart, into dst, whose rows start dstStride elements apart.
// The blocks must not overlap.
func copy2D[T nnFloat](dst []T, dstStride int, src []T, srcStride, rows, cols int) {
	block2D(false, dst, dstStride, src, srcStride, rows, cols)
}

// add2D adds a rows×cols block of src into dst (strides as copy2D): each
// element gets dst + src once, in the element type, so the result is the
// same as the plain loop's.
func add2D[T nnFloat](dst []T, dstStride int, src []T, srcStride, rows, cols int) {
	block2D(true, dst, dstStride, src, srcStride, rows, cols)
}

func block2D[T nnFloat](add bool, dst []T, dstStride int, src []T, srcStride, rows, cols int) {
	if rows <= 0 || cols <= 0 {
		return
	}
	if len(dst) < (rows-1)*dstStride+cols || len(src) < (rows-1)*srcStride+cols {
		panic(fmt.Sprintf("kernels: %d×%d block with strides %d, %d does not fit in %d, %d elements", rows, cols, dstStride, srcStride, len(dst), len(src)))
	}
	if d, ok := any(dst).([]float32); ok && block2DF32Vec(add, d, dstStride, any(src).([]float32), srcStride, rows, cols) {
		return
	}
	for r := range rows {
		d, s := dst[r*dstStride:r*dstStride+cols], src[r*srcStride:r*srcStride+cols]
		if add {
			for k, v := range s {
				d[k] += v
			}
		} else {
			copy(d, s)
		}
	}
}
