package kernels

import "math"

// Counter-based random numbers. Element i of a stream with key k is a pure
// function of (k, i): the SplitMix64 output at position i of the sequence
// started at k. Filling a tensor therefore gives the same numbers whatever
// the thread count and partition, and any range can be filled on its own.

const (
	rndGamma = 0x9e3779b97f4a7c15 // SplitMix64's increment (golden ratio)
	rndGrain = 1 << 14
)

// RandMix is SplitMix64's finalizer, a bijective 64-bit mixer.
func RandMix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// RandKey derives a stream key from any number of 64-bit parts; different
// part lists give unrelated keys.
func RandKey(parts ...uint64) uint64 {
	h := uint64(0x6a09e667f3bcc908)
	for _, p := range parts {
		h = RandMix(h ^ RandMix(p+rndGamma))
	}
	return h
}

// RandBits returns the 64 random bits at position i of stream key.
func RandBits(key, i uint64) uint64 { return RandMix(key + (i+1)*rndGamma) }

// rndUnit53 maps bits to a float64 in [0, 1) with 53 random bits.
func rndUnit53(b uint64) float64 { return float64(b>>11) * (1.0 / (1 << 53)) }

// UniformF64 fills dst with numbers uniform in [lo, hi) (all lo if
// lo == hi); element i comes from position i of stream key.
func UniformF64(dst []float64, key uint64, lo, hi float64, threads int) {
	ParallelFor(threads, len(dst), rndGrain, func(a, b int) {
		for i := a; i < b; i++ {
			v := lo + rndUnit53(RandBits(key, uint64(i)))*(hi-lo)
			if v >= hi && lo < hi {
				v = math.Nextafter(hi, lo)
			}
			dst[i] = v
		}
	})
}

// UniformF32 is UniformF64 for float32: 24 random bits per element,
// rounded into [lo, hi).
func UniformF32(dst []float32, key uint64, lo, hi float64, threads int) {
	lo32, hi32 := float32(lo), float32(hi)
	below := math.Nextafter32(hi32, lo32) // the largest float32 below hi
	ParallelFor(threads, len(dst), rndGrain, func(a, b int) {
		for i := a; i < b; i++ {
			u := float64(RandBits(key, uint64(i))>>40) * (1.0 / (1 << 24))
			v := float32(lo + u*(hi-lo))
			if v >= hi32 && lo32 < hi32 {
				v = below
			}
			dst[i] = max(v, lo32)
		}
	})
}

// NormalF64 fills dst with normal numbers of the given mean and standard
// deviation by the Box-Muller transform: elements 2m and 2m+1 are the
// cosine and sine outputs of the pair drawn from positions 2m and 2m+1 of
// stream key.
func NormalF64(dst []float64, key uint64, mean, std float64, threads int) {
	rndNormal(dst, key, mean, std, threads)
}

// NormalF32 is NormalF64 computed in float64 and rounded to float32.
func NormalF32(dst []float32, key uint64, mean, std float64, threads int) {
	rndNormal(dst, key, mean, std, threads)
}

func rndNormal[T float32 | float64](dst []T, key uint64, mean, std float64, threads int) {
	ParallelFor(threads, len(dst), rndGrain, func(a, b int) {
		for i := a; i < b; {
			m := uint64(i / 2)
			u1 := 1 - rndUnit53(RandBits(key, 2*m)) // in (0, 1]
			u2 := rndUnit53(RandBits(key, 2*m+1))
			r := math.Sqrt(-2 * math.Log(u1))
			s, c := math.Sincos(2 * math.Pi * u2)
			if i%2 == 0 {
				dst[i] = T(mean + std*r*c)
				if i+1 < b {
					dst[i+1] = T(mean + std*r*s)
				}
				i += 2
			} else {
				dst[i] = T(mean + std*r*s)
				i++
			}
		}
	})
}
