package kernels

// Batch norm followed by SiLU, fused for training: the forward writes
// z = silu(y), y = x·a[c] + b[c], without keeping y, and the backward
// computes y again from x to take SiLU's gradient, inside the passes of
// batch norm's. Each step rounds to T as batch norm's and SiLU's own
// kernels do, and the sums run in the same lanes in the same order, so the
// results have the bits of BatchNormApply then silu, and of SiluGrad then
// BatchNormGrad.

// bnsChunk is how many elements of a row the fused loops take at a time:
// y stays in cache between its computation and SiLU's. A multiple of 32,
// so that a chunk's elements fall into the lanes (norm_lanes.go) they
// have in the whole row.
const bnsChunk = 256

// BatchNormSiluApply writes z = silu(x·a[c] + b[c]) for x and z viewed as
// outer×ch×inner, y rounded to T before SiLU. z may be x.
func BatchNormSiluApply[T nnFloat](x, z []T, outer, ch, inner int, a, b []float64, threads int) {
	nnFor(threads, outer*ch, 4*inner, func(lo, hi int) {
		var buf [ewBlock]float64
		for r := lo; r < hi; r++ {
			for s := r * inner; s < (r+1)*inner; s += bnsChunk {
				e := min(s+bnsChunk, (r+1)*inner)
				bnApplyRows(x[s:e], z[s:e], 1, e-s, a[r%ch:], b[r%ch:], 0, 1)
				bnsSilu(z[s:e], buf[:])
			}
		}
	})
}

// bnsSilu replaces v by silu(v) with the silu op's loops.
func bnsSilu[T nnFloat](v []T, buf []float64) {
	if f, ok := any(v).([]float32); ok {
		ewSiluBlock32(f, f, buf)
		return
	}
	f := any(v).([]float64)
	ewSiluF64(f, f)
}

// BatchNormSiluGrad computes the gradients through z = silu(y),
// y = x·a[c] + b[c] (BatchNormSiluApply's, with the batch statistics mean
// and invStd): g = dz·silu'(y), rounded to T, then batch norm's gradients
// from g as BatchNormGrad computes them in training mode, with mean[c] and
// invStd[c] as given (the caller passes them rounded as batch_norm's
// saved statistics would be): dbias = Σ g, dscale = Σ g·x̂ and dx. dx may
// be dz.
func BatchNormSiluGrad[T nnFloat](dz, x []T, outer, ch, inner int, a, b, scale, mean, invStd []float64, dx []T, dscale, dbias []float64, threads int) {
	count := outer * inner
	nnFor(threads, ch, 6*count, func(lo, hi int) {
		var y [bnsChunk]T
		var buf [ewgBlock]float64
		for c := lo; c < hi; c++ {
			var sdy, sdyx bnLanes
			for o := range outer {
				off := (o*ch + c) * inner
				for s := off; s < off+inner; s += bnsChunk {
					e := min(s+bnsChunk, off+inner)
					yc := y[:e-s]
					bnApplyRows(x[s:e], yc, 1, e-s, a[c:], b[c:], 0, 1)
					bnsSiluGrad(dx[s:e], yc, dz[s:e], buf[:])
					bnGradSum(&sdy, &sdyx, dx[s:e], x[s:e], mean[c])
				}
			}
			dbias[c], dscale[c] = sdy.total(), sdyx.total()*invStd[c]
		}
	})
	bnGradX(dx, x, outer, ch, inner, scale, mean, invStd, true, dx, dscale, dbias, count, threads)
}

// bnsSiluGrad writes out = dy·silu'(y) with SiluGrad's loops; out may be
// dy.
func bnsSiluGrad[T nnFloat](out, y, dy []T, buf []float64) {
	if o, ok := any(out).([]float32); ok {
		yf, gf := any(y).([]float32), any(dy).([]float32)
		k := siluGradF32Vec(o, yf, gf)
		ewgSiluGo32(o[k:], yf[k:], gf[k:], buf)
		return
	}
	for i := range out {
		out[i] = T(float64(dy[i]) * ewgSilu(float64(y[i])))
	}
}
