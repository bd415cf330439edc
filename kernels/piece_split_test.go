package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestPieceKernelsSplit checks that on two threads the small kernels of
// lenet's fitted step split a piece of 12 samples (pieceLenetPools)
// between both (all but the second block's ReLU gradient, 1.5 µs of
// work), and that every thread count gives the one-thread bits,
// on pieces of 8 to 16 samples, with NaNs, in both element types.
func TestPieceKernelsSplit(t *testing.T) {
	for _, c := range pieceLenetPools {
		p := c.p
		n := p.N * p.C * p.H * p.W
		if c.name == "block1" && perfSerial(2, n, reluGradGrain) {
			t.Errorf("%s: ReluGrad on %d elements stays on one thread", c.name, n)
		}
		if nnSerial(2, p.N*p.C, p.H*p.OutW()*p.KW+p.OutH()*p.OutW()*p.KH+poolPlaneCost) {
			t.Errorf("%s: MaxPool2DValues on %d planes stays on one thread", c.name, p.N*p.C)
		}
		if nnSerial(2, p.N*p.C, p.OutH()*p.OutW()*p.KH*p.KW+p.H*p.W+poolPlaneCost) {
			t.Errorf("%s: MaxPool2DGradX on %d planes stays on one thread", c.name, p.N*p.C)
		}
		if nnSerial(2, p.C, p.N*p.H*p.W*batchSumWeight) {
			t.Errorf("%s: the bias sum over %d channels stays on one thread", c.name, p.C)
		}
	}
	r := rand.New(rand.NewPCG(15, 26))
	for _, c := range pieceLenetPools {
		for _, samples := range []int{8, 10, 12, 16} {
			p := c.p
			p.N = samples
			name := fmt.Sprintf("%s/%d", c.name, samples)
			checkPieceKernels[float32](t, r, p, name)
			checkPieceKernels[float64](t, r, p, name)
		}
	}
}

func checkPieceKernels[T float32 | float64](t *testing.T, r *rand.Rand, p Pool2DParams, name string) {
	t.Helper()
	n, on := p.N*p.C*p.H*p.W, p.N*p.C*p.OutH()*p.OutW()
	x, y := poolValuesInputNaNs[T](r, n, 50), poolValuesInputNaNs[T](r, n, 50)
	dy := poolValuesInputNaNs[T](r, on, 50)
	shape := []int{p.N, p.C, p.H, p.W}
	start := poolValuesInputNaNs[T](r, p.C, 1000)
	run := func(th int) (relu, values, gradX, sum []T) {
		relu, values, gradX = make([]T, n), make([]T, on), make([]T, n)
		sum = append([]T(nil), start...)
		ReluGrad(relu, y, x, th)
		MaxPool2DValues(p, x, values, th)
		MaxPool2DGradX(p, dy, x, gradX, th)
		if err := ReduceSumBatchInto(th, sum, make([]T, p.C), x, shape, []int{0, 2, 3}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return relu, values, gradX, sum
	}
	w0, w1, w2, w3 := run(1)
	for _, th := range []int{2, 3} {
		g0, g1, g2, g3 := run(th)
		for _, k := range []struct {
			kernel    string
			got, want []T
		}{{"ReluGrad", g0, w0}, {"MaxPool2DValues", g1, w1}, {"MaxPool2DGradX", g2, w2}, {"ReduceSumBatchInto", g3, w3}} {
			if i := sameBitsAny(k.got, k.want); i >= 0 {
				t.Errorf("%s %T %s threads %d: [%d] = %v, one thread gives %v", name, k.got[0], k.kernel, th, i, k.got[i], k.want[i])
			}
		}
	}
}

// TestPieceKernelsAllocs checks that ReluGrad, MaxPool2DGradX and
// ReduceSumBatchInto make no Go allocation on a piece, on one thread or
// split between two.
func TestPieceKernelsAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("under the race detector sync.Pool drops objects at random")
	}
	for _, c := range pieceLenetPools {
		p := c.p
		n, on := p.N*p.C*p.H*p.W, p.N*p.C*p.OutH()*p.OutW()
		x, y, dy, dx := perfFill(n, 3), perfFill(n, 5), perfFill(on, 7), make([]float32, n)
		acc, tmp := make([]float32, p.C), make([]float32, p.C)
		shape, axes := []int{p.N, p.C, p.H, p.W}, []int{0, 2, 3}
		for _, th := range []int{1, 2} {
			for _, k := range []struct {
				name string
				f    func()
			}{
				{"ReluGrad", func() { ReluGrad(dx, y, x, th) }},
				{"MaxPool2DGradX", func() { MaxPool2DGradX(p, dy, x, dx, th) }},
				{"ReduceSumBatchInto", func() { ReduceSumBatchInto(th, acc, tmp, x, shape, axes) }},
			} {
				k.f()
				if a := testing.AllocsPerRun(20, k.f); a > 0.5 {
					t.Errorf("%s %s threads %d: %.1f allocations per call, want 0", c.name, k.name, th, a)
				}
			}
		}
	}
}
