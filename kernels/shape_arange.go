package kernels

// ArangeFloat fills dst[i] = start + i*step, computed in float64 and
// rounded to T, so that no error accumulates along the range.
func ArangeFloat[T float32 | float64](dst []T, start, step float64, threads int) {
	if perfSerial(threads, len(dst), CopyGrain) {
		arangeFloat(dst, start, step, 0, len(dst))
		return
	}
	ParallelFor(threads, len(dst), CopyGrain, func(lo, hi int) { arangeFloat(dst, start, step, lo, hi) })
}

func arangeFloat[T float32 | float64](dst []T, start, step float64, lo, hi int) {
	for i := lo; i < hi; i++ {
		dst[i] = T(start + float64(i)*step)
	}
}

// ArangeInt fills dst[i] = start + i*step in integer arithmetic.
func ArangeInt[T int32 | int64](dst []T, start, step int64, threads int) {
	if perfSerial(threads, len(dst), CopyGrain) {
		arangeInt(dst, start, step, 0, len(dst))
		return
	}
	ParallelFor(threads, len(dst), CopyGrain, func(lo, hi int) { arangeInt(dst, start, step, lo, hi) })
}

func arangeInt[T int32 | int64](dst []T, start, step int64, lo, hi int) {
	for i := lo; i < hi; i++ {
		dst[i] = T(start + int64(i)*step)
	}
}
