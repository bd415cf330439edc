package kernels

// A broadcast whose inner rows are short and one operand's row repeats
// along the dim before them, as in the blocked layout's attention gate,
// [N,C/16,H,W,16]·[N,C/16,1,1,16]: the plan is [N·C/16, H·W, 16] and the
// walk would make one 16-element loop call per pixel. Instead the
// repeated row is tiled into a buffer of ewTileLen elements and the loop
// runs over whole stretches of the tile against the contiguous operand:
// the same element pairs through the same loop, so the same bits.

// ewTileLen is the length of the buffer a repeated row is tiled into.
const ewTileLen = 512

// repeatedRow reports which operand (0 for a, 1 for b) repeats a row of
// fewer than ewTileLen/2 elements along the plan's second-to-last dim
// while the other runs contiguously across the last two dims.
func (p *ewPlan) repeatedRow() (op int, ok bool) {
	r := len(p.dims)
	if p.nops != 2 || r < 2 || p.dims[r-1] >= ewTileLen/2 || p.dims[r-2] < 2 {
		return 0, false
	}
	m, s := p.dims[r-1], p.strides
	if s[0][r-1] != 1 || s[1][r-1] != 1 {
		return 0, false
	}
	switch {
	case s[0][r-2] == m && s[1][r-2] == 0:
		return 1, true
	case s[1][r-2] == m && s[0][r-2] == 0:
		return 0, true
	}
	return 0, false
}

// ewRepeatRange computes out[lo:hi] of a broadcast binary op on plan p,
// whose operand op repeats its row (repeatedRow), through tile.
func ewRepeatRange[T, U any](l ewLoops[T, U], p *ewPlan, op, lo, hi int, out []U, a, b []T, tile *[ewTileLen]T) {
	r := len(p.dims)
	m := p.dims[r-1]
	block := p.dims[r-2] * m
	span := min(p.dims[r-2], ewTileLen/m) * m
	ops := [2][]T{a, b}
	for pos := lo; pos < hi; {
		blk := pos / block
		var offs [2]int
		for q, d := blk, r-3; d >= 0; d-- {
			for k := range offs {
				offs[k] += q % p.dims[d] * p.strides[k][d]
			}
			q /= p.dims[d]
		}
		row := ops[op][offs[op] : offs[op]+m]
		for t := 0; t < span; t += m {
			copy(tile[t:t+m], row)
		}
		full, fo := ops[1-op], offs[1-op]-blk*block
		for end := min(hi, (blk+1)*block); pos < end; {
			ph := (pos - blk*block) % m
			n := min(end-pos, span-ph)
			if op == 1 {
				l.vv(out[pos:pos+n], full[fo+pos:fo+pos+n], tile[ph:ph+n])
			} else {
				l.vv(out[pos:pos+n], tile[ph:ph+n], full[fo+pos:fo+pos+n])
			}
			pos += n
		}
	}
}
