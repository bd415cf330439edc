package kernels

import (
	"github.com/gopir/gopir/internal/allocs"
	"runtime"
	"testing"
)

// runPacked packs op(B) and multiplies with it.
func runPacked[T nnFloat](tc gemmCase, a []T, lda int, b []T, ldb int, c []T, ldc int, threads int) []T {
	pb := make([]T, PackedGemmBLen[T](tc.k, tc.n))
	PackGemmB(pb, tc.transB, tc.k, tc.n, b, ldb)
	GemmPackedB(tc.transA, tc.transB, tc.m, tc.n, tc.k, T(tc.alpha), a, lda, b, ldb, pb, T(tc.beta), c, ldc, threads)
	return pb
}

// TestGemmPackedB: with op(B) packed once, every product of the GEMM's
// test cases gives bitwise the unpacked GEMM's result, for every kernel,
// with one goroutine and several.
func TestGemmPackedB(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	var cases []gemmCase
	for i, tc := range gemmCases() {
		if i%3 == 0 { // every shape and transpose, a third of the scalars
			cases = append(cases, tc)
		}
	}
	// Products big enough for several goroutines (see TestGemmThreads),
	// mlp's at batch 1 and 8, and single rows through the row kernels
	// (gemvPanels: 4 panels then 2 then a partial one, a partial panel
	// alone, one of a whole vector; depth slices that accumulate onto C)
	// with beta 0 and not. A last panel narrower than whole vectors in
	// several depth slices takes the slice kernels (gemvSlices): 8 equal
	// slices (1×10×4096), 3 with a shorter last one (1×200×1100), more
	// than 8 of them, a panel of two vectors, 8 columns after whole
	// panels.
	shapes := [][3]int{{150, 400, 100}, {20, 2000, 150}, {300, 40, 600}, {1, 128, 784}, {8, 128, 784}, {1, 200, 1100}, {1, 64, 3}, {1, 10, 4096}, {1, 80, 33},
		{1, 5, 9*512 + 100}, {1, 20, 2048}, {1, 1000, 1024},
		// A read in place (gemmTileDirectA): whole panels (the MLP at
		// batch 64), a last panel under a vector, its 8-row edge, a
		// last panel of one whole vector (stored by the narrower
		// kernel), one of a vector and a part (merged), a panel of one
		// vector alone, over two depth slices; a row stride of 2 KiB
		// keeps packing A.
		{64, 128, 784}, {33, 70, 300}, {64, 10, 128}, {29, 48, 100}, {17, 57, 90}, {15, 16, 40}, {43, 9, 1100}, {30, 40, 512}}
	for _, s := range shapes {
		cases = append(cases, gemmCase{false, true, s[0], s[1], s[2], 1, 0, 0}, gemmCase{true, false, s[0], s[1], s[2], 1.5, 0.5, 1})
		if s[0] == 1 {
			cases = append(cases, gemmCase{false, true, s[0], s[1], s[2], 1.5, 0.5, 1}, gemmCase{false, false, s[0], s[1], s[2], -1, -0.25, 0})
		}
	}
	forEachKernel(t, func(t *testing.T) {
		for _, tc := range cases {
			for _, threads := range []int{1, 3} {
				if threads > 1 && tc.m*tc.n*tc.k < 2*gemmMinWork {
					continue // one goroutine either way
				}
				checkPacked[float32](t, tc, threads)
				checkPacked[float64](t, tc, threads)
			}
		}
	})
}

func checkPacked[T nnFloat](t *testing.T, tc gemmCase, threads int) {
	t.Helper()
	a, lda, b, ldb, c0, ldc := gemmOperands[T](tc, uint64(tc.m*31+tc.n*7+tc.k))
	want := append([]T(nil), c0...)
	runGemm(tc, a, lda, b, ldb, want, ldc, threads)
	got := append([]T(nil), c0...)
	runPacked(tc, a, lda, b, ldb, got, ldc, threads)
	for i := range got {
		if !sameBits(got[i], want[i]) {
			t.Fatalf("%v threads=%d: C[%d] = %g with B packed, %g without", tc, threads, i, got[i], want[i])
		}
	}
}

// TestGemmPackedBForAnotherKernel: panels packed for one kernel, or for
// other dimensions, are never read as another's: the product falls back
// to op(B) as it is and stays right.
func TestGemmPackedBForAnotherKernel(t *testing.T) {
	if len(gemmKernelNames()) < 2 {
		t.Skip("one GEMM kernel in this build")
	}
	tc := gemmCase{false, true, 9, 70, 40, 1, 0, 0}
	a, lda, b, ldb, c0, ldc := gemmOperands[float32](tc, 5)
	pb := make([]float32, PackedGemmBLen[float32](tc.k, tc.n))
	PackGemmB(pb, tc.transB, tc.k, tc.n, b, ldb) // for the best kernel
	forEachKernel(t, func(t *testing.T) {
		want := append([]float32(nil), c0...)
		runGemm(tc, a, lda, b, ldb, want, ldc, 1)
		got := append([]float32(nil), c0...)
		GemmPackedB(tc.transA, tc.transB, tc.m, tc.n, tc.k, 1, a, lda, b, ldb, pb, 0, got, ldc, 1)
		for i := range got {
			if !sameBits(got[i], want[i]) {
				t.Fatalf("C[%d] = %g, want %g", i, got[i], want[i])
			}
		}
	})
	// Same kernel, other dimensions: k one shorter reads a prefix of B.
	short := gemmCase{false, true, 9, 70, 39, 1, 0, 0}
	want := append([]float32(nil), c0...)
	Sgemm(false, true, 9, 70, 39, 1, a, lda, b, ldb, 0, want, ldc, 1)
	got := append([]float32(nil), c0...)
	GemmPackedB(short.transA, short.transB, 9, 70, 39, 1, a, lda, b, ldb, pb, 0, got, ldc, 1)
	for i := range got {
		if !sameBits(got[i], want[i]) {
			t.Fatalf("k=39 with panels of k=40: C[%d] = %g, want %g", i, got[i], want[i])
		}
	}
}

// TestGemmPackedBAllocs: a product with packed B makes no Go allocation,
// on one goroutine or several, with A read in place through the
// narrower kernels too (64×10×128).
func TestGemmPackedBAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("under the race detector sync.Pool drops objects at random")
	}
	for _, s := range [][3]int{{1, 128, 784}, {1, 10, 4096}, {8, 128, 784}, {64, 256, 512}, {64, 10, 128}} {
		tc := gemmCase{false, true, s[0], s[1], s[2], 1, 0, 0}
		a, lda, b, ldb, c, ldc := gemmOperands[float32](tc, 1)
		pb := runPacked(tc, a, lda, b, ldb, c, ldc, 2)
		for _, threads := range []int{1, 2} {
			n := allocs.PerRun(100, func() {
				GemmPackedB(false, true, tc.m, tc.n, tc.k, 1, a, lda, b, ldb, pb, 0, c, ldc, threads)
			})
			if n != 0 {
				t.Errorf("%v threads=%d: %v Go allocations per call, want 0", tc, threads, n)
			}
		}
	}
}

func TestPackGemmBBadArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"short dst", func() { PackGemmB(make([]float32, 10), false, 4, 4, make([]float32, 16), 4) }},
		{"short b", func() { PackGemmB(make([]float32, 1000), true, 4, 4, make([]float32, 15), 4) }},
		{"negative", func() { PackGemmB(make([]float32, 1000), false, -1, 4, nil, 4) }},
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

// TestGemmHeldA: a goroutine that computes blocks of C from op(A) rows
// it packed for an earlier block (gemmHeldARange) gets the bits of
// gemmPackedRange, when the next block has the same rows (A reused) and
// when it has others (A packed again), over several depth slices, with
// beta 0 and not.
func TestGemmHeldA(t *testing.T) {
	kern := activeKernel[float32]()
	mr, nr := kern.mr, kern.nr
	m, n, k := 3*mr+5, 3*nr+7, 2*kern.kc+9
	for _, transA := range []bool{false, true} {
		tc := gemmCase{transA, true, m, n, k, 1.5, 0.5, 0}
		a, lda, b, ldb, c0, ldc := gemmOperands[float32](tc, 3)
		pb := make([]float32, PackedGemmBLen[float32](k, n))
		PackGemmB(pb, true, k, n, b, ldb)
		blocks := [][4]int{{0, 2 * mr, 0, nr}, {0, 2 * mr, nr, n}, {2 * mr, m, 0, 2 * nr}, {0, 2 * mr, 2 * nr, n}, {2 * mr, m, 2 * nr, n}}
		for _, beta := range []float32{0, 0.5} {
			want := append([]float32(nil), c0...)
			ws := getGemmScratch[float32]()
			for _, bl := range blocks {
				gemmPackedRange(kern, ws, transA, bl[0], bl[1], bl[2], bl[3], n, k, 1.5, a, lda, pb, beta, want, ldc)
			}
			got := append([]float32(nil), c0...)
			var held heldA
			for _, bl := range blocks {
				gemmHeldARange(kern, ws, &held, transA, bl[0], bl[1], bl[2], bl[3], n, k, 1.5, a, lda, pb, beta, got, ldc)
			}
			putGemmScratch(ws)
			for i := range got {
				if !sameBits(got[i], want[i]) {
					t.Fatalf("transA %v beta %v: C[%d] = %g with A held, %g without", transA, beta, i, got[i], want[i])
				}
			}
		}
	}
}
