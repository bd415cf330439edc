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
// the samples' values one after the other), rounded to T and added to the
// running sum in order. Each output element is one
// goroutine's, so the bits do not depend on threads.
func batchSums[T float32 | float64](threads int, out, x []T, n, rows, inner int, into bool) {
	if inner == 1 {
		batchRows(threads, out, x, n, rows, into)
		return
	}
	cost := n * inner * batchSumWeight
	if nnSerial(threads, rows, cost) {
		batchSumRows(out, x, n, rows, inner, into, 0, rows)
		return
	}
	j := getJob[batchSumsJob[T]]()
	j.out, j.x, j.n, j.rows, j.inner, j.into = out, x, n, rows, inner, into
	nnForRanger(threads, rows, cost, j)
	putJob(j)
}

// batchSumsJob is batchSums's parallel loop.
type batchSumsJob[T float32 | float64] struct {
	out, x         []T
	n, rows, inner int
	into           bool
}

func (j *batchSumsJob[T]) run(lo, hi int) {
	batchSumRows(j.out, j.x, j.n, j.rows, j.inner, j.into, lo, hi)
}

// batchSumRows is batchSums on the output elements [lo, hi).
func batchSumRows[T float32 | float64](out, x []T, n, rows, inner int, into bool, lo, hi int) {
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
}

// batchSumWeight is what an element of batchSums's scalar float64 sums
// weighs in nnParts's units: lenet's bias sums over a piece of 12
// samples (6 channels of 12×784, 16 of 12×100) took 24 and 14 µs on one
// thread, 0.4–0.7 ns an element, a few times what the units assume.
const batchSumWeight = 4

// batchRows is batchSums for inner = 1 (x is n rows of len(out)): each
// group's rows are read side by side, a column's values added one after
// the other in float64 from the first, in blocks of columns split between
// goroutines.
func batchRows[T float32 | float64](threads int, out, x []T, n, k int, into bool) {
	const block = 256
	blocks := (k + block - 1) / block
	parts := nnParts(threads, blocks, n*block)
	nnForWorkers(parts, blocks, func(_, lo, hi int) {
		for b := lo; b < hi; b++ {
			c0, c1 := b*block, min((b+1)*block, k)
			dst := out[c0:c1]
			for g := 0; g < n; g += BatchGroup {
				rows := min(BatchGroup, n-g)
				r0 := x[g*k+c0 : g*k+c1]
				r1, r2, r3 := r0, r0, r0
				if rows > 1 {
					r1 = x[(g+1)*k+c0 : (g+1)*k+c1]
				}
				if rows > 2 {
					r2 = x[(g+2)*k+c0 : (g+2)*k+c1]
				}
				if rows > 3 {
					r3 = x[(g+3)*k+c0 : (g+3)*k+c1]
				}
				first := g == 0 && !into
				if rows == 4 && !first {
					r1, r2, r3 = r1[:len(dst)], r2[:len(dst)], r3[:len(dst)]
					for j, v := range r0[:len(dst)] {
						dst[j] += T(((float64(v) + float64(r1[j])) + float64(r2[j])) + float64(r3[j]))
					}
					continue
				}
				for j := range dst {
					s := float64(r0[j])
					if rows > 1 {
						s += float64(r1[j])
					}
					if rows > 2 {
						s += float64(r2[j])
					}
					if rows > 3 {
						s += float64(r3[j])
					}
					if first {
						dst[j] = T(s)
					} else {
						dst[j] += T(s)
					}
				}
			}
		}
	})
}
