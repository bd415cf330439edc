package kernels

import (
	"math"
	"math/rand"
	"testing"
)

// The canonical sums over a batch (BatchGroup): cut into pieces of one
// group, each piece's sum added to the running one in order gives the bits
// of the whole batch's sum, whatever the thread count.

func batchRand[T float32 | float64](r *rand.Rand, n int) []T {
	x := make([]T, n)
	for i := range x {
		x[i] = T(r.NormFloat64())
	}
	return x
}

// foldPieces sums a batch of n samples piece by piece: sum(lo, hi, out)
// writes the sum of samples [lo, hi) into out, and each piece's sum after
// the first is added into the first's.
func foldPieces[T float32 | float64](n, size int, sum func(lo, hi int, out []T)) []T {
	acc := make([]T, size)
	part := make([]T, size)
	for lo := 0; lo < n; lo += BatchGroup {
		hi := min(lo+BatchGroup, n)
		if lo == 0 {
			sum(lo, hi, acc)
			continue
		}
		sum(lo, hi, part)
		for i, v := range part {
			acc[i] += v
		}
	}
	return acc
}

// intoPieces sums a batch of n samples in pieces of per samples (whole
// groups): sum(lo, hi, out, false) writes the first piece's sum into out,
// sum(lo, hi, out, true) adds each later one's into it.
func intoPieces[T float32 | float64](n, per, size int, sum func(lo, hi int, out []T, into bool)) []T {
	acc := make([]T, size)
	for lo := 0; lo < n; lo += per {
		sum(lo, min(lo+per, n), acc, lo > 0)
	}
	return acc
}

func batchSameBits[T float32 | float64](t *testing.T, what string, got, want []T) {
	t.Helper()
	for i := range want {
		if math.Float64bits(float64(got[i])) != math.Float64bits(float64(want[i])) {
			t.Fatalf("%s: element %d is %v piece by piece, %v whole", what, i, got[i], want[i])
		}
	}
}

func TestConvGradFilterSumsOverTheBatchCanonically(t *testing.T) {
	cases := []struct {
		name string
		p    Conv2DParams
	}{
		{"lenet conv1 (5x5, pad 2, 1 channel)", Conv2DParams{N: 19, C: 1, H: 28, W: 28, O: 6, KH: 5, KW: 5, SH: 1, SW: 1, PH: 2, PW: 2, DH: 1, DW: 1, Groups: 1}},
		{"lenet conv2 (6 -> 16)", Conv2DParams{N: 64, C: 6, H: 14, W: 14, O: 16, KH: 5, KW: 5, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1}},
		{"strided 3x3/2", Conv2DParams{N: 37, C: 3, H: 9, W: 9, O: 4, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1}},
		{"1x1 grouped", Conv2DParams{N: 10, C: 4, H: 5, W: 5, O: 4, KH: 1, KW: 1, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 2}},
		// The batched GEMM (conv_grad_gemm.go): groups of one depth
		// slice, of several slices of whole images, and of pieces of one
		// image (tinydet's 16→32/2, 32→32 and 64→64 at a batch that ends
		// in a short group).
		{"tinydet 16->32 3x3/2 on 32x32", Conv2DParams{N: 37, C: 16, H: 32, W: 32, O: 32, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1}},
		{"tinydet 32->32 on 16x16", Conv2DParams{N: 14, C: 32, H: 16, W: 16, O: 32, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1}},
		{"tinydet 64->64 on 8x8", Conv2DParams{N: 19, C: 64, H: 8, W: 8, O: 64, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1}},
		{"4->16 3x3/2 on 64x64, grouped", Conv2DParams{N: 9, C: 4, H: 64, W: 64, O: 16, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 2}},
	}
	gemm := 0
	for _, c := range cases {
		if c.p.convFilterGemmOK() {
			gemm++
		}
		for _, f32 := range []bool{true, false} {
			r := rand.New(rand.NewSource(1))
			p := c.p
			xs, dys := p.C*p.H*p.W, p.O*p.OutH()*p.OutW()
			runAs := func(dyAll, xAll any, lo, hi, threads int, out any, into bool) {
				q := p
				q.N = hi - lo
				switch dw := out.(type) {
				case []float32:
					ws := make([]float32, max(Conv2DGradFilterWorkspace(q, threads), Conv2DGradFilterIntoWorkspaceFor(q, threads, true)))
					if into {
						Conv2DGradFilterInto(q, dyAll.([]float32)[lo*dys:hi*dys], xAll.([]float32)[lo*xs:hi*xs], dw, ws, threads)
					} else {
						Conv2DGradFilter(q, dyAll.([]float32)[lo*dys:hi*dys], xAll.([]float32)[lo*xs:hi*xs], dw, ws, threads)
					}
				case []float64:
					ws := make([]float64, max(Conv2DGradFilterWorkspace(q, threads), Conv2DGradFilterIntoWorkspaceFor(q, threads, false)))
					if into {
						Conv2DGradFilterInto(q, dyAll.([]float64)[lo*dys:hi*dys], xAll.([]float64)[lo*xs:hi*xs], dw, ws, threads)
					} else {
						Conv2DGradFilter(q, dyAll.([]float64)[lo*dys:hi*dys], xAll.([]float64)[lo*xs:hi*xs], dw, ws, threads)
					}
				}
			}
			run := func(dyAll, xAll any, lo, hi, threads int, out any) { runAs(dyAll, xAll, lo, hi, threads, out, false) }
			if f32 {
				dy, x := batchRand[float32](r, p.N*dys), batchRand[float32](r, p.N*xs)
				whole := make([]float32, p.filterSize())
				run(dy, x, 0, p.N, 1, whole)
				for _, th := range []int{1, 2, 5} {
					other := make([]float32, p.filterSize())
					run(dy, x, 0, p.N, th, other)
					batchSameBits(t, c.name+" f32, threads", other, whole)
					got := foldPieces(p.N, p.filterSize(), func(lo, hi int, out []float32) { run(dy, x, lo, hi, th, out) })
					batchSameBits(t, c.name+" f32, pieces", got, whole)
					for _, per := range []int{BatchGroup, 2 * BatchGroup, 9 * BatchGroup} {
						got := intoPieces(p.N, per, p.filterSize(), func(lo, hi int, out []float32, into bool) { runAs(dy, x, lo, hi, th, out, into) })
						batchSameBits(t, c.name+" f32, pieces added into", got, whole)
					}
				}
				continue
			}
			dy, x := batchRand[float64](r, p.N*dys), batchRand[float64](r, p.N*xs)
			whole := make([]float64, p.filterSize())
			run(dy, x, 0, p.N, 1, whole)
			for _, th := range []int{1, 2, 5} {
				got := foldPieces(p.N, p.filterSize(), func(lo, hi int, out []float64) { run(dy, x, lo, hi, th, out) })
				batchSameBits(t, c.name+" f64, pieces", got, whole)
				got = intoPieces(p.N, 2*BatchGroup, p.filterSize(), func(lo, hi int, out []float64, into bool) { runAs(dy, x, lo, hi, th, out, into) })
				batchSameBits(t, c.name+" f64, pieces added into", got, whole)
			}
		}
	}
	if gemm < 3 {
		t.Fatalf("%d cases on the batched GEMM's path, want at least 3", gemm)
	}
}

func TestReduceSumBatchSumsCanonically(t *testing.T) {
	cases := []struct {
		shape, axes []int
	}{
		{[]int{64, 6, 28, 28}, []int{0, 2, 3}}, // a conv bias's gradient
		{[]int{37, 10}, []int{0}},              // a dense layer's
		{[]int{3, 5}, []int{0}},                // one group
		{[]int{9, 4, 1}, []int{0, 1}},
	}
	for _, c := range cases {
		r := rand.New(rand.NewSource(2))
		n := 1
		for _, d := range c.shape {
			n *= d
		}
		x := batchRand[float32](r, n)
		out := 1
		for i, d := range c.shape {
			if i != 0 && !batchHas(c.axes, i) {
				out *= d
			}
		}
		per := n / c.shape[0]
		sum := func(lo, hi, threads int, dst []float32) {
			shape := append([]int{hi - lo}, c.shape[1:]...)
			if err := ReduceSumBatch(threads, dst, make([]float32, len(dst)), x[lo*per:hi*per], shape, c.axes); err != nil {
				t.Fatal(err)
			}
		}
		whole := make([]float32, out)
		sum(0, c.shape[0], 1, whole)
		for _, th := range []int{1, 2, 4} {
			got := foldPieces(c.shape[0], out, func(lo, hi int, dst []float32) { sum(lo, hi, th, dst) })
			batchSameBits(t, "reduce sum", got, whole)
			for _, piece := range []int{BatchGroup, 3 * BatchGroup} {
				got := intoPieces(c.shape[0], piece, out, func(lo, hi int, dst []float32, into bool) {
					if !into {
						sum(lo, hi, th, dst)
						return
					}
					shape := append([]int{hi - lo}, c.shape[1:]...)
					if err := ReduceSumBatchInto(th, dst, make([]float32, len(dst)), x[lo*per:hi*per], shape, c.axes); err != nil {
						t.Fatal(err)
					}
				})
				batchSameBits(t, "reduce sum added into", got, whole)
			}
		}
		// Against a float64 reference, to single precision.
		ref := make([]float64, out)
		inner := 1
		for i := len(c.shape) - 1; i > 0; i-- {
			if !batchHas(c.axes, i) {
				break
			}
			inner *= c.shape[i]
		}
		for i, v := range x {
			ref[(i%per)/inner%out] += float64(v)
		}
		for i := range ref {
			if d := math.Abs(float64(whole[i]) - ref[i]); d > 1e-4*(1+math.Abs(ref[i])) {
				t.Fatalf("%v over %v: element %d is %v, want %v", c.shape, c.axes, i, whole[i], ref[i])
			}
		}
	}
	if err := ReduceSumBatch(1, make([]float32, 4), nil, make([]float32, 8), []int{2, 4}, []int{1}); err == nil {
		t.Fatal("a sum that keeps axis 0: no error")
	}
}

func batchHas(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
