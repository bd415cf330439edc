package kernels

// panelRange returns the rows [lo,hi) of part i when the ceil(m/mr)
// micro-panels of a dimension of size m are split into parts contiguous
// parts, so that only the last part has a partial panel.
func panelRange(m, mr, parts, i int) (lo, hi int) {
	plo, phi := splitRange(ceilDiv(m, mr), parts, i)
	return min(plo*mr, m), min(phi*mr, m)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// balancedBlock returns the block size ≤ max (a multiple of unit) that
// covers n in as few blocks as possible, made as equal as possible, so a
// dimension just over a block size does not leave a sliver.
func balancedBlock(n, max, unit int) int {
	nb := ceilDiv(n, max)
	return min(max, ceilDiv(ceilDiv(n, nb), unit)*unit)
}
