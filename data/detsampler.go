package data

// DetSampler walks the detection set batch by batch in its layout (see
// Detection): epoch e has the same batches, of the same sizes, at the same
// positions, and the empty batches stay where the layout puts them
// (positions b with b%EmptyBatchEvery == EmptyBatchEvery-1).
//
// With shuffle, epoch e draws one PCG-DXSM stream from (seed, e), shuffles
// the images of the empty batches among themselves, then the other images
// among themselves (Fisher–Yates each, in that order), and deals them back
// into the layout's slots in order. Without it the layout is returned as
// is. With dropLast a last, shorter batch is left out.
type DetSampler struct {
	d        *Detection
	seed     int64
	shuffle  bool
	dropLast bool
}

var _ EpochSampler = (*DetSampler)(nil)

// Sampler returns a sampler over d's layout.
func (d *Detection) Sampler(seed int64, shuffle, dropLast bool) *DetSampler {
	return &DetSampler{d: d, seed: seed, shuffle: shuffle, dropLast: dropLast}
}

// Steps is the number of batches per epoch.
func (s *DetSampler) Steps() int { return steps(s.d.cfg.N, s.d.cfg.BatchSize, s.dropLast) }

// Epoch returns the batches of epoch e.
func (s *DetSampler) Epoch(e int) [][]int {
	n, bs := s.d.cfg.N, s.d.cfg.BatchSize
	order := identity(n)
	if s.shuffle {
		var empty, other []int
		for i := range n {
			if s.d.IsEmptyBatch(i / bs) {
				empty = append(empty, i)
			} else {
				other = append(other, i)
			}
		}
		r := newRNG(s.seed, streamID(domainDetSampler, e))
		r.shuffle(empty)
		r.shuffle(other)
		for i := range order {
			if s.d.IsEmptyBatch(i / bs) {
				order[i], empty = empty[0], empty[1:]
			} else {
				order[i], other = other[0], other[1:]
			}
		}
	}
	return chunk(order, bs, s.dropLast)
}
