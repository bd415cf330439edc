package data

import "fmt"

// EpochSampler is what a training loop iterates: the index batches of each
// epoch, the same for the same epoch every time it is asked. Resuming at
// step k of epoch e is Epoch(e)[k:]. Sampler, DetSampler and BucketSampler
// implement it.
type EpochSampler interface {
	// Epoch returns the batches of epoch e, each a list of dataset indices.
	Epoch(e int) [][]int
	// Steps is the number of batches per epoch, len(Epoch(e)) for every e.
	Steps() int
}

// Sampler splits n indices into batches, optionally in a random order that
// depends only on (seed, epoch).
//
// With shuffle, epoch e visits the permutation made by a Fisher–Yates
// shuffle of [0, n) driven by PCG-DXSM seeded with
// (splitmix64(seed), splitmix64(e)) (see rng.go); without it, 0..n-1 in
// order. The permutation is cut into consecutive batches of the batch size;
// the last, shorter batch is dropped when dropLast is set.
type Sampler struct {
	n, batch int
	seed     int64
	shuffle  bool
	dropLast bool
}

var _ EpochSampler = (*Sampler)(nil)

// NewSampler returns a sampler over n items. It panics when n < 0 or
// batch < 1: a caller validates user input (flags) before this.
func NewSampler(n, batch int, seed int64, shuffle, dropLast bool) *Sampler {
	if n < 0 || batch < 1 {
		panic(fmt.Sprintf("data: NewSampler(n=%d, batch=%d): need n >= 0 and batch >= 1", n, batch))
	}
	return &Sampler{n: n, batch: batch, seed: seed, shuffle: shuffle, dropLast: dropLast}
}

// Len is the number of items, BatchSize the batch size.
func (s *Sampler) Len() int { return s.n }

// BatchSize is the size of every batch but possibly the last.
func (s *Sampler) BatchSize() int { return s.batch }

// Steps is the number of batches per epoch: n/batch with dropLast, else
// ceil(n/batch).
func (s *Sampler) Steps() int { return steps(s.n, s.batch, s.dropLast) }

func steps(n, batch int, dropLast bool) int {
	if dropLast {
		return n / batch
	}
	return (n + batch - 1) / batch
}

// Epoch returns the batches of epoch e. The batches are views of one
// fresh slice; the caller may keep or modify them.
func (s *Sampler) Epoch(e int) [][]int {
	p := identity(s.n)
	if s.shuffle {
		newRNG(s.seed, uint64(e)).shuffle(p)
	}
	return chunk(p, s.batch, s.dropLast)
}

// chunk cuts p into consecutive batches of size batch.
func chunk(p []int, batch int, dropLast bool) [][]int {
	out := make([][]int, 0, steps(len(p), batch, dropLast))
	for i := 0; i < len(p); i += batch {
		j := min(i+batch, len(p))
		if j-i < batch && dropLast {
			break
		}
		out = append(out, p[i:j:j])
	}
	return out
}
