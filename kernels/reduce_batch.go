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
	if rows, inner, ok := batchPattern(shape, axes); ok && len(x) == n*rows*inner {
		batchSums(threads, out, x, n, rows, inner, into)
		return nil
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

// batchPattern recognizes the sums over a batch that batchSums makes
// directly: over axis 0 alone (a dense bias's gradient, x as n × rows
// with inner = 1) or over every axis but 1 (a convolution bias's: n ×
// rows channels × inner positions).
func batchPattern(shape, axes []int) (rows, inner int, ok bool) {
	if len(axes) == 1 {
		rows = 1
		for _, d := range shape[1:] {
			rows *= d
		}
		return rows, 1, true
	}
	if len(shape) < 3 || len(axes) != len(shape)-1 || axes[1] != 2 {
		return 0, 0, false
	}
	inner = 1
	for i, a := range axes[1:] {
		if a != i+2 {
			return 0, 0, false
		}
		inner *= shape[a]
	}
	return shape[1], inner, true
}

// batchSums writes (or adds, into) into out[r] the sum over samples and
// inner positions of x (n × rows × inner): per group of BatchGroup
// samples a float64 sum (four running partials over the positions, added
// pairwise at the end, the samples one after the other; with one position,
// the samples' values one after the other from 0), rounded to T and added
// to the running sum in order. Each output element is one
// goroutine's, so the bits do not depend on threads.
func batchSums[T float32 | float64](threads int, out, x []T, n, rows, inner int, into bool) {
	if inner == 1 {
		batchRows(threads, out, x, n, rows, into)
		return
	}
	parts := nnParts(threads, rows, n*inner)
	nnForWorkers(parts, rows, func(_, lo, hi int) {
		for r := lo; r < hi; r++ {
			acc := out[r]
			for g := 0; g < n; g += BatchGroup {
				var s0, s1, s2, s3 float64
				for m := g; m < min(g+BatchGroup, n); m++ {
					row := x[(m*rows+r)*inner : (m*rows+r+1)*inner]
					for ; len(row) >= 4; row = row[4:] {
						s0 += float64(row[0])
						s1 += float64(row[1])
						s2 += float64(row[2])
						s3 += float64(row[3])
					}
					for _, v := range row {
						s0 += float64(v)
					}
				}
				if p := T((s0 + s1) + (s2 + s3)); g == 0 && !into {
					acc = p
				} else {
					acc += p
				}
			}
			out[r] = acc
		}
	})
}

// batchRowsBlock is the columns batchRows sums at once, in float64 on the
// stack.
const batchRowsBlock = 128

// batchRows is batchSums for inner = 1 (x is n rows of len(out)): a block
// of columns at a time, each group's rows added one after the other into
// float64 sums, read along the rows.
func batchRows[T float32 | float64](threads int, out, x []T, n, k int, into bool) {
	blocks := (k + batchRowsBlock - 1) / batchRowsBlock
	parts := nnParts(threads, blocks, n*batchRowsBlock)
	nnForWorkers(parts, blocks, func(_, lo, hi int) {
		var s [batchRowsBlock]float64
		for b := lo; b < hi; b++ {
			c0, c1 := b*batchRowsBlock, min((b+1)*batchRowsBlock, k)
			sum := s[:c1-c0]
			for g := 0; g < n; g += BatchGroup {
				clear(sum)
				for m := g; m < min(g+BatchGroup, n); m++ {
					for j, v := range x[m*k+c0 : m*k+c1] {
						sum[j] += float64(v)
					}
				}
				dst := out[c0:c1]
				for j, v := range sum {
					if g == 0 && !into {
						dst[j] = T(v)
					} else {
						dst[j] += T(v)
					}
				}
			}
		}
	})
}
