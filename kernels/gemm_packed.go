package kernels

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"
)

// GEMMs with op(B) packed once. A product whose B is constant across calls
// (a weight matrix at inference) need not pack it on every call: PackGemmB
// packs all of op(B) into the panels the active micro-kernel reads, and
// GemmPackedB multiplies with them, packing only the rows of op(A). With
// few rows of A (a matrix–vector product at batch 1) packing B was most of
// the work. The results are bitwise those of the unpacked GEMM: the same
// k slices, the same tiles, the same micro-kernels.
//
// Layout: a header of one cache line, then for each slice of k (as the
// unpacked GEMM cuts it, balancedBlock(k, kc)) the ceil(n/nr) panels of
// op(B)'s columns, each kb×nr, zero past column n. The header names the
// kernel the panels are for, so a buffer packed before another kernel was
// made active (GOPIR_GEMM_KERNEL, tests) is never misread: GemmPackedB
// then multiplies with b as it is.

// packedMagic marks a packed buffer's header.
const packedMagic = 0x5047_4d42 // "PGMB"

// packedHeader is the header's length in elements: one cache line.
func packedHeader[T float]() int {
	var zero T
	return gemmAlign / int(unsafe.Sizeof(zero))
}

// PackedGemmBLen is the length, in elements, of op(B) (k×n) packed by
// PackGemmB for the active kernel: the header and every panel.
func PackedGemmBLen[T nnFloat](k, n int) int {
	kern := activeKernel[T]()
	return packedHeader[T]() + k*ceilDiv(n, kern.nr)*kern.nr
}

// PackGemmB packs op(B) — b is k×n with row stride ldb, or n×k when transB
// — into dst, which holds at least PackedGemmBLen(k, n) elements.
func PackGemmB[T nnFloat](dst []T, transB bool, k, n int, b []T, ldb int) {
	kern := activeKernel[T]()
	if k < 0 || n < 0 {
		panic(fmt.Sprintf("kernels: PackGemmB: negative dimension k=%d n=%d", k, n))
	}
	if transB {
		checkMatrix("b", n, k, len(b), ldb)
	} else {
		checkMatrix("b", k, n, len(b), ldb)
	}
	need := PackedGemmBLen[T](k, n)
	if len(dst) < need {
		panic(fmt.Sprintf("kernels: PackGemmB: len(dst) = %d, need %d", len(dst), need))
	}
	h := packedHeader[T]()
	clear(dst[:h])
	for i, v := range []uint32{packedMagic, uint32(kern.id), uint32(k), uint32(n)} {
		dst[i] = fromBits[T](v)
	}
	if k == 0 || n == 0 {
		return
	}
	kc, np := balancedBlock(k, kern.kc, 1), ceilDiv(n, kern.nr)
	pk := kern.pack.orDefault()
	for pc := 0; pc < k; pc += kc {
		kb := min(kc, k-pc)
		packB(dst[h+pc*np*kern.nr:], pk, transB, b, ldb, pc, 0, kb, n, kern.nr)
	}
}

// GemmPackedB computes C = alpha*op(A)*op(B) + beta*C like Sgemm and
// Dgemm, with op(B) also given packed: pb from PackGemmB(…, transB, k, n,
// b, ldb). When pb was packed for another kernel than the active one, or
// for other dimensions, it multiplies with b as it is.
func GemmPackedB[T nnFloat](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, pb []T, beta T, c []T, ldc int, threads int) {
	kern := activeKernel[T]()
	if !packedFor(pb, kern, k, n) {
		nnGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, threads)
		return
	}
	if m < 0 {
		panic(fmt.Sprintf("kernels: gemm: negative dimension m=%d", m))
	}
	if transA {
		checkMatrix("a", k, m, len(a), lda)
	} else {
		checkMatrix("a", m, k, len(a), lda)
	}
	checkMatrix("c", m, n, len(c), ldc)
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 {
		scaleMatrix(m, n, beta, c, ldc)
		return
	}
	work := m * n * k
	if k < gemmShallowK {
		work /= 4
	}
	t := min(threads, runtime.GOMAXPROCS(0), work/gemmPackedMinWork)
	if t <= 1 {
		ws := getGemmScratch[T]()
		gemmPackedRange(kern, ws, transA, 0, m, 0, n, n, k, alpha, a, lda, pb, beta, c, ldc)
		putGemmScratch(ws)
		return
	}
	j := getBlockJob[T]()
	j.kern, j.transA, j.m, j.n, j.k = kern, transA, m, n, k
	j.alpha, j.beta, j.a, j.pb, j.c, j.lda, j.ldc = alpha, beta, a, pb, c, lda, ldc
	j.start(t)
}

// gemmPackedMinWork is the m·n·k volume each goroutine must get for
// another one to pay off when B is packed already. Without B's packing a
// small-m product is several times cheaper per element than in the
// unpacked GEMM, so the fixed cost of a helper (waking it, splitting C,
// waiting for its last block) weighs more. Where the second core is free
// a helper pays from a few hundred thousand: 8×128×784 (the MLP at batch
// 8) took 15.1–15.9 µs on one goroutine and 8.6–9.1 on two (wall time,
// BenchmarkGemmPackedB, five rounds at load average 1). Where other
// processes hold the cores it does not: on 2 loaded cores (median of 7
// rounds) the same product took 44 µs on one and 105 µs on two, while
// 8×512×512 took 133 µs on one and 77 µs on two. The threshold follows
// the quiet machine, as the inference benchmarks are run on one; 1×128×784
// (100 K) stays on one goroutine.
const gemmPackedMinWork = 1 << 18

// gemmPackedRange computes rows [r0, r1) and columns [c0, c1) of C (r0 a
// multiple of mr, c0 of nr, so that the tiles are those of the whole
// product) from op(B) packed in pb for a product of n columns.
func gemmPackedRange[T float](kern *gemmKernel[T], ws *gemmScratch[T], transA bool, r0, r1, c0, c1, n, k int, alpha T, a []T, lda int, pb []T, beta T, c []T, ldc int) {
	mr, nr := kern.mr, kern.nr
	kc, np := balancedBlock(k, kern.kc, 1), ceilDiv(n, nr)
	mc := balancedBlock(r1-r0, kern.mc, mr)
	ap, _ := ws.buffers(mc*kc, 0, mr*nr)
	pk := kern.pack.orDefault()
	h := packedHeader[T]()
	// A single row's last panel, when it is narrower than whole vectors,
	// goes through gemvSlices after the loop: all depth slices at once.
	end := c1
	if r1-r0 == 1 && !transA && kern.rowSlices != nil && k > kc && (c1-c0)%nr%kern.lanes != 0 {
		end = c1 - (c1-c0)%nr
	}
	direct := useDirectA(kern, transA, lda)
	for pc := 0; pc < k; pc += kc {
		kb := min(kc, k-pc)
		bs := pb[h+pc*np*nr:]
		bet := beta
		if pc > 0 {
			bet = 1 // later k slices accumulate onto the first
		}
		for ic := r0; ic < r1; ic += mc {
			mb := min(mc, r1-ic)
			cc := c[ic*ldc:]
			jr := c0
			if mb == 1 && !transA && kern.row != nil {
				jr = gemvPanels(kern, a[ic*lda+pc:ic*lda+pc+kb], bs, cc, ws.tmp, kb, c0, end, alpha, bet)
				if jr == end {
					continue
				}
			}
			if direct && mb > 1 {
				for ; jr < c1; jr += nr {
					for ir := 0; ir < mb; ir += mr {
						gemmTileDirectA(kern, a[ic*lda+pc:], lda, bs, ws.tmp, mb, n, kb, ir, jr, alpha, bet, cc, ldc)
					}
				}
				continue
			}
			if mb == 1 && mr > 1 && !transA {
				packRowShort(ap, a[ic*lda+pc:ic*lda+pc+kb], mr)
			} else {
				packA(ap, pk, transA, a, lda, ic, pc, mb, kb, mr)
			}
			for ; jr < c1; jr += nr {
				for ir := 0; ir < mb; ir += mr {
					gemmTile(kern, ap, bs, ws.tmp, mb, n, kb, ir, jr, alpha, bet, cc, ldc)
				}
			}
		}
	}
	if end < c1 {
		gemvSlices(kern, a[r0*lda:r0*lda+k], pb[h:], c[r0*ldc:], ws.tmp, k, kc, np, end, c1, alpha, beta)
	}
}

// gemvPanels computes the columns [c0, c1) of one row of C (cc) from
// the row a of A and B's panels bs (kb deep, column j's panel at
// bs[j·kb:]) with the row kernels, up to rowKernelMax whole panels per
// call, and returns where it stopped: c1, or the start of a last partial
// panel whose width is a whole number of vectors (left to gemmTile). Each
// element gets the bits gemmTile gives it with the 1×nr edge kernels:
// whole panels and whole vectors are stored by the kernel, a partial
// width goes through tmp (mr·nr elements) and mergeTile.
func gemvPanels[T float](kern *gemmKernel[T], a, bs, cc, tmp []T, kb, c0, c1 int, alpha, beta T) int {
	nr := kern.nr
	if kb == 0 {
		return c0
	}
	var zero T
	pstride := kb * nr * int(unsafe.Sizeof(zero))
	jr := c0
	for end := c0 + (c1-c0)/nr*nr; jr < end; {
		p := min(len(kern.row), (end-jr)/nr)
		_, _ = bs[(jr+p*nr)*kb-1], cc[jr+p*nr-1]
		kern.row[p-1](kb, &a[0], &bs[jr*kb], &cc[jr], pstride, alpha, beta)
		jr += p * nr
	}
	if nw := c1 - jr; nw > 0 && nw%kern.lanes != 0 {
		_, _ = bs[(jr+nr)*kb-1], tmp[nr-1]
		kern.row[0](kb, &a[0], &bs[jr*kb], &tmp[0], pstride, alpha, 0)
		mergeTile(cc[jr:], 0, tmp, nr, 1, nw, beta)
		jr = c1
	}
	return jr
}

// packRowShort packs one row of A (kb elements, src) into a panel of
// width mr, d[p·mr] = src[p], and leaves the panel's other rows as they
// are: row i of a tile of C reads only row i of the A panel, and the rows
// past the first are never stored (an edge kernel skips them, a full one
// computes them into the scratch tile that gemmTile discards). A
// matrix–vector product that the row kernels do not take (no row
// kernels, or a last panel of whole vectors) so writes kb elements where
// packA wrote mr·kb, most of them zeros. (With more rows packA's vector
// transposition is faster.)
func packRowShort[T float](d, src []T, mr int) {
	if len(src) == 0 {
		return
	}
	d = d[:(len(src)-1)*mr+1]
	for p, v := range src {
		d[p*mr] = v
	}
}

// packedFor reports whether pb holds op(B) (k×n) packed for kern.
func packedFor[T float](pb []T, kern *gemmKernel[T], k, n int) bool {
	h := packedHeader[T]()
	if len(pb) < h+k*ceilDiv(n, kern.nr)*kern.nr {
		return false
	}
	for i, v := range []uint32{packedMagic, uint32(kern.id), uint32(k), uint32(n)} {
		if toBits(pb[i]) != v {
			return false
		}
	}
	return true
}

// activeKernel is the GEMM kernel Sgemm or Dgemm uses now.
func activeKernel[T float]() *gemmKernel[T] {
	var zero T
	if _, ok := any(zero).(float32); ok {
		return any(sgemmActive.Load()).(*gemmKernel[T])
	}
	return any(dgemmActive.Load()).(*gemmKernel[T])
}

// fromBits stores v in an element's bits, for the header.
func fromBits[T float](v uint32) T {
	var x T
	if unsafe.Sizeof(x) == 4 {
		*(*uint32)(unsafe.Pointer(&x)) = v
	} else {
		*(*uint64)(unsafe.Pointer(&x)) = uint64(v)
	}
	return x
}

// toBits reads what fromBits stored.
func toBits[T float](x T) uint32 {
	if unsafe.Sizeof(x) == 4 {
		return *(*uint32)(unsafe.Pointer(&x))
	}
	b := *(*uint64)(unsafe.Pointer(&x))
	if b>>32 != 0 {
		return math.MaxUint32 // never a header value
	}
	return uint32(b)
}
