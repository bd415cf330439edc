package kernels

// BatchNormGrad computes the gradients of BatchNorm's output
// y = (x − mean[c])·invStd[c]·scale[c] + bias, for x and dy viewed as
// outer×ch×inner, in float64:
//
//	dbias[c]  = Σ dy
//	dscale[c] = Σ dy·x̂,  x̂ = (x − mean[c])·invStd[c]
//
// over the outer·inner elements of channel c, and, when dx is not nil,
// with training (mean and invStd are the batch statistics, themselves
// functions of x)
//
//	dx = scale·invStd·(dy − dbias/M − x̂·dscale/M),  M = outer·inner,
//
// or without it (fixed running statistics) dx = dy·scale·invStd.
// Channels, then rows, are split over threads; results do not depend on
// the thread count.
func BatchNormGrad[T nnFloat](dy, x []T, outer, ch, inner int, scale, mean, invStd []float64, training bool, dx []T, dscale, dbias []float64, threads int) {
	bnGradSums(dy, x, outer, ch, inner, mean, invStd, dscale, dbias, threads)
	if dx != nil {
		bnGradX(dy, x, outer, ch, inner, scale, mean, invStd, training, dx, dscale, dbias, outer*inner, threads)
	}
}

// BatchNormGradSum is BatchNormGrad in training mode for a batch spread
// over several processes whose batch statistics were taken together
// (BatchNormStatsSum): dscale and dbias are this process's sums, as
// BatchNormGrad returns them, while dx uses the sums of every process,
// which sum(buf) provides by replacing buf with the element-wise sum of
// every process's buf (one call, of 2·ch+1 values: the sums and the
// element count, held in buf). dx may be dy or x, as for BatchNormGrad.
func BatchNormGradSum[T nnFloat](dy, x []T, outer, ch, inner int, scale, mean, invStd []float64, dx []T, dscale, dbias, buf []float64, threads int, sum func([]float64) error) error {
	bnGradSums(dy, x, outer, ch, inner, mean, invStd, dscale, dbias, threads)
	buf = buf[:2*ch+1]
	for c := range ch {
		buf[c], buf[ch+c] = dbias[c], dscale[c]
	}
	buf[2*ch] = float64(outer * inner)
	if err := sum(buf); err != nil {
		return err
	}
	bnGradX(dy, x, outer, ch, inner, scale, mean, invStd, true, dx, buf[ch:2*ch], buf[:ch], int(buf[2*ch]), threads)
	return nil
}

// bnGradSums writes dbias = Σ dy and dscale = Σ dy·x̂ per channel, summed
// in lanes (norm_lanes.go).
func bnGradSums[T nnFloat](dy, x []T, outer, ch, inner int, mean, invStd, dscale, dbias []float64, threads int) {
	count := outer * inner
	nnFor(threads, ch, 2*count, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			var sdy, sdyx bnLanes
			for o := range outer {
				off := (o*ch + c) * inner
				bnGradSum(&sdy, &sdyx, dy[off:off+inner], x[off:off+inner], mean[c])
			}
			dbias[c], dscale[c] = sdy.total(), sdyx.total()*invStd[c]
		}
	})
}

// bnGradX writes dx from the channel sums dscale and dbias over count
// elements.
func bnGradX[T nnFloat](dy, x []T, outer, ch, inner int, scale, mean, invStd []float64, training bool, dx []T, dscale, dbias []float64, count, threads int) {
	nnFor(threads, outer*ch, 2*inner, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			c := r % ch
			k := scale[c] * invStd[c]
			xr, gr, dr := x[r*inner:(r+1)*inner], dy[r*inner:(r+1)*inner], dx[r*inner:(r+1)*inner]
			if !training {
				for i, g := range gr {
					dr[i] = T(float64(g) * k)
				}
				continue
			}
			m, is := mean[c], invStd[c]
			a := dbias[c] / float64(count)
			b := dscale[c] / float64(count)
			i := 0
			if gf, ok := any(gr).([]float32); ok {
				i = bnGradXF32Vec(gf, any(xr).([]float32), any(dr).([]float32), k, m, is, a, b)
			}
			for ; i < len(gr); i++ {
				xh := (float64(xr[i]) - m) * is
				dr[i] = T(k * (float64(gr[i]) - a - xh*b))
			}
		}
	})
}

// LayerNormGrad computes the gradients of LayerNorm's output
// y = x̂·scale + bias, x̂ = (x − mean[r])·invStd[r], for x and dy of
// rows×cols, in float64: with ĝ = dy·scale,
//
//	dx = invStd·(ĝ − mean(ĝ) − x̂·mean(ĝ·x̂))   (per row; skipped if dx is nil)
//	dscale[j] = Σ_r dy·x̂,  dbias[j] = Σ_r dy    (skipped if nil)
//
// Rows, then columns, are split over threads; results do not depend on
// the thread count.
func LayerNormGrad[T nnFloat](dy, x, scale, mean, invStd []T, rows, cols int, dx, dscale, dbias []T, threads int) {
	if dx != nil && cols > 0 {
		nnFor(threads, rows, 6*cols, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				xr, gr, dr := x[r*cols:(r+1)*cols], dy[r*cols:(r+1)*cols], dx[r*cols:(r+1)*cols]
				m, is := float64(mean[r]), float64(invStd[r])
				var sg, sgx float64
				for i, g := range gr {
					gh := float64(g) * float64(scale[i])
					sg += gh
					sgx += gh * (float64(xr[i]) - m) * is
				}
				sg /= float64(cols)
				sgx /= float64(cols)
				for i, g := range gr {
					gh := float64(g) * float64(scale[i])
					xh := (float64(xr[i]) - m) * is
					dr[i] = T(is * (gh - sg - xh*sgx))
				}
			}
		})
	}
	if dscale == nil && dbias == nil {
		return
	}
	// Columns in blocks: each block sums over every row into float64
	// accumulators, reading rows contiguously.
	const block = 256
	nblk := (cols + block - 1) / block
	nnFor(threads, nblk, 2*rows*block, func(lo, hi int) {
		var ss, sb [block]float64
		for bk := lo; bk < hi; bk++ {
			c0, c1 := bk*block, min((bk+1)*block, cols)
			clear(ss[:])
			clear(sb[:])
			for r := range rows {
				m, is := float64(mean[r]), float64(invStd[r])
				xr, gr := x[r*cols+c0:r*cols+c1], dy[r*cols+c0:r*cols+c1]
				for i, g := range gr {
					sb[i] += float64(g)
					ss[i] += float64(g) * (float64(xr[i]) - m) * is
				}
			}
			for i := range c1 - c0 {
				if dscale != nil {
					dscale[c0+i] = T(ss[i])
				}
				if dbias != nil {
					dbias[c0+i] = T(sb[i])
				}
			}
		}
	})
}
