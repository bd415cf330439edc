package data

import (
	"math/bits"
	"math/rand/v2"
)

// The one random source of the package. Everything random here (epoch
// permutations, synthetic images, sequences) is derived from it, so results
// depend only on the seed and not on the Go release:
//
//   - the generator is PCG-DXSM as specified by math/rand/v2.NewPCG, whose
//     algorithm is fixed by its documentation;
//   - a stream is seeded with NewPCG(splitmix64(uint64(seed)), splitmix64(stream)),
//     where splitmix64 is the SplitMix64 output function applied once;
//   - bounded integers use Lemire's multiply-and-reject method on Uint64,
//     floats take the top 53 (f64) or 24 (f32) bits of Uint64, and
//     permutations are a Fisher–Yates shuffle from the last position down.
//
// None of math/rand/v2's derived helpers (IntN, Perm, Shuffle, Float64) is
// used: their algorithms are not promised to stay the same.

// splitmix64 scrambles x so that nearby seeds give unrelated PCG states.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Stream domains keep the random streams of different uses apart when the
// same seed is used for several things.
const (
	domainDetObjects uint64 = 1 << 56
	domainDetPixels  uint64 = 2 << 56
	domainSequences  uint64 = 3 << 56
	domainDetSampler uint64 = 4 << 56
	domainBuckets    uint64 = 5 << 56
	domainMask       uint64 = 1<<56 - 1
)

// streamID puts index i (taken modulo 2^56) in the given domain.
func streamID(domain uint64, i int) uint64 { return domain | uint64(i)&domainMask }

type rng struct{ pcg *rand.PCG }

func newRNG(seed int64, stream uint64) rng {
	return rng{rand.NewPCG(splitmix64(uint64(seed)), splitmix64(stream))}
}

func (r rng) uint64() uint64 { return r.pcg.Uint64() }

// intn returns a uniform int in [0, n); n must be > 0.
func (r rng) intn(n int) int {
	bound := uint64(n)
	hi, lo := bits.Mul64(r.pcg.Uint64(), bound)
	if lo < bound {
		thresh := -bound % bound
		for lo < thresh {
			hi, lo = bits.Mul64(r.pcg.Uint64(), bound)
		}
	}
	return int(hi)
}

// between returns a uniform int in [lo, hi].
func (r rng) between(lo, hi int) int { return lo + r.intn(hi-lo+1) }

// float64 returns a uniform float64 in [0, 1).
func (r rng) float64() float64 { return float64(r.pcg.Uint64()>>11) * 0x1p-53 }

// float32 returns a uniform float32 in [0, 1).
func (r rng) float32() float32 { return float32(r.pcg.Uint64()>>40) * 0x1p-24 }

// shuffle permutes p in place (Fisher–Yates, last position first).
func (r rng) shuffle(p []int) {
	for i := len(p) - 1; i > 0; i-- {
		j := r.intn(i + 1)
		p[i], p[j] = p[j], p[i]
	}
}

// identity returns [0, 1, ..., n-1].
func identity(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}
