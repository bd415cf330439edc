package kernels

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// redRef reduces x (shape) over mask with a float64 accumulation, in the
// output order of Reduce.
func redRef(op ReduceOp, x []float64, shape []int, mask []bool) []float64 {
	var keptShape []int
	for d, n := range shape {
		if !mask[d] {
			keptShape = append(keptShape, n)
		}
	}
	nOut := ewNumel(keptShape)
	out := make([]float64, nOut)
	cnt := make([]int, nOut)
	for i := range out {
		switch op {
		case ReduceMax:
			out[i] = math.Inf(-1)
		case ReduceMin:
			out[i] = math.Inf(1)
		case ReduceProd:
			out[i] = 1
		}
	}
	for i, v := range x {
		// Output index of element i.
		o, rem := 0, i
		stride := 1
		for d := len(shape) - 1; d >= 0; d-- {
			c := rem % shape[d]
			rem /= shape[d]
			if !mask[d] {
				o += c * stride
				stride *= shape[d]
			}
		}
		cnt[o]++
		switch op {
		case ReduceSum, ReduceMean:
			out[o] += v
		case ReduceMax:
			out[o] = math.Max(out[o], v)
		case ReduceMin:
			out[o] = math.Min(out[o], v)
		case ReduceProd:
			out[o] *= v
		}
	}
	if op == ReduceMean {
		for i := range out {
			out[i] /= float64(cnt[i])
		}
	}
	return out
}

var redShapes = [][]int{
	{}, {1}, {7}, {3, 5}, {1, 4}, {4, 1}, {2, 3, 4}, {5, 1, 3, 2}, {3, 0, 2}, {0}, {2, 7, 1, 11},
	{13, 300}, {300, 13}, {3, 1000, 7}, {70001}, {2, 40000}, {40000, 2}, {600, 3, 50},
}

func redCheck[T Numeric](t *testing.T, op ReduceOp, tol float64) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, shape := range redShapes {
		xf := ewRandF64(r, ewNumel(shape))
		if op == ReduceProd {
			// Factors that keep long products finite: ±1 for integers
			// (exact), magnitudes in [0.5, 1.5) for floats.
			for i, v := range xf {
				switch {
				case ewIsInt[T]():
					xf[i] = math.Copysign(1, v)
				case i%5 == 0:
					xf[i] = -0.5 - v/8 - 0.5
				default:
					xf[i] = 1 + v/8
				}
			}
		}
		x := ewConv[T](xf)
		for i := range xf {
			xf[i] = float64(x[i])
		}
		// Every subset of axes.
		for m := 0; m < 1<<len(shape); m++ {
			mask := make([]bool, len(shape))
			var axes []int
			for d := range shape {
				if m>>d&1 == 1 {
					mask[d] = true
					axes = append(axes, d)
				}
			}
			want := redRef(op, xf, shape, mask)
			empty := false
			for d, n := range shape {
				if mask[d] && n == 0 {
					empty = true
				}
			}
			var first []T
			for _, threads := range []int{1, 2, 5} {
				out := make([]T, len(want))
				err := Reduce(op, threads, out, x, shape, axes)
				if empty && len(out) > 0 && (op == ReduceMax || op == ReduceMin) {
					if !errors.Is(err, ErrEmptyReduce) {
						t.Fatalf("%v over %v: err %v, want ErrEmptyReduce", shape, axes, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%v over %v: %v", shape, axes, err)
				}
				for i, w := range want {
					g := float64(out[i])
					w = float64(T(w))
					if math.IsNaN(g) != math.IsNaN(w) || math.Abs(g-w) > tol*(1+math.Abs(w)) {
						t.Fatalf("op %d %T %v over %v threads %d: out[%d] = %v, want %v", op, x, shape, axes, threads, i, g, w)
					}
				}
				if first == nil {
					first = out
				} else {
					for i := range out {
						if out[i] != first[i] && !(out[i] != out[i] && first[i] != first[i]) {
							t.Fatalf("%v over %v: result depends on thread count", shape, axes)
						}
					}
				}
			}
		}
	}
}

func TestRedReduce(t *testing.T) {
	for _, op := range []ReduceOp{ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd} {
		redCheck[float32](t, op, 1e-6)
		redCheck[float64](t, op, 1e-11)
		if op != ReduceMean {
			redCheck[int32](t, op, 0)
			redCheck[int64](t, op, 0)
		}
	}
	if err := Reduce(ReduceMean, 1, []int32{0}, []int32{1, 2}, []int{2}, nil); err == nil {
		t.Fatal("mean on int32 succeeded")
	}
	if err := Reduce(ReduceSum, 1, []float32{0}, []float32{1, 2}, []int{2}, []int{0, 0}); err == nil {
		t.Fatal("duplicate axes accepted")
	}
}

// TestRedProdEdges checks products that wrap (integers), hold zeros, NaN
// and infinities, and that overflow float32 only on the way.
func TestRedProdEdges(t *testing.T) {
	i32 := make([]int32, 1)
	if err := Reduce(ReduceProd, 1, i32, []int32{1 << 16, 1 << 16, 3}, []int{3}, []int{0}); err != nil || i32[0] != 0 {
		t.Fatalf("int32 product 2^16·2^16·3 = %v, %v; want 0 (wrapped)", i32, err)
	}
	// -2^30·3 = -3·2^30 ≡ 2^30 (mod 2^32).
	if err := Reduce(ReduceProd, 1, i32, []int32{-(1 << 30), 3}, []int{2}, []int{0}); err != nil || i32[0] != 1<<30 {
		t.Fatalf("int32 product -2^30·3 = %v, %v; want 2^30 (wrapped)", i32, err)
	}
	// (2^40+1)(2^30+1) = 2^70 + 2^40 + 2^30 + 1 ≡ 2^40 + 2^30 + 1 (mod 2^64).
	i64 := make([]int64, 2)
	if err := Reduce(ReduceProd, 1, i64, []int64{1<<40 + 1, 5, 1<<30 + 1, 7}, []int{2, 2}, []int{0}); err != nil || i64[0] != 1<<40+1<<30+1 || i64[1] != 35 {
		t.Fatalf("int64 products = %v, %v", i64, err)
	}
	f := make([]float32, 4)
	x := []float32{1e30, 1e30, 1e-30, 1e-30, 2, 0, float32(math.Inf(1)), 1, 2, 0, float32(math.Inf(-1)), 3}
	if err := Reduce(ReduceProd, 2, f, x, []int{4, 3}, []int{1}); err != nil {
		t.Fatal(err)
	}
	// 1e30·1e30·1e-30 leaves float32's range and comes back (float64
	// accumulation); 0·Inf is NaN.
	if math.Abs(float64(f[0])-1e30) > 1e24 || f[1] != 0 || f[2] != float32(math.Inf(1)) || !math.IsNaN(float64(f[3])) {
		t.Fatalf("float32 products = %v", f)
	}
}

// TestRedSumAccuracy sums many f32 values whose float32 running sum would
// stall.
func TestRedSumAccuracy(t *testing.T) {
	n := 1 << 24
	x := make([]float32, n+1)
	x[0] = 1 << 24
	for i := 1; i <= n; i++ {
		x[i] = 1
	}
	out := []float32{0}
	if err := Reduce(ReduceSum, 2, out, x, []int{n + 1}, []int{0}); err != nil {
		t.Fatal(err)
	}
	if out[0] != 1<<25 {
		t.Fatalf("sum = %v, want %v", out[0], float32(1<<25))
	}
}

func TestRedNaN(t *testing.T) {
	nan := math.NaN()
	x := []float64{1, nan, 3, 5, 2, nan}
	out := make([]float64, 2)
	if err := Reduce(ReduceMax, 1, out, x, []int{2, 3}, []int{1}); err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(out[0]) || !math.IsNaN(out[1]) {
		t.Fatalf("max with NaN = %v", out)
	}
	if err := Reduce(ReduceMin, 1, out, x, []int{3, 2}, []int{0}); err != nil {
		t.Fatal(err)
	}
	if out[0] != 1 || !math.IsNaN(out[1]) {
		t.Fatalf("min with NaN over rows = %v, want [1 NaN]", out)
	}
	idx := make([]int64, 2)
	if err := Argmax(1, idx, []float64{1, nan, 3, nan, 7, 9}, []int{2, 3}, 1); err != nil || idx[0] != 1 || idx[1] != 0 {
		t.Fatalf("argmax with NaN = %v, %v", idx, err)
	}
}

func TestRedArgmax(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, shape := range redShapes {
		x := ewConv[int32](ewRandF64(r, ewNumel(shape))) // many ties
		for axis := range shape {
			A, R, B := ewNumel(shape[:axis]), shape[axis], ewNumel(shape[axis+1:])
			for _, threads := range []int{1, 3} {
				out := make([]int64, A*B)
				err := Argmax(threads, out, x, shape, axis)
				if R == 0 && A*B > 0 {
					if !errors.Is(err, ErrEmptyReduce) {
						t.Fatalf("%v axis %d: %v", shape, axis, err)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				for a := range A {
					for b := range B {
						best := 0
						for k := 1; k < R; k++ {
							if x[(a*R+k)*B+b] > x[(a*R+best)*B+b] {
								best = k
							}
						}
						if out[a*B+b] != int64(best) {
							t.Fatalf("argmax %v axis %d threads %d: out[%d] = %d, want %d", shape, axis, threads, a*B+b, out[a*B+b], best)
						}
					}
				}
			}
		}
	}
}

// TestRedManyGroups reduces tensors whose reduced and kept dims alternate
// more often than a reduction's stack buffers hold (redRank groups), and
// one of rank above 64: the same results as the reference, on one
// goroutine and two. Small reductions allocate nothing.
func TestRedManyGroups(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, rank := range []int{9, 12, 70} {
		shape := make([]int, rank)
		var axes []int
		mask := make([]bool, rank)
		n := 1
		for d := range shape {
			shape[d] = 1
			if d < 14 {
				shape[d] = 2 // past 14 dims, size-1 dims keep the tensor small
			}
			if d%2 == 0 {
				axes, mask[d] = append(axes, d), true
			}
			n *= shape[d]
		}
		x := make([]float64, n)
		for i := range x {
			x[i] = rng.Float64()
		}
		for _, op := range []ReduceOp{ReduceSum, ReduceMax} {
			want := redRef(op, x, shape, mask)
			for _, threads := range []int{1, 2} {
				out := make([]float64, len(want))
				if err := Reduce(op, threads, out, x, shape, axes); err != nil {
					t.Fatal(err)
				}
				for i := range out {
					if math.Abs(out[i]-want[i]) > 1e-12 {
						t.Fatalf("rank %d op %d threads %d: out[%d] = %v, want %v", rank, op, threads, i, out[i], want[i])
					}
				}
			}
		}
	}
	x, out := make([]float32, 6*7*8), make([]float32, 6*7*8)
	shape := []int{6, 7, 8}
	for _, axes := range [][]int{{0, 2}, {0}, {2}, {0, 1, 2}, {1}} {
		kept := 1
		for d, n := range shape {
			if !slices.Contains(axes, d) {
				kept *= n
			}
		}
		if n := testing.AllocsPerRun(50, func() { _ = Reduce(ReduceMean, 1, out[:kept], x, shape, axes) }); n != 0 {
			t.Errorf("axes %v: %v allocations per reduction, want 0", axes, n)
		}
	}
}
