package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

// gemmKernelNames lists every micro-kernel of this build, best first.
func gemmKernelNames() []string {
	var names []string
	for _, k := range sgemmKernels {
		names = append(names, k.name)
	}
	return names
}

// forEachKernel runs f once per micro-kernel, forced through the internal
// selector, skipping kernels whose CPU feature this machine lacks.
func forEachKernel(t *testing.T, f func(t *testing.T)) {
	for _, name := range gemmKernelNames() {
		t.Run(name, func(t *testing.T) {
			for _, k := range sgemmKernels {
				if k.name == name && k.missing != "" {
					t.Skipf("CPU lacks %s", k.missing)
				}
			}
			if err := selectGemmKernel(name); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = selectGemmKernel("") })
			f(t)
		})
	}
}

type gemmCase struct {
	transA, transB bool
	m, n, k        int
	alpha, beta    float64
	pad            int // extra elements per row of A, B and C beyond the minimum
}

func (tc gemmCase) String() string {
	op := func(t bool) string {
		if t {
			return "T"
		}
		return "N"
	}
	return fmt.Sprintf("%s%s/%dx%dx%d/a=%g,b=%g/pad=%d", op(tc.transA), op(tc.transB), tc.m, tc.n, tc.k, tc.alpha, tc.beta, tc.pad)
}

// gemmShapes covers empty and unit sizes, primes that are multiples of no
// tile, non-square products and sizes that span several cache blocks; the
// last is too tall to stream B (gemmStreams) for every kernel.
var gemmShapes = [][3]int{
	{0, 0, 0}, {0, 7, 5}, {7, 0, 5}, {7, 13, 0},
	{1, 1, 1}, {1, 13, 7}, {13, 1, 7}, {7, 7, 1},
	{7, 13, 31}, {13, 7, 67}, {31, 67, 13}, {67, 131, 7},
	{131, 67, 131}, {1, 131, 67}, {131, 1, 31}, {14, 32, 64},
	{28, 64, 300}, {350, 97, 521}, {67, 1100, 31}, {800, 37, 600},
}

var gemmScalars = [][2]float64{{1, 0}, {1, 1}, {-0.5, 0.25}, {2, 0}, {0, -1.5}, {0, 0}}

func gemmCases() []gemmCase {
	var cases []gemmCase
	for i, s := range gemmShapes {
		for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
			for j, ab := range gemmScalars {
				cases = append(cases, gemmCase{tr[0], tr[1], s[0], s[1], s[2], ab[0], ab[1], (i + j) % 3 * 2})
			}
		}
	}
	return cases
}

// gemmOperands builds random A, B and C for tc. C is NaN wherever beta == 0
// allows garbage, and its row padding holds a sentinel that must survive.
func gemmOperands[T float](tc gemmCase, seed uint64) (a []T, lda int, b []T, ldb int, c []T, ldc int) {
	rng := rand.New(rand.NewPCG(seed, 1))
	ar, ac := tc.m, tc.k
	if tc.transA {
		ar, ac = ac, ar
	}
	br, bc := tc.k, tc.n
	if tc.transB {
		br, bc = bc, br
	}
	lda, ldb, ldc = max(ac+tc.pad, 1), max(bc+tc.pad, 1), max(tc.n+tc.pad, 1)
	fill := func(rows, cols, ld int, nan bool) []T {
		x := make([]T, max(0, rows*ld))
		for i := range x {
			switch {
			case cols == 0 || i%ld >= cols:
				x[i] = 12345 // row padding sentinel
			case nan:
				x[i] = T(math.NaN())
			default:
				x[i] = T(rng.Float64()*2 - 1)
			}
		}
		return x
	}
	a = fill(ar, ac, lda, false)
	b = fill(br, bc, ldb, false)
	c = fill(tc.m, tc.n, ldc, tc.beta == 0)
	return a, lda, b, ldb, c, ldc
}

// refGemm returns alpha*op(A)*op(B) + beta*C in float64, and the same sum of
// absolute values, which bounds the rounding error of any summation order.
func refGemm[T float](tc gemmCase, a []T, lda int, b []T, ldb int, c []T, ldc int) (want, mag []float64) {
	want = make([]float64, tc.m*tc.n)
	mag = make([]float64, tc.m*tc.n)
	for i := range tc.m {
		for j := range tc.n {
			var s, sm float64
			for p := range tc.k {
				ia, ib := i*lda+p, p*ldb+j
				if tc.transA {
					ia = p*lda + i
				}
				if tc.transB {
					ib = j*ldb + p
				}
				av, bv := a[ia], b[ib]
				s += float64(av) * float64(bv)
				sm += math.Abs(float64(av) * float64(bv))
			}
			s, sm = tc.alpha*s, math.Abs(tc.alpha)*sm
			if tc.beta != 0 {
				cv := float64(c[i*ldc+j])
				s += tc.beta * cv
				sm += math.Abs(tc.beta * cv)
			}
			want[i*tc.n+j], mag[i*tc.n+j] = s, sm
		}
	}
	return want, mag
}

func runGemm[T float](tc gemmCase, a []T, lda int, b []T, ldb int, c []T, ldc int, threads int) {
	switch x := any(c).(type) {
	case []float32:
		Sgemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, float32(tc.alpha), any(a).([]float32), lda,
			any(b).([]float32), ldb, float32(tc.beta), x, ldc, threads)
	case []float64:
		Dgemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, any(a).([]float64), lda,
			any(b).([]float64), ldb, tc.beta, x, ldc, threads)
	}
}

// checkGemm runs tc and compares with refGemm.
func checkGemm[T float](t *testing.T, tc gemmCase, threads int, eps float64) {
	t.Helper()
	a, lda, b, ldb, c, ldc := gemmOperands[T](tc, uint64(tc.m*1000003+tc.n*1009+tc.k))
	want, mag := refGemm(tc, a, lda, b, ldb, c, ldc)
	runGemm(tc, a, lda, b, ldb, c, ldc, threads)
	compareGemm(t, tc, threads, c, ldc, want, mag, eps)
}

// compareGemm checks C against the reference. The tolerance grows with k
// because each of the k+2 roundings may add a relative eps of the
// magnitude; the row padding of C must be untouched.
func compareGemm[T float](t *testing.T, tc gemmCase, threads int, c []T, ldc int, want, mag []float64, eps float64) {
	t.Helper()
	for i := range tc.m {
		for j := range ldc {
			got := float64(c[i*ldc+j])
			if j >= tc.n {
				if got != 12345 {
					t.Fatalf("%v threads=%d: C[%d,%d] in row padding overwritten: %g", tc, threads, i, j, got)
				}
				continue
			}
			w, tol := want[i*tc.n+j], float64(tc.k+2)*eps*mag[i*tc.n+j]
			if !(math.Abs(got-w) <= tol) {
				t.Fatalf("%v threads=%d: C[%d,%d] = %g, want %g (tolerance %g)", tc, threads, i, j, got, w, tol)
			}
		}
	}
}

func TestSgemm(t *testing.T) {
	forEachKernel(t, func(t *testing.T) {
		for _, tc := range gemmCases() {
			checkGemm[float32](t, tc, 1, 0x1p-24)
		}
	})
}

func TestDgemm(t *testing.T) {
	forEachKernel(t, func(t *testing.T) {
		for _, tc := range gemmCases() {
			checkGemm[float64](t, tc, 1, 0x1p-53)
		}
	})
}

// TestGemmThreads checks the parallel paths (few rows: column ranges;
// many rows: shared B blocks) against the reference, that a run repeated
// with the same thread count is bitwise identical, and that it is even
// identical to the single-threaded result, since every element of C is
// summed in the same order whichever goroutine computes it.
func TestGemmThreads(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4)) // let 3 and 4 threads run even on 2 cores
	// Each is big enough for 4 goroutines (see gemmMinWork). The first two
	// stream B (gemmStreams), the last two share packed B blocks, the last
	// over three kc slices.
	shapes := [][3]int{{150, 400, 100}, {20, 2000, 150}, {1500, 40, 300}, {700, 50, 1100}}
	trans := [][2]bool{{false, false}, {true, true}, {false, true}, {true, false}}
	if raceEnabled {
		// One transpose case per shape still runs every parallel path.
		trans = trans[:1]
	}
	forEachKernel(t, func(t *testing.T) {
		for _, s := range shapes {
			for _, tr := range trans {
				tc := gemmCase{tr[0], tr[1], s[0], s[1], s[2], 1.5, 0.5, 1}
				checkThreads[float32](t, tc, 0x1p-24)
				checkThreads[float64](t, tc, 0x1p-53)
			}
		}
	})
}

func checkThreads[T float](t *testing.T, tc gemmCase, eps float64) {
	t.Helper()
	a, lda, b, ldb, c0, ldc := gemmOperands[T](tc, 7)
	want, mag := refGemm(tc, a, lda, b, ldb, c0, ldc)
	var serial []T
	for threads := 1; threads <= 4; threads++ {
		c1 := append([]T(nil), c0...)
		c2 := append([]T(nil), c0...)
		runGemm(tc, a, lda, b, ldb, c1, ldc, threads)
		runGemm(tc, a, lda, b, ldb, c2, ldc, threads)
		compareGemm(t, tc, threads, c1, ldc, want, mag, eps)
		if threads == 1 {
			serial = c1
		}
		for i := range c1 {
			if !sameBits(c1[i], c2[i]) {
				t.Fatalf("%v threads=%d: run twice, C[%d] = %g then %g", tc, threads, i, c1[i], c2[i])
			}
			if !sameBits(c1[i], serial[i]) {
				t.Fatalf("%v threads=%d: C[%d] = %g, single-threaded %g", tc, threads, i, c1[i], serial[i])
			}
		}
	}
}

func sameBits[T float](x, y T) bool {
	return math.Float64bits(float64(x)) == math.Float64bits(float64(y))
}

// TestGemmConcurrent runs parallel GEMMs from several goroutines at once:
// they share the helper goroutines, and each must still get its own result.
func TestGemmConcurrent(t *testing.T) {
	tc := gemmCase{false, false, 300, 200, 100, 1, 0, 0}
	a, lda, b, ldb, c0, ldc := gemmOperands[float32](tc, 3)
	want := append([]float32(nil), c0...)
	runGemm(tc, a, lda, b, ldb, want, ldc, 1)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				c := append([]float32(nil), c0...)
				runGemm(tc, a, lda, b, ldb, c, ldc, 2+g%2)
				for i := range c {
					if !sameBits(c[i], want[i]) {
						t.Errorf("goroutine %d: C[%d] = %g, want %g", g, i, c[i], want[i])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

func TestGemmBadArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"short a", func() {
			Sgemm(false, false, 2, 2, 2, 1, make([]float32, 3), 2, make([]float32, 4), 2, 0, make([]float32, 4), 2, 1)
		}},
		{"small lda", func() {
			Sgemm(false, false, 2, 2, 2, 1, make([]float32, 4), 1, make([]float32, 4), 2, 0, make([]float32, 4), 2, 1)
		}},
		{"short c", func() {
			Dgemm(true, true, 2, 2, 2, 1, make([]float64, 4), 2, make([]float64, 4), 2, 0, make([]float64, 3), 2, 1)
		}},
		{"negative", func() { Sgemm(false, false, -1, 2, 2, 1, nil, 2, nil, 2, 0, nil, 2, 1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			tc.f()
		})
	}
}

// TestSgemmAllocs checks that packing buffers are recycled: a steady-state
// call allocates nothing on one goroutine, and only the bookkeeping of the
// goroutines (closures, team state) with more.
func TestSgemmAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop objects at random")
	}
	const n = 256
	a, b, c := make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
	for _, threads := range []int{1, 2, 4} {
		allocs := testing.AllocsPerRun(20, func() {
			Sgemm(false, false, n, n, n, 1, a, n, b, n, 0, c, n, threads)
		})
		limit := 0.0
		if threads > 1 {
			limit = float64(3 + 2*threads) // closures, WaitGroup, team state
		}
		t.Logf("threads=%d: %v allocations per call", threads, allocs)
		if allocs > limit {
			t.Errorf("threads=%d: %v allocations per call, want ≤ %v", threads, allocs, limit)
		}
	}
}

func TestSelectGemmKernel(t *testing.T) {
	defer selectGemmKernel("")
	if err := selectGemmKernel("nonsense"); err == nil {
		t.Error("unknown kernel accepted")
	}
	if sgemmActive.Load() != bestKernel(sgemmKernels) {
		t.Error("unknown kernel did not fall back to the best one")
	}
	if err := selectGemmKernel("go"); err != nil || sgemmActive.Load().name != "go" || dgemmActive.Load().name != "go" {
		t.Errorf("go kernel not selected: %v", err)
	}
}
