package exec_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/gopir/gopir/exec"
)

// counted wraps a loop body in the counter boilerplate: i from 0 while
// i < n, with the extra carried values given.
func counted(carriedTypes, init, body, yields string) string {
	return fmt.Sprintf(`{
  (%%n) = "data" () {name:"n", shape:[], dtype:i64} : () -> tensor<i64>
  (%%x) = "data" () {name:"x", shape:[256], dtype:f32} : () -> tensor<256xf32>
  (%%i0) = "full" () {shape:[], value:0, dtype:i64} : () -> tensor<i64>
  (%%one) = "full" () {shape:[], value:1, dtype:i64} : () -> tensor<i64>
  (%%c0) = "less_than" (%%i0, %%n) : (tensor<i64>, tensor<i64>) -> tensor<i1>
  %s
  (%%iN, %%a, %%b) = "while" (%%c0, %%i0, %s) : (tensor<i1>, tensor<i64>, %s) -> (tensor<i64>, %s) {
  ^(%%i: tensor<i64>, %%p: tensor<256xf32>, %%q: tensor<256xf32>):
    %s
    (%%i1) = "add" (%%i, %%one) : (tensor<i64>, tensor<i64>) -> tensor<i64>
    (%%c1) = "less_than" (%%i1, %%n) : (tensor<i64>, tensor<i64>) -> tensor<i1>
    () = "yield" (%%c1, %%i1, %s) : (tensor<i1>, tensor<i64>, %s) -> ()
  }
  (%%sa) = "reduce_sum" (%%a) {axes:[], keepdim:false} : (tensor<256xf32>) -> tensor<f32>
  (%%sb) = "reduce_sum" (%%b) {axes:[], keepdim:false} : (tensor<256xf32>) -> tensor<f32>
  () = "fetch" (%%sa) {name:"a"} : (tensor<f32>) -> ()
  () = "fetch" (%%sb) {name:"b"} : (tensor<f32>) -> ()
}`, init, "%p0, %q0", carriedTypes, carriedTypes, body, yields, carriedTypes)
}

const two = "tensor<256xf32>, tensor<256xf32>"

// initPQ makes p0 = relu(x) and q0 = neg(x).
const initPQ = `(%p0) = "relu" (%x) : (tensor<256xf32>) -> tensor<256xf32>
  (%q0) = "neg" (%x) : (tensor<256xf32>) -> tensor<256xf32>`

func TestWhileLoops(t *testing.T) {
	xs := make([]float32, 256)
	for i := range xs {
		xs[i] = float32(i%3) - 1
	}
	sum := func(f func(x float64) float64) float64 {
		s := 0.0
		for _, x := range xs {
			s += f(float64(x))
		}
		return s
	}
	relu := func(x float64) float64 { return math.Max(x, 0) }
	neg := func(x float64) float64 { return -x }
	cases := []struct {
		name string
		src  string
		// want returns the expected fetches a and b after n iterations.
		want func(n int) (float64, float64)
	}{
		{
			// Fresh buffers every iteration from carried and captured values.
			name: "fresh-buffers",
			src: counted(two, initPQ, `(%t) = "add" (%p, %x) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    (%u) = "multiply" (%q, %x) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    (%v) = "subtract" (%t, %x) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>`, "%v, %u"),
			want: func(n int) (float64, float64) {
				if n == 0 {
					return sum(relu), sum(neg)
				}
				return sum(relu), sum(func(x float64) float64 { return -x * math.Pow(x, float64(n)) })
			},
		},
		{
			name: "yields-argument-unchanged",
			src: counted(two, initPQ, `(%t) = "add" (%q, %x) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>`,
				"%p, %t"),
			want: func(n int) (float64, float64) {
				return sum(relu), sum(func(x float64) float64 { return -x + float64(n)*x })
			},
		},
		{
			name: "carried-values-swap",
			src:  counted(two, initPQ, ``, "%q, %p"),
			want: func(n int) (float64, float64) {
				if n%2 == 1 {
					return sum(neg), sum(relu)
				}
				return sum(relu), sum(neg)
			},
		},
		{
			name: "same-value-carried-twice",
			src:  counted(two, initPQ, `(%t) = "maximum" (%p, %q) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>`, "%t, %t"),
			want: func(n int) (float64, float64) {
				if n == 0 {
					return sum(relu), sum(neg)
				}
				v := sum(func(x float64) float64 { return math.Max(relu(x), -x) })
				return v, v
			},
		},
		{
			name: "while-inside-if-inside-while",
			src: counted(two, initPQ, `(%s) = "reduce_sum" (%p) {axes:[], keepdim:false} : (tensor<256xf32>) -> tensor<f32>
    (%z) = "full" () {shape:[], value:0.0, dtype:f32} : () -> tensor<f32>
    (%pos) = "greater_than" (%s, %z) : (tensor<f32>, tensor<f32>) -> tensor<i1>
    (%r) = "if" (%pos) : (tensor<i1>) -> tensor<256xf32> {
      (%j0) = "full" () {shape:[], value:0, dtype:i64} : () -> tensor<i64>
      (%k0) = "less_than" (%j0, %one) : (tensor<i64>, tensor<i64>) -> tensor<i1>
      (%jN, %w) = "while" (%k0, %j0, %q) : (tensor<i1>, tensor<i64>, tensor<256xf32>) -> (tensor<i64>, tensor<256xf32>) {
      ^(%j: tensor<i64>, %acc: tensor<256xf32>):
        (%acc1) = "add" (%acc, %x) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
        (%j1) = "add" (%j, %one) : (tensor<i64>, tensor<i64>) -> tensor<i64>
        (%k1) = "less_than" (%j1, %one) : (tensor<i64>, tensor<i64>) -> tensor<i1>
        () = "yield" (%k1, %j1, %acc1) : (tensor<i1>, tensor<i64>, tensor<256xf32>) -> ()
      }
      () = "yield" (%w) : (tensor<256xf32>) -> ()
    } else {
      () = "yield" (%q) : (tensor<256xf32>) -> ()
    }`, "%p, %r"),
			want: func(n int) (float64, float64) {
				return sum(relu), sum(func(x float64) float64 { return -x + float64(n)*x })
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newAlloc()
			x := compile(t, tc.src, exec.Options{Alloc: a, CheckLeaks: true})
			peaks := map[int]int64{}
			for _, n := range []int{0, 1, 2, 7, 1000} {
				in := feeds{"n": i64(t, int64(n)), "x": f32(t, xs, 256)}
				for run := range 3 {
					a.ResetPeak()
					res := mustRun(t, x, in)
					wa, wb := tc.want(n)
					if ga, gb := scalarOf(t, res, "a"), scalarOf(t, res, "b"); !near(ga, wa) || !near(gb, wb) {
						t.Fatalf("n=%d: a, b = %v, %v; want %v, %v", n, ga, gb, wa, wb)
					}
					res.Release()
					if got := allocated(a); got != 0 {
						t.Fatalf("n=%d run %d: %d bytes allocated after the run, want 0; live: %+v", n, run, got, a.Live())
					}
					peaks[n] = a.Stats().Allocated.Peak
				}
				releaseFeeds(in)
			}
			if peaks[1000] != peaks[2] || peaks[7] != peaks[2] {
				t.Errorf("peak grows with the trip count: %v", peaks)
			}
		})
	}
}

func near(got, want float64) bool {
	return math.Abs(got-want) <= 1e-3*(1+math.Abs(want)) || math.IsInf(want, 0) && got == want
}
