package kernels

import (
	"fmt"
	"runtime"
	"testing"
)

func ewBenchThreads() []int {
	if n := runtime.GOMAXPROCS(0); n > 1 {
		return []int{1, n}
	}
	return []int{1}
}

// BenchmarkAdd measures f32 addition over 1M elements in the same-shape,
// scalar and row-broadcast ([1024,1024] + [1024]) layouts.
func BenchmarkAdd(b *testing.B) {
	const n = 1 << 20
	a, y, o := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range a {
		a[i], y[i] = float32(i), float32(n-i)
	}
	cases := []struct {
		name   string
		bShape []int
	}{
		{"same", []int{1024, 1024}},
		{"scalar", []int{}},
		{"row", []int{1024}},
		{"col", []int{1024, 1}},
	}
	for _, c := range cases {
		for _, threads := range ewBenchThreads() {
			b.Run(fmt.Sprintf("f32/n=1M/%s/threads=%d", c.name, threads), func(b *testing.B) {
				bb := y[:ewNumel(c.bShape)]
				b.SetBytes(3 * 4 * n)
				for b.Loop() {
					if err := Binary(BinAdd, threads, o, []int{1024, 1024}, a, []int{1024, 1024}, bb, c.bShape); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkUnary(b *testing.B) {
	const n = 1 << 20
	x, o := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i] = float32(i%200)/50 - 2
	}
	for _, op := range []struct {
		name string
		op   UnaryOp
	}{{"relu", UnaryRelu}, {"sigmoid", UnarySigmoid}, {"gelu", UnaryGelu}, {"floor", UnaryFloor}, {"sin", UnarySin}} {
		for _, threads := range ewBenchThreads() {
			b.Run(fmt.Sprintf("%s/f32/n=1M/threads=%d", op.name, threads), func(b *testing.B) {
				b.SetBytes(2 * 4 * n)
				for b.Loop() {
					if err := Unary(op.op, threads, o, x); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkMod measures the remainders over 1M same-shape elements: f32
// (math.Mod in float64) and i32.
func BenchmarkMod(b *testing.B) {
	const n = 1 << 20
	shape := []int{n}
	xf, yf, of := make([]float32, n), make([]float32, n), make([]float32, n)
	xi, yi, oi := make([]int32, n), make([]int32, n), make([]int32, n)
	for i := range xf {
		xf[i], yf[i] = float32(i%1000)/7-70, float32(i%13)/3+0.5
		xi[i], yi[i] = int32(i%1000-500), int32(i%13-6)|1
	}
	for _, op := range []struct {
		name string
		op   BinaryOp
	}{{"mod", BinMod}, {"fmod", BinFmod}} {
		b.Run(op.name+"/f32/n=1M", func(b *testing.B) {
			b.SetBytes(3 * 4 * n)
			for b.Loop() {
				if err := Binary(op.op, 1, of, shape, xf, shape, yf, shape); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(op.name+"/i32/n=1M", func(b *testing.B) {
			b.SetBytes(3 * 4 * n)
			for b.Loop() {
				if err := Binary(op.op, 1, oi, shape, xi, shape, yi, shape); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReduceSum sums 1M f32 values entirely, along rows and along
// columns of a [1024,1024] matrix.
func BenchmarkReduceSum(b *testing.B) {
	const n = 1 << 20
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i % 7)
	}
	out := make([]float32, 1024)
	shape := []int{1024, 1024}
	for _, c := range []struct {
		name string
		axes []int
	}{{"all", []int{0, 1}}, {"rows", []int{1}}, {"cols", []int{0}}} {
		for _, threads := range ewBenchThreads() {
			b.Run(fmt.Sprintf("f32/n=1M/%s/threads=%d", c.name, threads), func(b *testing.B) {
				o := out
				if len(c.axes) == 2 {
					o = out[:1]
				}
				b.SetBytes(4 * n)
				for b.Loop() {
					if err := Reduce(ReduceSum, threads, o, x, shape, c.axes); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkReduceMax(b *testing.B) {
	const n = 1 << 20
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i % 7)
	}
	out := make([]float32, 1024)
	for _, axes := range [][]int{{1}, {0}} {
		b.Run(fmt.Sprintf("f32/n=1M/axes=%v", axes), func(b *testing.B) {
			b.SetBytes(4 * n)
			for b.Loop() {
				if err := Reduce(ReduceMax, 1, out, x, []int{1024, 1024}, axes); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkReduceProd(b *testing.B) {
	const n = 1 << 20
	x := make([]float32, n)
	for i := range x {
		x[i] = 1 + float32(i%7-3)/1000
	}
	out := make([]float32, 1024)
	for _, axes := range [][]int{{1}, {0}} {
		b.Run(fmt.Sprintf("f32/n=1M/axes=%v", axes), func(b *testing.B) {
			b.SetBytes(4 * n)
			for b.Loop() {
				if err := Reduce(ReduceProd, 1, out, x, []int{1024, 1024}, axes); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
