package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestReduceRowsSameBits: sums and means over the last axes of [k, L]
// and [a, k, h, w], where each output reads one row of its own, take
// redInnerRows (eight rows at a time, AVX where the CPU has it; the
// purego build runs the Go loop) and give each row's redSumContig bits,
// the path they took before, for row lengths around the 8-element loop,
// the 4-lane tail and the 4096-element blocks, output counts around the
// groups of eight, and 1 to 3 threads; a call makes no Go allocation.
func TestReduceRowsSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	type shape struct{ k, L int }
	var cases []shape
	for L := 1; L <= 19; L++ {
		cases = append(cases, shape{9, L})
	}
	for _, L := range []int{100, 400, 1600, 4095, 4096, 4097, 4100, 6400, 8195} {
		cases = append(cases, shape{17, L})
	}
	for k := 1; k <= 17; k++ {
		cases = append(cases, shape{k, 37})
	}
	for _, c := range cases {
		x := make([]float32, c.k*c.L)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		// Large values that cancel in pairs within a row leave their
		// float64 rounding in the sum at float32 precision, so that
		// another order of the additions shows in the bits.
		for o := range c.k {
			row := x[o*c.L : (o+1)*c.L]
			for range (c.L + 3) / 4 {
				big := float32(math.Ldexp(1, 20+r.IntN(30)))
				row[r.IntN(c.L)], row[r.IntN(c.L)] = big, -big
			}
		}
		for _, op := range []ReduceOp{ReduceSum, ReduceMean} {
			want := make([]float32, c.k)
			for o := range want {
				s := redSumContig[float32, float64](x[o*c.L : (o+1)*c.L])
				want[o] = redFinish[float32](redFin[float64]{mean: op == ReduceMean, count: float64(c.L)}, 0+s)
			}
			for _, sh := range [][]int{{c.k, c.L}, {1, c.k, 1, c.L}} {
				axes := []int{len(sh) - 1}
				if len(sh) == 4 {
					axes = []int{2, 3}
				}
				for th := 1; th <= 3; th++ {
					got := make([]float32, c.k)
					if err := Reduce(op, th, got, x, sh, axes); err != nil {
						t.Fatal(err)
					}
					for o := range want {
						if math.Float32bits(got[o]) != math.Float32bits(want[o]) {
							t.Fatalf("op %d shape %v threads %d output %d: %v, redSumContig gives %v", op, sh, th, o, got[o], want[o])
						}
					}
				}
				got := make([]float32, c.k)
				if a := testing.AllocsPerRun(3, func() { _ = Reduce(op, 1, got, x, sh, axes) }); a != 0 {
					t.Fatalf("op %d shape %v: %v Go allocations per call", op, sh, a)
				}
			}
		}
	}
}

// BenchmarkReduceMeanDet times the means of ppyoloe_s's attention (each
// map of [b, c, h·w]) on one thread.
func BenchmarkReduceMeanDet(b *testing.B) {
	for _, batch := range []int{1, 8} {
		for _, s := range []struct{ c, hw int }{{48, 6400}, {96, 1600}, {192, 400}, {384, 100}} {
			x := make([]float32, batch*s.c*s.hw)
			for i := range x {
				x[i] = float32(i%13) - 6
			}
			out := make([]float32, batch*s.c)
			b.Run(fmt.Sprintf("b=%d/c=%d/hw=%d", batch, s.c, s.hw), func(b *testing.B) {
				b.SetBytes(int64(4 * len(x)))
				for b.Loop() {
					if err := Reduce(ReduceMean, 1, out, x, []int{batch, s.c, s.hw}, []int{2}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
