package kernels

import (
	"fmt"
	"os"
	"sync/atomic"
)

// float is the element type of the GEMM driver.
type float interface{ float32 | float64 }

// microKernel computes C[0:mr, 0:nr] = alpha*Ap·Bp + beta*C, where Ap is a
// k×mr packed panel of A, Bp a k×nr packed panel of B and C has row stride
// ldc. With beta == 0 it must not read C.
type microKernel[T float] func(k int, a, b, c *T, ldc int, alpha, beta T)

// indirectKernel is a microKernel whose B is read in place: its row for k
// step s is the nr consecutive elements at b + koff[4s] (see the
// generator's indirectKernel), for convolution panels that need no
// packing (conv_gemm_inplace.go).
type indirectKernel[T float] func(k int, a, b *T, koff *int32, c *T, ldc int, alpha, beta T)

// rowKernel computes one row of C over p whole packed B panels, pstride
// bytes apart, from A's row in memory (k elements), each column as the
// 1×nr edge kernel computes it (see the generator's rowKernel).
type rowKernel[T float] func(k int, a, b, c *T, pstride int, alpha, beta T)

// directAKernel is a microKernel whose A is read in place: row i's
// element for k step s at a + i·lda + s (see the generator's
// directAKernel), for products whose B is packed once (gemm_direct_a.go).
type directAKernel[T float] func(k int, a, b, c *T, lda, ldc int, alpha, beta T)

// rowSlicesKernel computes the first columns of one packed B panel for
// several depth slices of a matrix–vector product side by side: slice q
// reads A's row at a + q·astride bytes and its panel at b + q·bstride
// bytes, and stores alpha·acc at c + q·(its width), each column as the
// 1×nr edge kernel computes it with beta zero (see the generator's
// rowSlicesKernel), for the caller to merge into C slice by slice.
type rowSlicesKernel[T float] func(k int, a, b, c *T, astride, bstride int, alpha T)

// gemmKernel is a micro-kernel with its tile shape and the cache blocking
// that suits it.
type gemmKernel[T float] struct {
	name    string // value of GOPIR_GEMM_KERNEL that selects it
	id      int    // its place in its list, from 1: packed buffers name it
	missing string // CPU feature this machine lacks; "" if usable
	mr, nr  int    // micro-tile
	mc      int    // rows of a packed A block (multiple of mr): stays in L2
	kc      int    // depth of the packed panels: deeper means fewer passes over C
	nc      int    // columns of a packed B block (multiple of nr): stays in L3
	fn      microKernel[T]
	// edge[h-1][v-1], when set, computes only h rows and v·lanes columns of
	// the tile from the same packed panels, for tiles at the edges of C.
	edge  [][]microKernel[T]
	lanes int
	pack  panelPackers[T]
	// row[p-1], when set, is the row kernel over p panels (gemv.go).
	row []rowKernel[T]
	// rowSlices[s-1][v-1], when set, is the slice kernel over s depth
	// slices and v vectors of a panel (gemvSlices).
	rowSlices [][]rowSlicesKernel[T]
	// directA[h-1][v-1], when set, computes h rows and v vectors of the
	// tile with A read in place (directAKernel).
	directA [][]directAKernel[T]
	// indirect[h-1], when set, computes h rows and all nr columns of the
	// tile with B read in place (indirectKernel).
	indirect []indirectKernel[T]
}

// panelPackers are the two ways to fill a packed panel (see gemm_pack.go);
// nil fields mean the portable Go versions.
type panelPackers[T float] struct {
	transpose func(d, src []T, ld, kb, h, w int) // like packTranspose
	runs      func(d, src []T, ld, kb, h, w int) // like packRuns
}

// orDefault fills nil fields with the portable packers.
func (p panelPackers[T]) orDefault() panelPackers[T] {
	if p.transpose == nil {
		p.transpose = packTranspose[T]
	}
	if p.runs == nil {
		p.runs = packRuns[T]
	}
	return p
}

// Kernels in order of preference: the arch-specific ones, then portable Go.
var (
	sgemmKernels = append(archSgemmKernels(), &gemmKernel[float32]{
		name: "go", mr: goMR, nr: goNR, mc: 32 * goMR, kc: 256, nc: 1024, fn: goKernel[float32]})
	dgemmKernels = append(archDgemmKernels(), &gemmKernel[float64]{
		name: "go", mr: goMR, nr: goNR, mc: 32 * goMR, kc: 256, nc: 1024, fn: goKernel[float64]})
)

var (
	sgemmActive atomic.Pointer[gemmKernel[float32]]
	dgemmActive atomic.Pointer[gemmKernel[float64]]
)

func init() {
	for i, k := range sgemmKernels {
		k.id = i + 1
	}
	for i, k := range dgemmKernels {
		k.id = i + 1
	}
	// An unknown or unusable name falls back to the best usable kernel, so
	// that a stale environment never breaks a program.
	_ = selectGemmKernel(os.Getenv("GOPIR_GEMM_KERNEL"))
}

// selectGemmKernel makes the kernels called name active for Sgemm and
// Dgemm; "" picks the best usable ones. If name is not usable here, the
// best usable kernels become active and the error says why.
func selectGemmKernel(name string) error {
	s, serr := pickKernel(sgemmKernels, name)
	d, derr := pickKernel(dgemmKernels, name)
	sgemmActive.Store(s)
	dgemmActive.Store(d)
	if serr != nil {
		return serr
	}
	return derr
}

func pickKernel[T float](list []*gemmKernel[T], name string) (*gemmKernel[T], error) {
	best := bestKernel(list)
	if name == "" {
		return best, nil
	}
	for _, k := range list {
		if k.name == name {
			if k.missing != "" {
				return best, fmt.Errorf("kernels: GEMM kernel %q needs %s, which this CPU lacks", name, k.missing)
			}
			return k, nil
		}
	}
	return best, fmt.Errorf("kernels: unknown GEMM kernel %q", name)
}

// bestKernel returns the first usable kernel; the portable one always is.
func bestKernel[T float](list []*gemmKernel[T]) *gemmKernel[T] {
	for _, k := range list {
		if k.missing == "" {
			return k
		}
	}
	return list[len(list)-1]
}
