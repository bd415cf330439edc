package ops_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

func TestNNDropout(t *testing.T) {
	nnDebug(t)
	r := rand.New(rand.NewPCG(15, 16))
	for _, dt := range nnDTypes {
		for _, shape := range [][]int{{100, 100}, {7, 13}, {0, 5}, {1}, {}} {
			for _, p := range []float64{0, 0.3, 0.5, 1} {
				t.Run(fmt.Sprintf("%s/%v/p=%g", dt, shape, p), func(t *testing.T) {
					a := memory.New(memory.Options{})
					x := randTensor(t, a, r, dt, shape...)
					attrs := ir.A("p", p)
					outs := mustRun(t, a, "dropout", attrs, x)
					out, mask := outs[0], outs[1]
					closeEnough(t, "out", out, nnVals(out), shape, 0) // shape check
					closeEnough(t, "mask", mask, nnVals(mask), shape, 0)
					scale := 0.0
					if p < 1 {
						scale = float64(nnCast(dt, 1/(1-p)))
					}
					zeros := 0
					for i := range x.Len() {
						m := mask.Float64At(i)
						if m != 0 && m != scale {
							t.Fatalf("mask[%d] = %v, want 0 or %v", i, m, scale)
						}
						if m == 0 {
							zeros++
						}
						if got, want := out.Float64At(i), nnCast(dt, x.Float64At(i)*m); got != want {
							t.Fatalf("out[%d] = %v, want x·mask = %v", i, got, want)
						}
					}
					if n := x.Len(); n >= 1000 {
						if frac := float64(zeros) / float64(n); math.Abs(frac-p) > 0.02 {
							t.Fatalf("dropped %.3f of %d elements, want about %g", frac, n, p)
						}
					}
					for _, th := range []int{1, 3} {
						o := nnRunThreads(t, a, th, "dropout", attrs, x)
						nnSameBits(t, fmt.Sprintf("mask with %d threads", th), o[1], mask)
						release(o...)
					}
					release(outs...)
					release(x)
					wantAllocated(t, a, 0)
				})
			}
		}
	}
}

// nnCast rounds v to dt's precision.
func nnCast(dt tensor.DType, v float64) float64 {
	if dt == tensor.F32 {
		return float64(float32(v))
	}
	return v
}

func TestNNDropoutEval(t *testing.T) {
	a := memory.New(memory.Options{})
	x := randTensor(t, a, rand.New(rand.NewPCG(1, 1)), tensor.F32, 3, 4)
	outs := mustRun(t, a, "dropout", ir.A("p", 0.5, "training", false), x)
	if outs[0].Storage() != x.Storage() || x.Refs() != 2 {
		t.Fatalf("eval dropout does not share x (refs %d)", x.Refs())
	}
	closeEnough(t, "mask", outs[1], []float64{1}, []int{}, 0)
	release(outs...)
	release(x)
	wantAllocated(t, a, 0)
	got := nnInferOK(t, "dropout", ir.A("training", false), nnT(ir.F64, -1, 3))
	if got[0].String() != "tensor<?x3xf64>" || got[1].String() != "tensor<f64>" {
		t.Fatalf("types %v", got)
	}
	got = nnInferOK(t, "dropout", nil, nnT(ir.F32, -1, 3))
	if got[0].String() != "tensor<?x3xf32>" || got[1].String() != "tensor<?x3xf32>" {
		t.Fatalf("types %v", got)
	}
}

// nnDropoutMasks builds a program with two dropouts (one inside an if) and
// returns their kernels.
func nnDropoutKernels(t *testing.T, attrs ir.Attrs) []ops.Kernel {
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F32, 64)
	c := ops.Data(b, "c", ir.I1)
	op1 := b.Op("dropout", attrs, x)
	var op2 *ir.Op
	b.If(c, func(b *ir.Builder) []*ir.Value {
		op2 = b.Op("dropout", attrs, x)
		return []*ir.Value{op2.Result(0)}
	}, func(b *ir.Builder) []*ir.Value { return []*ir.Value{x} })
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	var ks []ops.Kernel
	for _, op := range []*ir.Op{op1, op2} {
		k, err := ops.Bind(op)
		if err != nil {
			t.Fatal(err)
		}
		ks = append(ks, k)
	}
	return ks
}

func TestNNDropoutStreams(t *testing.T) {
	a := memory.New(memory.Options{})
	x := nnFrom(t, a, tensor.F32, make([]float64, 64), 64)
	fill := x.F32()
	for i := range fill {
		fill[i] = 1
	}
	mask := func(k ops.Kernel, seed, run int64) string {
		outs, err := k(&ops.Ctx{Alloc: a, Threads: 2, Seed: seed, Run: run}, []*tensor.Tensor{x})
		if err != nil {
			t.Fatal(err)
		}
		s := fmt.Sprint(nnVals(outs[1]))
		release(outs...)
		return s
	}
	// seed 0: stream from (Seed, Run, position, call count)
	k := nnDropoutKernels(t, ir.A("p", 0.5))
	k2 := nnDropoutKernels(t, ir.A("p", 0.5))
	first := mask(k[0], 7, 0)
	if again := mask(k[0], 7, 0); again == first {
		t.Fatal("a second call in the same run drew the same mask")
	}
	if fresh := mask(k2[0], 7, 0); fresh != first {
		t.Fatal("the same op, seed and run in a fresh binding drew another mask")
	}
	if mask(k[0], 7, 1) == first || mask(k2[0], 8, 0) == first {
		t.Fatal("another run or seed drew the same mask")
	}
	if mask(k[1], 7, 0) == first {
		t.Fatal("another op position drew the same mask")
	}
	// a nonzero seed attribute alone decides
	s := nnDropoutKernels(t, ir.A("p", 0.5, "seed", 42))
	fixed := mask(s[0], 7, 0)
	for _, m := range []string{mask(s[0], 7, 0), mask(s[0], 8, 3), mask(s[1], 1, 1)} {
		if m != fixed {
			t.Fatal("seeded dropout drew another mask")
		}
	}
	if mask(nnDropoutKernels(t, ir.A("p", 0.5, "seed", 43))[0], 7, 0) == fixed {
		t.Fatal("seeds 42 and 43 drew the same mask")
	}
	release(x)
	wantAllocated(t, a, 0)
}

func TestNNDropoutInferErrors(t *testing.T) {
	x := nnT(ir.F32, 2, 3)
	nnInferErr(t, "dropout", ir.A("p", 1.5), []string{"p:1.5", "[0, 1]"}, x)
	nnInferErr(t, "dropout", ir.A("p", -0.1), []string{"p:-0.1"}, x)
	nnInferErr(t, "dropout", ir.A("p", math.NaN()), []string{"p:NaN"}, x)
	nnInferErr(t, "dropout", nil, []string{"tensor<2x3xi64>", "f32 or f64"}, nnT(ir.I64, 2, 3))
	nnInferErr(t, "dropout", ir.A("seed", 1.5), []string{"seed"}, x)
	b := ir.NewBuilder(ir.NewProgram())
	out, mask := ops.Dropout(b, ops.Data(b, "x", ir.F32, 4), 0.1, true, 0)
	if err := b.Err(); err != nil || out.Type().String() != "tensor<4xf32>" || mask.Type().String() != "tensor<4xf32>" {
		t.Fatalf("builder: %v", err)
	}
}

func TestNNDropoutOOMSweep(t *testing.T) {
	a := memory.New(memory.Options{})
	x := randTensor(t, a, rand.New(rand.NewPCG(3, 4)), tensor.F32, 5, 7)
	checkOOMSweep(t, "dropout", nil, x)
	checkOOMSweep(t, "dropout", ir.A("training", false), x)
	release(x)
}
