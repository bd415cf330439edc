package ops_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// f32ULPs is the distance in float32 steps between a and b (0 for two
// NaNs).
func f32ULPs(a, b float32) int64 {
	if a != a || b != b {
		if a != a && b != b {
			return 0
		}
		return math.MaxInt64
	}
	ord := func(f float32) int64 {
		u := int64(math.Float32bits(f))
		if u&(1<<31) != 0 {
			return -(u &^ (1 << 31))
		}
		return u
	}
	d := ord(a) - ord(b)
	return max(d, -d)
}

// TestSigmoidF32Op: sigmoid_f32 is within 2 float32 ulps of sigmoid on
// ordinary values, the extremes, ±Inf and NaN, in place (x dies at the
// op) or not, and leaves nothing allocated.
func TestSigmoidF32Op(t *testing.T) {
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(51, 52))
	for _, shape := range [][]int{{1}, {5}, {3, 17}, {2, 2100, 6}} {
		x := randTensor(t, a, r, tensor.F32, shape...)
		for i := range x.F32() {
			x.F32()[i] *= 40
		}
		if x.Len() > 8 {
			copy(x.F32(), []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), -90, -104, 88, 0, float32(math.Copysign(0, -1))})
		}
		got := mustRun(t, a, "sigmoid_f32", nil, x)
		want := mustRun(t, a, "sigmoid", nil, x)
		for i, v := range got[0].F32() {
			if d := f32ULPs(v, want[0].F32()[i]); d > 2 {
				t.Fatalf("%v: sigmoid_f32(%g) = %g, sigmoid %g: %d ulps", shape, x.F32()[i], v, want[0].F32()[i], d)
			}
		}
		release(got...)
		release(want...)
		release(x)
	}
	wantAllocated(t, a, 0)
}

func TestSigmoidF32Infer(t *testing.T) {
	got := nnInferOK(t, "sigmoid_f32", nil, nnT(ir.F32, -1, 10))
	if got[0].String() != "tensor<?x10xf32>" {
		t.Fatalf("type %s", got[0])
	}
	nnInferErr(t, "sigmoid_f32", nil, []string{"tensor<3x4xf64>", "f32"}, nnT(ir.F64, 3, 4))
}

func TestSigmoidF32OOMSweep(t *testing.T) {
	a := memory.New(memory.Options{})
	x := randTensor(t, a, rand.New(rand.NewPCG(53, 54)), tensor.F32, 5, 17)
	checkOOMSweep(t, "sigmoid_f32", nil, x)
	release(x)
}

// The detector's score sigmoid run many times, on one and two threads:
// every run returns the allocator to the feed's bytes, the same bits each
// time, and a second run makes no Go heap allocation.
func TestSigmoidF32Repeats(t *testing.T) {
	for _, threads := range []int{1, 2} {
		a := memory.New(memory.Options{})
		b := ir.NewBuilder(ir.NewProgram())
		ops.Fetch(b, "y", ops.SigmoidF32(b, ops.Data(b, "x", ir.F32, -1, 2100, 6)))
		p, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		e, err := exec.Compile(p, exec.Options{Alloc: a, Threads: threads})
		if err != nil {
			t.Fatal(err)
		}
		x := randTensor(t, a, rand.New(rand.NewPCG(55, 56)), tensor.F32, 8, 2100, 6)
		base := a.Stats().Allocated.Current
		feeds := map[string]*tensor.Tensor{"x": x}
		out := exec.Results{}
		var first []float32
		for i := range 30 {
			if err := e.RunInto(context.Background(), feeds, out); err != nil {
				t.Fatal(err)
			}
			y := out["y"].F32()
			if first == nil {
				first = append([]float32(nil), y...)
			}
			for k := range y {
				if math.Float32bits(y[k]) != math.Float32bits(first[k]) {
					t.Fatalf("threads %d run %d: y[%d] = %g, first run %g", threads, i, k, y[k], first[k])
				}
			}
			out.Release()
			if got := a.Stats().Allocated.Current; got != base {
				t.Fatalf("threads %d run %d: %d bytes allocated, want the feed's %d", threads, i, got, base)
			}
		}
		if !raceEnabled {
			if n := testing.AllocsPerRun(10, func() {
				if err := e.RunInto(context.Background(), feeds, out); err != nil {
					t.Fatal(err)
				}
				out.Release()
			}); n != 0 {
				t.Errorf("threads %d: %v Go allocations a run, want 0", threads, n)
			}
		}
		release(x)
		wantAllocated(t, a, 0)
	}
}
