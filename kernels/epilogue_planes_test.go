package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// The one-pass epilogue (epiPlanesOnePass) gives the bits of Go's
// out + bias, + residual, max(·, 0) element by element, on planes whose
// lengths end in every kind of tail and on values that round, overflow,
// are NaN (with payloads in both operands) or signed zeros.
func TestEpiPlanesOnePassMatchesScalar(t *testing.T) {
	if !hasEpiPlanesVec {
		t.Skip("no AVX-512: epiPlanes runs its separate passes, which the conv epilogue tests check")
	}
	r := rand.New(rand.NewPCG(3, 4))
	special := []float32{float32(math.NaN()), math.Float32frombits(0x7fc01234), math.Float32frombits(0xffc00077),
		0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32, -math.MaxFloat32, 1e-45}
	val := func() float32 {
		if r.IntN(4) == 0 {
			return special[r.IntN(len(special))]
		}
		return float32(r.NormFloat64())
	}
	for _, hw := range []int{1, 5, 15, 16, 17, 32, 33, 100} {
		for _, res := range []bool{false, true} {
			for _, relu := range []bool{false, true} {
				const channels = 5
				q0, q1 := 3, 12 // wraps around the channels twice
				out := make([]float32, q1*hw)
				rs := make([]float32, q1*hw)
				bias := make([]float32, channels)
				for i := range out {
					out[i], rs[i] = val(), val()
				}
				for i := range bias {
					bias[i] = val()
				}
				want := append([]float32(nil), out...)
				for q := q0; q < q1; q++ {
					for i := q * hw; i < (q+1)*hw; i++ {
						v := want[i] + bias[q%channels]
						if res {
							v += rs[i]
						}
						if relu {
							v = max(v, 0)
						}
						want[i] = v
					}
				}
				ep := Epilogue{Bias32: bias}
				if res {
					ep.Residual32 = rs
				}
				if relu {
					ep.Act = ActRelu
				}
				got := append([]float32(nil), out...)
				epiPlanes(&ep, got, channels, q0, q1, hw)
				name := fmt.Sprintf("hw=%d res=%v relu=%v", hw, res, relu)
				for i := range want {
					if raceEnabled && got[i] != got[i] && want[i] != want[i] {
						// The race build may commute the reference's
						// additions, and x86 returns the first NaN operand's
						// payload: only NaN-ness is compared there.
						continue
					}
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s: element %d (plane %d) = %v (%#x), want %v (%#x)", name, i, i/hw,
							got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
					}
				}
			}
		}
	}
}
