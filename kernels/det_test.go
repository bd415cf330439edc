package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// detCofactor is the determinant by cofactor expansion along the first
// row: slow, and independent of the LU kernel.
func detCofactor(a []float64, n int) float64 {
	if n == 0 {
		return 1
	}
	if n == 1 {
		return a[0]
	}
	det, sign := 0.0, 1.0
	minor := make([]float64, (n-1)*(n-1))
	for c := range n {
		k := 0
		for r := 1; r < n; r++ {
			for j := range n {
				if j != c {
					minor[k] = a[r*n+j]
					k++
				}
			}
		}
		det += sign * a[c] * detCofactor(minor, n-1)
		sign = -sign
	}
	return det
}

func TestDet(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, n := range []int{0, 1, 2, 3, 4, 5, 6} {
		for _, batch := range []int{0, 1, 7, 300} {
			x := ewRandF64(r, batch*n*n)
			want := make([]float64, batch)
			for k := range want {
				want[k] = detCofactor(x[k*n*n:(k+1)*n*n], n)
			}
			for _, threads := range []int{1, 3} {
				out := make([]float64, batch)
				if err := Det(threads, out, x, n); err != nil {
					t.Fatal(err)
				}
				for k, w := range want {
					if math.Abs(out[k]-w) > 1e-12*(1+math.Abs(w))*math.Pow(4, float64(n)) {
						t.Fatalf("n=%d batch %d: det[%d] = %v, want %v", n, batch, k, out[k], w)
					}
				}
				x32 := ewConv[float32](x)
				o32 := make([]float32, batch)
				if err := Det(threads, o32, x32, n); err != nil {
					t.Fatal(err)
				}
				for k := range want {
					m := make([]float64, n*n)
					for i, v := range x32[k*n*n : (k+1)*n*n] {
						m[i] = float64(v)
					}
					if w := float32(detCofactor(m, n)); math.Abs(float64(o32[k]-w)) > 1e-5*(1+math.Abs(float64(w))) {
						t.Fatalf("float32 n=%d: det[%d] = %v, want %v", n, k, o32[k], w)
					}
				}
			}
		}
	}
}

func TestDetSpecial(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, c := range []struct {
		x    []float64
		want float64
	}{
		{[]float64{1, 2, 2, 4}, 0},                // singular
		{[]float64{0, 0, 0, 5}, 0},                // zero column
		{[]float64{0, 1, 1, 0}, -1},               // a swap
		{[]float64{0, 0, 0, nan}, nan},            // NaN after a zero pivot
		{[]float64{2, 0, 0, inf}, inf},            // Inf
		{[]float64{0, 0, 0, inf}, nan},            // 0·Inf
		{[]float64{1, nan, 3, 4}, nan},            // NaN elsewhere
		{[]float64{1e200, 0, 0, 1e200}, inf},      // overflow
		{[]float64{2, 1, 1, 3, 2, 1, 2, 1, 3}, 2}, // 3×3 with pivoting
	} {
		n := int(math.Sqrt(float64(len(c.x))))
		out := []float64{7}
		if err := Det(1, out, append([]float64(nil), c.x...), n); err != nil {
			t.Fatal(err)
		}
		if !(math.Abs(out[0]-c.want) <= 1e-12*math.Abs(c.want) || out[0] == c.want || math.IsNaN(out[0]) && math.IsNaN(c.want)) {
			t.Errorf("det %v = %v, want %v", c.x, out[0], c.want)
		}
	}
	if err := Det(1, make([]float64, 2), make([]float64, 7), 2); err == nil {
		t.Error("det of 7 elements as two 2×2 matrices succeeded")
	}
}
