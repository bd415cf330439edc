package kernels

// Batch norm's sums carried from piece to piece of a batch: what a split
// over the batch (remat) runs instead of BatchNormStats and
// BatchNormGrad's sums, so that the statistics of a batch cut into pieces
// of whole samples have the bits of the whole batch's. A channel's lanes
// take a row's elements into lane i mod 32 and rows in order, image by
// image (norm_lanes.go), so running the rows of the next images into the
// same lanes continues the whole batch's additions exactly; the lanes are
// summed pairwise only at the end, as the whole-batch kernels do.
//
// A state holds, per channel, the lanes of each sum followed by the
// count of elements summed so far (exact in float64).

// BNStatsWidth is a channel's share of a statistics state: 32 lanes and
// the count.
const BNStatsWidth = 33

// BNGradWidth is a channel's share of a gradient-sums state: 32 lanes of
// Σdy, 32 of Σdy·(x − mean) and the count.
const BNGradWidth = 65

// bnStateLanes returns lanes j (of 32) of channel c's share of state.
func bnStateLanes(state []float64, width, c, j int) *bnLanes {
	o := c*width + 32*j
	return (*bnLanes)(state[o : o+32])
}

// BatchNormSumInto adds x (outer×ch×inner) into the statistics state acc
// (ch×BNStatsWidth): each channel's elements into its lanes and their
// count into its count. Channels are split over threads.
func BatchNormSumInto[T nnFloat](x []T, outer, ch, inner int, acc []float64, threads int) {
	nnFor(threads, ch, outer*inner, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			l := bnStateLanes(acc, BNStatsWidth, c, 0)
			for o := range outer {
				bnSum(l, x[(o*ch+c)*inner:(o*ch+c+1)*inner])
			}
			acc[c*BNStatsWidth+32] += float64(outer * inner)
		}
	})
}

// BatchNormMeanOf is each channel's mean from the statistics state sums
// (0 for a channel without elements), as BatchNormStats takes it.
func BatchNormMeanOf(sums []float64, ch int, mean []float64) {
	for c := range ch {
		mean[c] = 0
		if n := sums[c*BNStatsWidth+32]; n > 0 {
			mean[c] = bnStateLanes(sums, BNStatsWidth, c, 0).total() / n
		}
	}
}

// BatchNormSqDevInto adds the squared deviations of x (outer×ch×inner)
// from each channel's mean[c] into the statistics state acc, and their
// count.
func BatchNormSqDevInto[T nnFloat](x []T, outer, ch, inner int, mean, acc []float64, threads int) {
	nnFor(threads, ch, outer*inner, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			l := bnStateLanes(acc, BNStatsWidth, c, 0)
			for o := range outer {
				bnSqDev(l, x[(o*ch+c)*inner:(o*ch+c+1)*inner], mean[c])
			}
			acc[c*BNStatsWidth+32] += float64(outer * inner)
		}
	})
}

// BatchNormStatsOf finishes BatchNormStats from the states of the sums
// and of the squared deviations from their mean: each channel's mean and
// biased variance (0 and 0 without elements). It returns the count of
// elements per channel.
func BatchNormStatsOf(sums, sqdevs []float64, ch int, mean, variance []float64) int {
	BatchNormMeanOf(sums, ch, mean)
	count := 0.0
	for c := range ch {
		variance[c] = 0
		if n := sqdevs[c*BNStatsWidth+32]; n > 0 {
			variance[c] = bnStateLanes(sqdevs, BNStatsWidth, c, 0).total() / n
		}
		count = sums[c*BNStatsWidth+32]
	}
	return int(count)
}

// BatchNormGradSumInto adds dy and dy·(x − mean[c]) (outer×ch×inner)
// into the gradient-sums state acc (ch×BNGradWidth), and their count.
func BatchNormGradSumInto[T nnFloat](dy, x []T, outer, ch, inner int, mean, acc []float64, threads int) {
	nnFor(threads, ch, 2*outer*inner, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			sdy, sdyx := bnStateLanes(acc, BNGradWidth, c, 0), bnStateLanes(acc, BNGradWidth, c, 1)
			for o := range outer {
				off := (o*ch + c) * inner
				bnGradSum(sdy, sdyx, dy[off:off+inner], x[off:off+inner], mean[c])
			}
			acc[c*BNGradWidth+64] += float64(outer * inner)
		}
	})
}

// BatchNormGradSumsOf finishes BatchNormGrad's sums from the state acc:
// dbias = Σdy and dscale = Σdy·x̂ per channel, as BatchNormGrad computes
// them. It returns the count of elements per channel.
func BatchNormGradSumsOf(acc []float64, ch int, invStd, dscale, dbias []float64) int {
	count := 0.0
	for c := range ch {
		dbias[c] = bnStateLanes(acc, BNGradWidth, c, 0).total()
		dscale[c] = bnStateLanes(acc, BNGradWidth, c, 1).total() * invStd[c]
		count = acc[c*BNGradWidth+64]
	}
	return int(count)
}

// BatchNormGradX writes BatchNorm's training-mode dx for x and dy
// (outer×ch×inner) from the channel sums dscale and dbias over count
// elements (BatchNormGradSumsOf), as BatchNormGrad does. dx may be dy or x.
func BatchNormGradX[T nnFloat](dy, x []T, outer, ch, inner int, scale, mean, invStd, dscale, dbias []float64, count int, dx []T, threads int) {
	bnGradX(dy, x, outer, ch, inner, scale, mean, invStd, true, dx, dscale, dbias, count, threads)
}
