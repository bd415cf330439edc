package data

import (
	"fmt"
	"slices"
)

// BucketSampler makes batches whose items all share one length, for
// models whose loop count is the batch's length.
//
// Items are grouped by length into buckets. Without shuffle an epoch is
// the buckets by increasing length, each cut into consecutive batches of
// its indices in increasing order. With shuffle, epoch e draws one
// PCG-DXSM stream from (seed, e); each bucket, by increasing length, is
// shuffled (Fisher–Yates) and cut into batches, then the list of all
// batches is shuffled the same way, so lengths are mixed across the epoch.
// With dropLast each bucket's last, shorter batch is left out; otherwise it
// is kept. Steps is the same for every epoch.
type BucketSampler struct {
	buckets  [][]int // indices per length, increasing length
	batch    int
	seed     int64
	shuffle  bool
	dropLast bool
}

var _ EpochSampler = (*BucketSampler)(nil)

// NewBucketSampler returns a sampler over items 0..len(lengths)-1 with the
// given lengths. It panics when batch < 1.
func NewBucketSampler(lengths []int, batch int, seed int64, shuffle, dropLast bool) *BucketSampler {
	if batch < 1 {
		panic(fmt.Sprintf("data: NewBucketSampler(batch=%d): need batch >= 1", batch))
	}
	byLen := map[int][]int{}
	for i, l := range lengths {
		byLen[l] = append(byLen[l], i)
	}
	keys := make([]int, 0, len(byLen))
	for l := range byLen {
		keys = append(keys, l)
	}
	slices.Sort(keys)
	s := &BucketSampler{batch: batch, seed: seed, shuffle: shuffle, dropLast: dropLast}
	for _, l := range keys {
		s.buckets = append(s.buckets, byLen[l])
	}
	return s
}

// Steps is the number of batches per epoch.
func (s *BucketSampler) Steps() int {
	n := 0
	for _, b := range s.buckets {
		n += steps(len(b), s.batch, s.dropLast)
	}
	return n
}

// Epoch returns the batches of epoch e.
func (s *BucketSampler) Epoch(e int) [][]int {
	var r rng
	if s.shuffle {
		r = newRNG(s.seed, streamID(domainBuckets, e))
	}
	out := make([][]int, 0, s.Steps())
	for _, b := range s.buckets {
		b = slices.Clone(b)
		if s.shuffle {
			r.shuffle(b)
		}
		out = append(out, chunk(b, s.batch, s.dropLast)...)
	}
	if s.shuffle {
		p := identity(len(out))
		r.shuffle(p)
		shuffled := make([][]int, len(out))
		for i, j := range p {
			shuffled[i] = out[j]
		}
		out = shuffled
	}
	return out
}
