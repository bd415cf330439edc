package kernels

// Batch norm's per-channel sums run in 32 float64 lanes: element i of a
// row (of inner elements) adds into lane i mod 32, rows in order, and the
// lanes are summed pairwise at the end (bnLanes.total). Independent lanes
// let the additions overlap instead of waiting on one accumulator, and
// the AVX-512 loops (norm_amd64.s) compute the same lanes, so the sums do
// not depend on which loop ran, nor on the thread count (channels are
// split between threads, never a channel's elements). A channel's lanes
// take its rows image by image: batch norm run over pieces of the batch
// (norm_pieces.go, for remat's splits) carries the lanes from one piece
// to the next and relies on that order to give the whole batch's bits.

// bnLanes are one channel's 32 partial sums.
type bnLanes [32]float64

// total is the sum of the lanes, pairwise in a fixed order.
func (l bnLanes) total() float64 {
	for w := len(l) / 2; w >= 1; w /= 2 {
		for i := range w {
			l[i] += l[i+w]
		}
	}
	return l[0]
}

// bnSum adds row's elements into l.
func bnSum[T nnFloat](l *bnLanes, row []T) {
	i := 0
	if f, ok := any(row).([]float32); ok {
		i = bnSumF32Vec(l, f)
	}
	for ; i < len(row); i++ {
		l[i%32] += float64(row[i])
	}
}

// bnSqDev adds the squared deviations of row's elements from m into l.
func bnSqDev[T nnFloat](l *bnLanes, row []T, m float64) {
	i := 0
	if f, ok := any(row).([]float32); ok {
		i = bnSqDevF32Vec(l, f, m)
	}
	for ; i < len(row); i++ {
		d := float64(row[i]) - m
		l[i%32] += d * d
	}
}

// bnGradSum adds dy's elements into sdy and dy·(x − m) into sdyx.
func bnGradSum[T nnFloat](sdy, sdyx *bnLanes, dy, x []T, m float64) {
	x = x[:len(dy)]
	i := 0
	if f, ok := any(dy).([]float32); ok {
		i = bnGradSumsF32Vec(sdy, sdyx, f, any(x).([]float32), m)
	}
	for ; i < len(dy); i++ {
		g := float64(dy[i])
		sdy[i%32] += g
		sdyx[i%32] += g * (float64(x[i]) - m)
	}
}
