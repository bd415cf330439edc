package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestConvRowsShapesSameBits runs every generated direct-convolution
// kernel, plain and with its epilogue, against its one-row kernel called
// row by row (whose weights are broadcast from memory by each
// multiply-add, as before weights were kept in registers) and checks the
// stored bits are the same, NaN payloads included: the kernels that reuse
// a step's weights across rows must compute each output as the same chain
// of fused multiply-adds. Outputs outside the tile and the masked lanes
// must be left alone.
func TestConvRowsShapesSameBits(t *testing.T) {
	if !convRowOK() {
		t.Skip("no AVX-512: no direct kernel")
	}
	r := rand.New(rand.NewPCG(61, 62))
	for ob := 1; ob <= convDirectMaxCh; ob++ {
		for rows := 1; rows <= convRowsMax(ob); rows++ {
			for trial := range 3 {
				nsteps := 1 + r.IntN(30)
				rs := 16 + r.IntN(40)
				reps := 1 + r.IntN(3)
				lanes := 16 - trial*5
				offs := make([]int64, nsteps)
				maxOff := 0
				for s := range offs {
					offs[s] = int64(r.IntN(200))
					maxOff = max(maxOff, int(offs[s]))
				}
				in := perfRandom(r, (reps*rows-1)*rs+maxOff+16+7, true)
				w := perfRandom(r, nsteps*ob, true)
				bias := perfRandom(r, ob, true)
				ors := 16 + r.IntN(8)
				ostride := reps*rows*ors + r.IntN(5)
				at := r.IntN(7)
				size := (ob-1)*ostride + (reps*rows-1)*ors + 16 + 3
				fresh := func() []float32 {
					out := make([]float32, size)
					for i := range out {
						out[i] = -7
					}
					return out
				}
				what := fmt.Sprintf("%dx%d/lanes=%d", ob, rows, lanes)
				got, want := fresh(), fresh()
				convRows(ob, rows, in, at, rs, offs, 0, maxOff, w, got, ostride, ors, lanes)
				for k := range rows {
					convRows(ob, 1, in, at+k*rs, rs, offs, 0, maxOff, w, want[k*ors:], ostride, ors, lanes)
				}
				convRowsStrictBits(t, what, got, want)
				for _, relu := range []bool{false, true} {
					got, want := fresh(), fresh()
					convRowsEpi(ob, rows, reps, in, at, rs, offs, 0, maxOff, w, got, ostride, ors, lanes, bias, relu, false)
					convRowsEpi(ob, 1, reps*rows, in, at, rs, offs, 0, maxOff, w, want, ostride, ors, lanes, bias, relu, false)
					convRowsStrictBits(t, fmt.Sprintf("%s/epi/relu=%v", what, relu), got, want)
				}
				// Adding onto out's values (a later depth slice), with and
				// without the bias and ReLU.
				prior := perfRandom(r, size, true)
				for _, b := range [][]float32{nil, bias} {
					for _, relu := range []bool{false, b != nil} {
						got, want := slices.Clone(prior), slices.Clone(prior)
						convRowsEpi(ob, rows, reps, in, at, rs, offs, 0, maxOff, w, got, ostride, ors, lanes, b, relu, true)
						convRowsEpi(ob, 1, reps*rows, in, at, rs, offs, 0, maxOff, w, want, ostride, ors, lanes, b, relu, true)
						convRowsStrictBits(t, fmt.Sprintf("%s/add/bias=%v/relu=%v", what, b != nil, relu), got, want)
					}
				}
			}
		}
	}
}

// TestConvRowsAddRoundsOnce: with add, each stored value is the kernel's
// sum plus out's value rounded once (the GEMM's acc + 1·C), on finite
// values, for every kernel shape.
func TestConvRowsAddRoundsOnce(t *testing.T) {
	if !convRowOK() {
		t.Skip("no AVX-512: no direct kernel")
	}
	r := rand.New(rand.NewPCG(75, 76))
	for ob := 1; ob <= convDirectMaxCh; ob++ {
		for rows := 1; rows <= convRowsMax(ob); rows++ {
			nsteps, rs, ors := 1+r.IntN(20), 20, 16
			offs := make([]int64, nsteps)
			for s := range offs {
				offs[s] = int64(s)
			}
			in := perfRandom(r, (rows-1)*rs+nsteps+16, false)
			w := perfRandom(r, nsteps*ob, false)
			ostride := rows * ors
			size := ob * ostride
			sums := make([]float32, size)
			convRowsEpi(ob, rows, 1, in, 0, rs, offs, 0, nsteps-1, w, sums, ostride, ors, 16, nil, false, false)
			prior := perfRandom(r, size, false)
			got := slices.Clone(prior)
			convRowsEpi(ob, rows, 1, in, 0, rs, offs, 0, nsteps-1, w, got, ostride, ors, 16, nil, false, true)
			for i := range got {
				if want := float32(float64(sums[i]) + float64(prior[i])); math.Float32bits(got[i]) != math.Float32bits(want) {
					t.Fatalf("%dx%d: [%d] = %v, want %v + %v = %v", ob, rows, i, got[i], sums[i], prior[i], want)
				}
			}
		}
	}
}

// convRowsStrictBits fails unless got and want hold the same bits.
func convRowsStrictBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: [%d] = %#x, want %#x", what, i, math.Float32bits(got[i]), math.Float32bits(want[i]))
		}
	}
}
