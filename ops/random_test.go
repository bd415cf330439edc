package ops_test

import (
	"math"
	"slices"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Tests of uniform_random and gaussian_random (random.go).

// rndProgram builds a program holding n random ops of the same kind and
// returns their kernels.
func rndProgram(t *testing.T, name string, attrs ir.Attrs, n int) []ops.Kernel {
	t.Helper()
	b := ir.NewBuilder(ir.NewProgram())
	var ks []ops.Kernel
	for range n {
		op := b.Op(name, attrs)
		if err := b.Err(); err != nil {
			t.Fatal(err)
		}
		k, err := ops.Bind(op)
		if err != nil {
			t.Fatal(err)
		}
		ks = append(ks, k)
	}
	return ks
}

// rndDraw runs k under ctx and returns the numbers as float64.
func rndDraw(t *testing.T, k ops.Kernel, c *ops.Ctx) []float64 {
	t.Helper()
	outs, err := k(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := shpVals(outs[0])
	release(outs...)
	return v
}

func rndMoments(v []float64) (mean, std float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	for _, x := range v {
		std += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(std / float64(len(v)))
}

func TestRndStreams(t *testing.T) {
	a := memory.New(memory.Options{})
	for _, name := range []string{"uniform_random", "gaussian_random"} {
		for _, dt := range []ir.DType{ir.F32, ir.F64} {
			attrs := ir.A("shape", []int{3, 7}, "dtype", dt)
			ctx := func(seed, run int64) *ops.Ctx { return &ops.Ctx{Alloc: a, Threads: 2, Seed: seed, Run: run} }
			// seed 0: the same program and Ctx give the same numbers...
			p1 := rndProgram(t, name, attrs, 2)
			p2 := rndProgram(t, name, attrs, 2)
			x := rndDraw(t, p1[0], ctx(5, 0))
			if y := rndDraw(t, p2[0], ctx(5, 0)); !slices.Equal(x, y) {
				t.Fatalf("%s %v: same Seed and Run differ", name, dt)
			}
			// ...a second execution in the same run (a loop) draws anew...
			if y := rndDraw(t, p2[0], ctx(5, 0)); slices.Equal(x, y) {
				t.Fatalf("%s %v: a second execution in one run repeats", name, dt)
			}
			// ...and another run, another Seed or another op differ.
			for _, y := range [][]float64{
				rndDraw(t, p1[0], ctx(5, 1)),
				rndDraw(t, rndProgram(t, name, attrs, 1)[0], ctx(6, 0)),
				rndDraw(t, p1[1], ctx(5, 0)),
			} {
				if slices.Equal(x, y) {
					t.Fatalf("%s %v: different streams repeat", name, dt)
				}
			}
			// A seed of its own: the same numbers in every run and op.
			seeded := ir.A("shape", []int{3, 7}, "dtype", dt, "seed", 42)
			q := rndProgram(t, name, seeded, 2)
			s := rndDraw(t, q[0], ctx(5, 0))
			for _, y := range [][]float64{
				rndDraw(t, q[0], ctx(5, 0)),
				rndDraw(t, q[0], ctx(9, 3)),
				rndDraw(t, q[1], ctx(5, 1)),
			} {
				if !slices.Equal(s, y) {
					t.Fatalf("%s %v: seed 42 differs", name, dt)
				}
			}
			if y := rndDraw(t, rndProgram(t, name, ir.A("shape", []int{3, 7}, "dtype", dt, "seed", 43), 1)[0], ctx(5, 0)); slices.Equal(s, y) {
				t.Fatalf("%s %v: seeds 42 and 43 agree", name, dt)
			}
		}
	}
	wantAllocated(t, a, 0)
}

// TestRndStreamPosition checks that the op key depends on where the op is:
// the same op text inside and outside a region gives different numbers.
func TestRndStreamPosition(t *testing.T) {
	a := memory.New(memory.Options{})
	b := ir.NewBuilder(ir.NewProgram())
	attrs := ir.A("shape", []int{4}, "dtype", ir.F64)
	top := b.Op("uniform_random", attrs)
	c := ops.Full(b, ir.I1, 1)
	var inner *ir.Op
	b.If(c, func(b *ir.Builder) []*ir.Value {
		inner = b.Op("uniform_random", attrs)
		return []*ir.Value{inner.Result(0)}
	}, func(b *ir.Builder) []*ir.Value {
		return []*ir.Value{b.Op("uniform_random", attrs).Result(0)}
	})
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	k1, _ := ops.Bind(top)
	k2, _ := ops.Bind(inner)
	ctx := &ops.Ctx{Alloc: a, Threads: 1, Seed: 3}
	if slices.Equal(rndDraw(t, k1, ctx), rndDraw(t, k2, ctx)) {
		t.Fatal("ops at different positions draw the same numbers")
	}
	wantAllocated(t, a, 0)
}

func TestRndDistribution(t *testing.T) {
	a := memory.New(memory.Options{})
	const n = 200_000
	tol := 6 / math.Sqrt(n) // six standard errors, relative to the spread
	for _, dt := range []ir.DType{ir.F32, ir.F64} {
		for _, c := range []struct{ lo, hi float64 }{{-1, 1}, {2, 7.5}, {-1e-3, 0}} {
			attrs := ir.A("shape", []int{n}, "dtype", dt, "min", c.lo, "max", c.hi)
			if c.lo == -1 && c.hi == 1 {
				attrs = ir.A("shape", []int{n}, "dtype", dt) // the defaults
			}
			v := rndDraw(t, rndProgram(t, "uniform_random", attrs, 1)[0], &ops.Ctx{Alloc: a, Threads: 2, Seed: 7})
			w := c.hi - c.lo
			mean, std := rndMoments(v)
			if math.Abs(mean-(c.lo+c.hi)/2) > tol*w || math.Abs(std-w/math.Sqrt(12)) > tol*w {
				t.Fatalf("uniform %v [%v,%v): mean %v std %v", dt, c.lo, c.hi, mean, std)
			}
			// Ten equal bins hold a tenth each.
			var bins [10]int
			for _, x := range v {
				if x < c.lo || x >= c.hi {
					t.Fatalf("uniform %v [%v,%v): %v out of range", dt, c.lo, c.hi, x)
				}
				bins[min(int((x-c.lo)/w*10), 9)]++
			}
			for i, b := range bins {
				if math.Abs(float64(b)/n-0.1) > 0.005 {
					t.Fatalf("uniform %v: bin %d holds %d of %d", dt, i, b, n)
				}
			}
		}
		for _, c := range []struct{ mean, std float64 }{{0, 1}, {3, 0.25}, {-100, 10}} {
			attrs := ir.A("shape", []int{n}, "dtype", dt, "mean", c.mean, "std", c.std)
			if c.mean == 0 && c.std == 1 {
				attrs = ir.A("shape", []int{n}, "dtype", dt)
			}
			v := rndDraw(t, rndProgram(t, "gaussian_random", attrs, 1)[0], &ops.Ctx{Alloc: a, Threads: 2, Seed: 8})
			mean, std := rndMoments(v)
			if math.Abs(mean-c.mean) > tol*c.std || math.Abs(std-c.std) > tol*c.std {
				t.Fatalf("gaussian %v (%v, %v): mean %v std %v", dt, c.mean, c.std, mean, std)
			}
			// 68.27% within one std, 95.45% within two.
			var in1, in2 int
			for _, x := range v {
				z := math.Abs(x-c.mean) / c.std
				if z < 1 {
					in1++
				}
				if z < 2 {
					in2++
				}
			}
			if math.Abs(float64(in1)/n-0.6827) > 0.005 || math.Abs(float64(in2)/n-0.9545) > 0.003 {
				t.Fatalf("gaussian %v: %d and %d of %d within 1 and 2 std", dt, in1, in2, n)
			}
		}
	}
	// Degenerate ranges.
	v := rndDraw(t, rndProgram(t, "uniform_random", ir.A("shape", []int{100}, "min", 2.5, "max", 2.5), 1)[0], &ops.Ctx{Alloc: a, Threads: 2})
	for _, x := range v {
		if x != 2.5 {
			t.Fatalf("uniform [2.5, 2.5]: %v", x)
		}
	}
	v = rndDraw(t, rndProgram(t, "uniform_random", ir.A("shape", []int{1000}, "min", 1.0, "max", 1.0000001), 1)[0], &ops.Ctx{Alloc: a, Threads: 2})
	for _, x := range v {
		if x < 1 || float32(x) >= float32(1.0000001) {
			t.Fatalf("uniform f32 [1, 1.0000001): %v", x)
		}
	}
	v = rndDraw(t, rndProgram(t, "gaussian_random", ir.A("shape", []int{10}, "mean", 4.0, "std", 0.0), 1)[0], &ops.Ctx{Alloc: a, Threads: 2})
	for _, x := range v {
		if x != 4 {
			t.Fatalf("gaussian std 0: %v", x)
		}
	}
	wantAllocated(t, a, 0)
}

func TestRndThreads(t *testing.T) {
	a := memory.New(memory.Options{})
	for _, name := range []string{"uniform_random", "gaussian_random"} {
		for _, seed := range []int64{0, 11} {
			attrs := ir.A("shape", []int{3, 33333}, "dtype", ir.F32, "seed", seed)
			var first []float64
			for threads := 1; threads <= 6; threads++ {
				k := rndProgram(t, name, attrs, 1)[0]
				v := rndDraw(t, k, &ops.Ctx{Alloc: a, Threads: threads, Seed: 1, Run: 2})
				if first == nil {
					first = v
				} else if !slices.Equal(first, v) {
					t.Fatalf("%s seed %d: threads %d differ from 1", name, seed, threads)
				}
			}
		}
	}
	wantAllocated(t, a, 0)
}

func TestRndErrorsAndMemory(t *testing.T) {
	for _, c := range []struct {
		name  string
		attrs ir.Attrs
		want  string
	}{
		{"uniform_random", ir.A("shape", []int{2}, "dtype", ir.I32), "i32"},
		{"uniform_random", ir.A("shape", []int{2}, "min", 1.0, "max", 0.0), "min 1"},
		{"uniform_random", ir.A("shape", []int{-1, 2}), "[-1 2]"},
		{"uniform_random", ir.A("dtype", ir.F32), "shape"},
		{"gaussian_random", ir.A("shape", []int{2}, "std", -1.0), "std -1"},
		{"gaussian_random", ir.A("shape", []int{2}, "mean", math.NaN()), "NaN"},
		{"gaussian_random", ir.A("shape", []int{2}, "seed", 1.5), "seed"},
	} {
		shpWantErr(t, c.name, c.attrs, nil, c.want)
	}
	if n := shpOOMSweep(t, "uniform_random", ir.A("shape", []int{7, 11}, "dtype", ir.F64)); n < 9 {
		t.Fatalf("uniform_random failed under %d limits", n)
	}
	if n := shpOOMSweep(t, "gaussian_random", ir.A("shape", []int{7, 11})); n < 4 {
		t.Fatalf("gaussian_random failed under %d limits", n)
	}
	b := ir.NewBuilder(ir.NewProgram())
	u := ops.UniformRandom(b, ir.F64, 0, 2, 0, 5, 0)
	g := ops.GaussianRandom(b, ir.F32, 0, 1, 7)
	if !u.Type().Equal(shpT(ir.F64, 5, 0)) || !g.Type().Equal(shpT(ir.F32)) || b.Err() != nil {
		t.Fatalf("helpers: %v %v %v", u.Type(), g.Type(), b.Err())
	}
	a := memory.New(memory.Options{})
	k := rndProgram(t, "gaussian_random", ir.A("shape", []int{0, 3}), 1)[0]
	outs, err := k(&ops.Ctx{Alloc: a, Threads: 2}, nil)
	if err != nil || outs[0].Len() != 0 || outs[0].DType() != tensor.F32 {
		t.Fatalf("empty gaussian: %v %v", outs, err)
	}
	release(outs...)
	wantAllocated(t, a, 0)
}
