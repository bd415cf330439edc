package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// The bias-and-SiLU pass (epiBiasSilu) gives the bits of the two steps
// it replaces, the bias added element by element and then the silu op,
// on runs ending in every kind of tail, with sums that the vector loop
// leaves to Go (under −80, NaN, infinite) in the middle of a run, and
// biases that push whole runs there.
func TestEpiBiasSiluMatchesTwoSteps(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	special := []float32{float32(math.NaN()), math.Float32frombits(0x7fc01234), -90, -80, -79.99, 85, 89,
		0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32, -math.MaxFloat32, 1e-45}
	for _, n := range []int{0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 48, 100, 257} {
		for _, b := range []float32{0, 0.25, -3, -100, float32(math.NaN())} {
			for _, odd := range []bool{false, true} {
				v := make([]float32, n)
				for i := range v {
					v[i] = float32(r.NormFloat64() * 6)
					if odd && r.IntN(9) == 0 {
						v[i] = special[r.IntN(len(special))]
					}
				}
				want := make([]float32, n)
				for i, x := range v {
					want[i] = x + b
				}
				_ = Unary(UnarySilu, 1, want, want)
				got := append([]float32(nil), v...)
				epiBiasSilu(got, b)
				name := fmt.Sprintf("n=%d b=%v special=%v", n, b, odd)
				if err := epiSameBits(got, want); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			}
		}
	}
}

// epiBiasSilu allocates nothing, over runs it does in vector blocks and
// runs that leave blocks to Go.
func TestEpiBiasSiluAllocatesNothing(t *testing.T) {
	v := make([]float32, 70)
	for i := range v {
		v[i] = float32(i%11) - 5
	}
	v[20] = -200
	allocs := testing.AllocsPerRun(50, func() {
		epiBiasSilu(v, 0.5)
		v[20], v[40] = -200, float32(math.NaN())
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per run, want 0", allocs)
	}
}
