package kernels

import "unsafe"

// A product with op(B) packed once (GemmPackedB) split over goroutines by
// columns of C has each goroutine compute blocks that share rows of
// op(A). Where gemmPackedRange cannot read op(A) in place (useDirectA: A
// transposed, a row stride of 2 KiB multiples) it packs a block's rows of op(A) slice by slice as it goes, so
// a goroutine that computes two blocks of the same rows packed them
// twice: with B already packed, that packing is the only overhead left
// (on a loaded machine the caller often computes every block because the
// helper has no core). So when op(A)'s rows of a block, packed
// in every depth slice, are small, a goroutine packs them all at once and
// keeps them for its next block of the same rows. Each goroutine packs
// into its own scratch: sharing one packed A between the cores was tried
// and made the two-goroutine case slower (the other core's caches, and a
// wait for the packing to complete). Each tile is the same kernel call on
// the same panels as in gemmPackedRange, so the bits are the same.

// heldAMax is the most bytes of packed op(A) a goroutine keeps: with B's
// panels they must stay in its L2.
const heldAMax = 512 << 10

// heldA says which rows of op(A) a goroutine's scratch holds packed.
type heldA struct {
	ok     bool
	r0, r1 int
}

// heldABytes is the size of rows×k of op(A) packed for kern.
func heldABytes[T float](kern *gemmKernel[T], rows, k int) int {
	var zero T
	return ceilDiv(rows, kern.mr) * kern.mr * k * int(unsafe.Sizeof(zero))
}

// gemmHeldARange is gemmPackedRange for rows [r0, r1) of C (r0 a multiple
// of mr) with every depth slice of those rows of op(A) packed in ws.a
// first, unless held says it holds them already.
func gemmHeldARange[T float](kern *gemmKernel[T], ws *gemmScratch[T], held *heldA, transA bool, r0, r1, c0, c1, n, k int, alpha T, a []T, lda int, pb []T, beta T, c []T, ldc int) {
	mr, nr := kern.mr, kern.nr
	kc, np := balancedBlock(k, kern.kc, 1), ceilDiv(n, nr)
	mp := ceilDiv(r1-r0, mr) * mr
	ap, _ := ws.buffers(mp*k, 0, mr*nr)
	if !held.ok || held.r0 != r0 || held.r1 != r1 {
		pk := kern.pack.orDefault()
		for pc := 0; pc < k; pc += kc {
			packA(ap[pc*mp:], pk, transA, a, lda, r0, pc, r1-r0, min(kc, k-pc), mr)
		}
		*held = heldA{true, r0, r1}
	}
	h := packedHeader[T]()
	cc := c[r0*ldc:]
	for pc := 0; pc < k; pc += kc {
		kb := min(kc, k-pc)
		as, bs := ap[pc*mp:], pb[h+pc*np*nr:]
		bet := beta
		if pc > 0 {
			bet = 1 // later k slices accumulate onto the first
		}
		for jr := c0; jr < c1; jr += nr {
			for ir := 0; ir < r1-r0; ir += mr {
				gemmTile(kern, as, bs, ws.tmp, r1-r0, n, kb, ir, jr, alpha, bet, cc, ldc)
			}
		}
	}
}
