package kernels

import "unsafe"

// gemvSlices computes the columns [j0, j1) of one row of C (cc), one
// packed panel narrower than whole vectors, from the row a of A (k
// elements) and the panels pb (without their header): every depth slice
// of kc (the last one possibly shorter) with the slice kernels, several
// side by side, then merged into C in slice order as gemmPackedRange's
// loop merges them one slice after another — the first with beta, the
// others onto it — so each element gets the same bits. One such panel per
// slice is a single chain of fused multiply-adds (a classifier's last
// layer: 10 columns, 4096 deep), as slow as the FMA's latency; s slices
// are s chains in flight.
func gemvSlices[T float](kern *gemmKernel[T], a, pb, cc, tmp []T, k, kc, np, j0, j1 int, alpha, beta T) {
	nr, lanes := kern.nr, kern.lanes
	nw := j1 - j0
	v := ceilDiv(nw, lanes)
	w := v * lanes
	var zero T
	es := int(unsafe.Sizeof(zero))
	merge := func(q, slice int) {
		bet := beta
		if slice > 0 {
			bet = 1 // later slices accumulate onto the first
		}
		mergeTile(cc[j0:], 0, tmp[q*w:], w, 1, nw, bet)
	}
	full := k / kc
	for s0 := 0; s0 < full; {
		s := min(len(kern.rowSlices), full-s0, len(tmp)/w)
		first := s0 * kc * np * nr // slice s0's panels
		_, _, _ = a[(s0+s)*kc-1], pb[first+(s-1)*kc*np*nr+(j0+nr)*kc-1], tmp[s*w-1]
		kern.rowSlices[s-1][v-1](kc, &a[s0*kc], &pb[first+j0*kc], &tmp[0], kc*es, kc*np*nr*es, alpha)
		for q := range s {
			merge(q, s0+q)
		}
		s0 += s
	}
	if kb := k - full*kc; kb > 0 {
		last := full * kc * np * nr
		_, _ = pb[last+(j0+nr)*kb-1], tmp[w-1]
		kern.rowSlices[0][v-1](kb, &a[full*kc], &pb[last+j0*kb], &tmp[0], 0, 0, alpha)
		merge(0, full)
	}
}
