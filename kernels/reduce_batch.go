package kernels

import "fmt"

// ReduceSumBatch sums x (of the given shape) over axes, which include
// axis 0, the batch's: the canonical way of BatchGroup (conv_grad.go).
// Each group of BatchGroup samples along axis 0 is summed by Reduce, and
// the groups' sums are added into out one after the other in T, so that
// a batch cut into pieces of whole groups sums to the same bits piece by
// piece (ReduceSumBatchInto). tmp holds len(out) elements when shape[0]
// > BatchGroup.
func ReduceSumBatch[T float32 | float64](threads int, out, tmp, x []T, shape, axes []int) error {
	return reduceSumBatch(threads, out, tmp, x, shape, axes, false)
}

// ReduceSumBatchInto adds to out the sum ReduceSumBatch writes, group by
// group in the same order. tmp holds len(out) elements.
func ReduceSumBatchInto[T float32 | float64](threads int, out, tmp, x []T, shape, axes []int) error {
	return reduceSumBatch(threads, out, tmp, x, shape, axes, true)
}

func reduceSumBatch[T float32 | float64](threads int, out, tmp, x []T, shape, axes []int, into bool) error {
	if len(shape) == 0 || len(axes) == 0 || axes[0] != 0 {
		return fmt.Errorf("reduce over the batch: axes %v do not start with axis 0 of shape %v", axes, shape)
	}
	n := shape[0]
	if n <= BatchGroup && !into {
		return Reduce(ReduceSum, threads, out, x, shape, axes)
	}
	if len(tmp) < len(out) {
		return fmt.Errorf("reduce over the batch: scratch of %d elements, want %d", len(tmp), len(out))
	}
	tmp = tmp[:len(out)]
	if n == 0 {
		return nil // adds nothing
	}
	per := len(x) / n
	var buf [redRank]int
	part := append(buf[:0], shape...)
	for g := 0; g*BatchGroup < n; g++ {
		n0, n1 := g*BatchGroup, min((g+1)*BatchGroup, n)
		part[0] = n1 - n0
		dst := out
		if g > 0 || into {
			dst = tmp
		}
		if err := Reduce(ReduceSum, threads, dst, x[n0*per:n1*per], part, axes); err != nil {
			return err
		}
		if g > 0 || into {
			for i, v := range tmp {
				out[i] += v
			}
		}
	}
	return nil
}
