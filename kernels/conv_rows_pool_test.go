package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestConvRowsPoolSameBits runs every generated direct-convolution kernel
// of an even number of rows with its 2×2 pool in registers
// (convRowsEpiPool) against the same kernel storing its rows
// (convRowsEpi) followed by MaxPool2DValues on them, bit for bit, NaN
// payloads included: with and without ReLU, on ordinary values (the
// VMAXPS path), with specials (NaN and ±Inf in some tiles: the full
// maxPair), and on ties of ±0 and equal values. Outputs outside the
// pooled rows must be left alone.
func TestConvRowsPoolSameBits(t *testing.T) {
	if !convRowOK() {
		t.Skip("no AVX-512: no direct kernel")
	}
	r := rand.New(rand.NewPCG(71, 72))
	negZero := float32(math.Copysign(0, -1))
	for ob := 1; ob <= convDirectMaxCh; ob++ {
		for rows := 2; rows <= convRowsMax(ob); rows += 2 {
			for trial, values := range []string{"ordinary", "special", "ties"} {
				nsteps := 1 + r.IntN(30)
				rs := 16 + r.IntN(40)
				reps := 1 + r.IntN(3)
				offs := make([]int64, nsteps)
				maxOff := 0
				for s := range offs {
					offs[s] = int64(r.IntN(200))
					maxOff = max(maxOff, int(offs[s]))
				}
				n := (reps*rows-1)*rs + maxOff + 16 + 7
				in := perfRandom(r, n, values == "special")
				w := perfRandom(r, nsteps*ob, values == "special")
				bias := perfRandom(r, ob, false)
				if values == "ties" {
					// One step by 1 and a bias of −0: the sums are the inputs,
					// drawn from a few values, so windows hold equal values.
					nsteps, offs, maxOff = 1, offs[:1], int(offs[0])
					w = make([]float32, ob)
					for o := range w {
						w[o], bias[o] = 1, negZero
					}
					for i := range in {
						in[i] = []float32{0, negZero, 1, 1, -1, 2}[r.IntN(6)]
					}
				}
				ors := 16 + r.IntN(8)
				ostride := reps*rows*ors + r.IntN(5)
				at := r.IntN(7)
				for _, relu := range []bool{false, true} {
					// The rows, as the kernel stores them, then their pool.
					full := make([]float32, (ob-1)*ostride+(reps*rows-1)*ors+16)
					convRowsEpi(ob, rows, reps, in, at, rs, offs, 0, maxOff, w, full, ostride, ors, 16, bias, relu, false)
					pors, postride := 8+r.IntN(3), reps*rows/2*10+r.IntN(5)
					size := (ob-1)*postride + (reps*rows/2-1)*pors + 8 + 3
					want := make([]float32, size)
					got := make([]float32, size)
					for i := range want {
						want[i], got[i] = -7, -7
					}
					pp := Pool2DParams{N: 1, C: 1, H: reps * rows, W: 16, KH: 2, KW: 2, SH: 2, SW: 2}
					plane := make([]float32, reps*rows*16)
					pooled := make([]float32, reps*rows/2*8)
					for o := range ob {
						for y := range reps * rows {
							copy(plane[y*16:(y+1)*16], full[o*ostride+y*ors:])
						}
						MaxPool2DValues(pp, plane, pooled, 1)
						for y := range reps * rows / 2 {
							copy(want[o*postride+y*pors:], pooled[y*8:(y+1)*8])
						}
					}
					convRowsEpiPool(ob, rows, reps, in, at, rs, offs, 0, maxOff, w, got, postride, pors, bias, relu)
					convRowsStrictBits(t, fmt.Sprintf("%dx%d/reps=%d/%s/relu=%v (trial %d)", ob, rows, reps, values, relu, trial), got, want)
				}
			}
		}
	}
}
