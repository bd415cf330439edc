package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// bnRefLanes is the lane order of norm_lanes.go written out plainly:
// element i of each row adds f(i) into lane i mod 32, rows in order.
func bnRefLanes(outer, ch, inner, c int, f func(i int) float64) float64 {
	var l bnLanes
	for o := range outer {
		for i := range inner {
			l[i%32] += f((o*ch+c)*inner + i)
		}
	}
	return l.total()
}

// TestBatchNormF32Lanes checks float32 batch norm (statistics, apply,
// gradient sums and input gradient, in place or not) bitwise against the
// lane order written out plainly — so the AVX-512 loops and the portable
// ones compute the same numbers — and against float64 sums, over row
// lengths around the loops' 8- and 32-element blocks, for 1 and 3
// threads.
func TestBatchNormF32Lanes(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, sh := range [][3]int{{2, 3, 1}, {3, 2, 7}, {2, 4, 8}, {1, 3, 31}, {4, 2, 32}, {2, 3, 33}, {3, 5, 100}, {2, 2, 257}, {8, 3, 400}} {
		outer, ch, inner := sh[0], sh[1], sh[2]
		n := outer * ch * inner
		x := perfRandom(r, n, false)
		dy := perfRandom(r, n, false)
		for i := range x {
			x[i] += 3 // a mean well away from 0
		}
		count := float64(outer * inner)
		for _, th := range []int{1, 3} {
			mean, variance := make([]float64, ch), make([]float64, ch)
			BatchNormStats(x, outer, ch, inner, mean, variance, th)
			scale, invStd := make([]float64, ch), make([]float64, ch)
			a, b := make([]float64, ch), make([]float64, ch)
			for c := range ch {
				m := bnRefLanes(outer, ch, inner, c, func(i int) float64 { return float64(x[i]) }) / count
				v := bnRefLanes(outer, ch, inner, c, func(i int) float64 { d := float64(x[i]) - m; return d * d }) / count
				if math.Float64bits(mean[c]) != math.Float64bits(m) || math.Float64bits(variance[c]) != math.Float64bits(v) {
					t.Fatalf("%v threads %d channel %d: mean, variance %v %v, want %v %v", sh, th, c, mean[c], variance[c], m, v)
				}
				var s, q float64 // plain float64 sums
				for o := range outer {
					for _, e := range x[(o*ch+c)*inner : (o*ch+c+1)*inner] {
						s += float64(e)
					}
				}
				for o := range outer {
					for _, e := range x[(o*ch+c)*inner : (o*ch+c+1)*inner] {
						q += (float64(e) - s/count) * (float64(e) - s/count)
					}
				}
				if math.Abs(m-s/count) > 1e-12*math.Abs(m) || math.Abs(v-q/count) > 1e-12*v {
					t.Fatalf("%v channel %d: mean, variance %v %v, float64 sums give %v %v", sh, c, m, v, s/count, q/count)
				}
				scale[c] = 0.5 + float64(c)
				invStd[c] = 1 / math.Sqrt(v+1e-5)
				a[c], b[c] = scale[c]*invStd[c], float64(c)-m*scale[c]*invStd[c]
			}
			y := make([]float32, n)
			BatchNormApply(x, y, outer, ch, inner, a, b, th)
			for i := range y {
				c := i / inner % ch
				if want := float32(float64(x[i])*a[c] + b[c]); math.Float32bits(y[i]) != math.Float32bits(want) {
					t.Fatalf("%v apply [%d] = %v, want %v", sh, i, y[i], want)
				}
			}
			for _, training := range []bool{true, false} {
				for _, inPlace := range []bool{false, true} {
					dx := make([]float32, n)
					in := dy
					if inPlace {
						in = append([]float32(nil), dy...)
						dx = in
					}
					dscale, dbias := make([]float64, ch), make([]float64, ch)
					BatchNormGrad(in, x, outer, ch, inner, scale, mean, invStd, training, dx, dscale, dbias, th)
					for c := range ch {
						sdy := bnRefLanes(outer, ch, inner, c, func(i int) float64 { return float64(dy[i]) })
						sdyx := bnRefLanes(outer, ch, inner, c, func(i int) float64 { return float64(dy[i]) * (float64(x[i]) - mean[c]) })
						if math.Float64bits(dbias[c]) != math.Float64bits(sdy) || math.Float64bits(dscale[c]) != math.Float64bits(sdyx*invStd[c]) {
							t.Fatalf("%v channel %d: dbias, dscale %v %v, want %v %v", sh, c, dbias[c], dscale[c], sdy, sdyx*invStd[c])
						}
					}
					for i := range dx {
						c := i / inner % ch
						k := scale[c] * invStd[c]
						want := float32(float64(dy[i]) * k)
						if training {
							xh := (float64(x[i]) - mean[c]) * invStd[c]
							want = float32(k * (float64(dy[i]) - dbias[c]/count - xh*(dscale[c]/count)))
						}
						if math.Float32bits(dx[i]) != math.Float32bits(want) {
							t.Fatalf("%v training %v in place %v: dx[%d] = %v, want %v", sh, training, inPlace, i, dx[i], want)
						}
					}
				}
			}
		}
	}
}
