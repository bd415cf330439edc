package kernels

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"testing"
)

// TestSiluVecBitsEveryFloat32 checks the AVX-512 loops of the float32
// exponential's users against the Go code they mirror, on float32 bit
// patterns in order: with GOPIR_LONG=1 all 2^32 of them (six minutes on two
// busy cores), else
// every 251st. The loops interleave blocks and take
// shortcuts that keep each lane's roundings (a multiply-add where the
// product is exact, the exponent from the rounded sum's bits), so every
// input, not a sample of ordinary ones, must give the same bits: SiLU
// with and without a bias (0 added, which only turns -0 into +0), its
// gradient, and softmax's e^-d for d >= 0.
func TestSiluVecBitsEveryFloat32(t *testing.T) {
	if siluF32Vec(make([]float32, 16), make([]float32, 16)) == 0 {
		t.Skip("no AVX-512 loop on this CPU")
	}
	step := uint64(251)
	if os.Getenv("GOPIR_LONG") != "" {
		step = 1
	}
	// Each worker takes every workers-th chunk.
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := siluVecBitsChunks(uint64(w), uint64(workers), step); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
}

// siluVecBitsChunks is TestSiluVecBitsEveryFloat32's work on the chunks
// first, first + stride, ... of the bit patterns 0, step, 2·step, ...;
// it returns the first difference.
func siluVecBitsChunks(first, stride, step uint64) error {
	const chunk = 1 << 14
	x, dy, vec, ref := make([]float32, chunk), make([]float32, chunk), make([]float32, chunk), make([]float32, chunk)
	buf := make([]float64, chunk)
	for i := range dy {
		dy[i] = 1
	}
	check := func(what string, in, vec, ref []float32) error {
		for i := range in {
			if math.Float32bits(vec[i]) != math.Float32bits(ref[i]) && !(vec[i] != vec[i] && ref[i] != ref[i]) {
				return fmt.Errorf("%s(%g = %#08x): vector %g, Go %g", what, in[i], math.Float32bits(in[i]), vec[i], ref[i])
			}
		}
		return nil
	}
	for start := first * step * chunk; start < 1<<32; start += stride * step * chunk {
		n := 0
		for ; n < chunk && start+uint64(n)*step < 1<<32; n++ {
			x[n] = math.Float32frombits(uint32(start + uint64(n)*step))
		}
		xs := x[:n]
		ewSiluGo32(ref[:n], xs, buf)
		k := siluF32Vec(vec[:n], xs)
		if err := check("silu", xs[:k], vec[:k], ref[:k]); err != nil {
			return err
		}

		copy(vec, xs)
		k = siluBiasF32Vec(vec[:n], 0)
		for i := range xs[:k] {
			ref[i] = xs[i] + 0
		}
		ewSiluGo32(ref[:k], ref[:k], buf)
		if err := check("silu with bias 0", xs[:k], vec[:k], ref[:k]); err != nil {
			return err
		}

		ewgSiluGo32(ref[:n], xs, dy[:n], buf)
		k = siluGradF32Vec(vec[:n], xs, dy[:n])
		if err := check("silu'", xs[:k], vec[:k], ref[:k]); err != nil {
			return err
		}

		if xs[0] >= 0 && xs[n-1] >= 0 { // d >= 0, no NaN: softmaxExp32's domain
			k = softmaxExpF32Vec(vec[:n], xs)
			for i, d := range xs[:k] {
				ref[i] = softmaxExp32(d)
			}
			if err := check("softmax's e^-d", xs[:k], vec[:k], ref[:k]); err != nil {
				return err
			}
		}
	}
	return nil
}
