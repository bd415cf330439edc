package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestEwVecF32SameBits checks the float32 add and multiply loops of the
// table (the AVX loops where present) against the Go loops, bit for bit:
// every length up to 80 and a few long ones (the four-register loop, the
// single one and the Go tail), specials among the values, in place too;
// and Binary's broadcasts of a per-plane scale, a row and a scalar on 1-3
// threads against an element-by-element reference.
func TestEwVecF32SameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 28))
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.Float32frombits(0x7fc00123), 1e-45, -1e-38, 3e38, -3e38}
	val := func() float32 {
		if r.IntN(8) == 0 {
			return specials[r.IntN(len(specials))]
		}
		return float32(r.NormFloat64() * 100)
	}
	fill := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = val()
		}
		return x
	}
	same := func(what string, got, want []float32) {
		t.Helper()
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: [%d] = %v (%#x), want %v (%#x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
			}
		}
	}
	ref := [...]ewLoops[float32, float32]{
		BinAdd: {ewAddVVF32, ewAddVSF32, ewAddSVF32},
		BinMul: {ewMulVVF32, ewMulVSF32, ewMulSVF32},
	}
	lens := []int{1000, 1031, 4096 + 7}
	for n := range 81 {
		lens = append(lens, n)
	}
	for _, op := range []BinaryOp{BinAdd, BinMul} {
		l := ewArithF32[op]
		for _, n := range lens {
			a, b, y := fill(n), fill(n), val()
			want, got := make([]float32, n), make([]float32, n)
			ref[op].vv(want, a, b)
			l.vv(got, a, b)
			same("vv", got, want)
			l.vv(a, a, b) // in place
			same("vv in place", a, want)
			ref[op].vs(want, b, y)
			l.vs(got, b, y)
			same("vs", got, want)
			l.vs(b, b, y)
			same("vs in place", b, want)
		}
	}
	at := func(x []float32, shape []int, idx []int) float32 {
		off, stride := 0, 1
		for d := len(shape) - 1; d >= 0; d-- {
			i := idx[len(idx)-len(shape)+d]
			if shape[d] == 1 {
				i = 0
			}
			off += i * stride
			stride *= shape[d]
		}
		return x[off]
	}
	for _, sh := range [][2][]int{
		{{2, 48, 80, 80}, {2, 48, 1, 1}},
		{{3, 7, 5, 3}, {3, 7, 1, 1}},
		{{1, 5, 13, 11}, {1, 5, 1, 1}},
		{{2, 2100, 4}, {2100, 1}},
		{{2, 9, 37}, {37}},
		{{4, 33}, {}},
		{{5, 17, 19}, {5, 17, 19}},
	} {
		out, _ := BroadcastShapes(sh[0], sh[1])
		a, b := fill(ewNumel(sh[0])), fill(ewNumel(sh[1]))
		for _, op := range []BinaryOp{BinAdd, BinMul} {
			want := make([]float32, ewNumel(out))
			idx := make([]int, len(out))
			for i := range want {
				for d, q := len(out)-1, i; d >= 0; d-- {
					idx[d] = q % out[d]
					q /= out[d]
				}
				x, y := at(a, sh[0], idx), at(b, sh[1], idx)
				if op == BinAdd {
					want[i] = x + y
				} else {
					want[i] = x * y
				}
			}
			for threads := 1; threads <= 3; threads++ {
				got := make([]float32, len(want))
				if err := Binary(op, threads, got, out, a, sh[0], b, sh[1]); err != nil {
					t.Fatal(err)
				}
				same("broadcast", got, want)
			}
		}
	}
	o, full, plane := make([]float32, 2*48*80*80), []int{2, 48, 80, 80}, []int{2, 48, 1, 1}
	if n := testing.AllocsPerRun(5, func() {
		_ = Binary(BinMul, 1, o, full, o, full, o[:96], plane)
		_ = Binary(BinAdd, 1, o, full, o, full, o, full)
	}); n != 0 {
		t.Errorf("%v allocations per run", n)
	}
}

// BenchmarkEwDetOps times the deployed detector's largest elementwise
// ops at batch 1 and 8 on one thread: the ESE's per-channel scale
// ([n,48,80,80] · [n,48,1,1]) and the residual add ([n,96,40,40]).
func BenchmarkEwDetOps(b *testing.B) {
	for _, n := range []int{1, 8} {
		x, y, o := make([]float32, n*48*80*80), make([]float32, n*48*80*80), make([]float32, n*48*80*80)
		for i := range x {
			x[i], y[i] = float32(i%97)*0.25, float32(i%89)*0.5
		}
		for _, c := range []struct {
			name           string
			op             BinaryOp
			out, as, bs    []int
			la, lb, lenOut int
		}{
			{"scale", BinMul, []int{n, 48, 80, 80}, []int{n, 48, 80, 80}, []int{n, 48, 1, 1}, n * 48 * 6400, n * 48, n * 48 * 6400},
			{"add", BinAdd, []int{n, 96, 40, 40}, []int{n, 96, 40, 40}, []int{n, 96, 40, 40}, n * 96 * 1600, n * 96 * 1600, n * 96 * 1600},
		} {
			b.Run(fmt.Sprintf("%s/n=%d", c.name, n), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(4 * (c.la + c.lb + c.lenOut)))
				for b.Loop() {
					if err := Binary(c.op, 1, o[:c.lenOut], c.out, x[:c.la], c.as, y[:c.lb], c.bs); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
