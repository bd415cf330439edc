package main

import (
	"fmt"

	"github.com/gopir/gopir/kernels/internal/avo/emit"
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// family is a register-blocked GEMM micro-kernel with its edge variants. The
// main kernel computes
//
//	C[0:mr, 0:nr] = alpha * Ap·Bp + beta * C   (beta == 0: C is not read)
//
// where Ap is a packed k×mr panel of A (mr values of one column of A per k
// step), Bp a packed k×nr panel of B and C row-major with stride ldc
// elements; nr is nv vectors. Variant h×v computes only the first h rows and
// v vectors of that tile from the same packed panels, so edge tiles waste no
// arithmetic.
type family struct {
	name   string
	f64    bool // float64 elements (else float32)
	zmm    bool // AVX-512 with 32 registers (else AVX2+FMA with 16)
	mr, nv int
	unroll int // k steps per loop iteration
	prefA  int // prefetch distance for A in bytes; 0: none
	prefB  int // prefetch distance for B in bytes in the variants of at most mr/2 rows; 0: none
}

var families = []family{
	// 28 accumulators + 2 B vectors + 1 broadcast of 32 zmm registers: a
	// 14×32 tile needs 16 loads per 28 FMAs, and with 28 independent sums
	// it hides the FMA latency of two pipes. 12×32, 8×48 and 6×64 ran as
	// fast in isolation; 14 rows has the fewest C passes per flop.
	{name: "sgemmAVX512", zmm: true, mr: 14, nv: 2, unroll: 4, prefA: 1024, prefB: 8192},
	// 12 accumulators + 2 B + 1 broadcast of 16 ymm registers.
	{name: "sgemmAVX2", mr: 6, nv: 2, unroll: 4},
	{name: "dgemmAVX512", f64: true, zmm: true, mr: 14, nv: 2, unroll: 4, prefA: 1024},
	{name: "dgemmAVX2", f64: true, mr: 6, nv: 2, unroll: 4},
}

func (f family) es() int { // element size in bytes
	if f.f64 {
		return 8
	}
	return 4
}

func (f family) vb() int { // vector size in bytes
	if f.zmm {
		return 64
	}
	return 32
}

func (f family) lanes() int { return f.vb() / f.es() }

func (f family) typ() string {
	if f.f64 {
		return "float64"
	}
	return "float32"
}

func (f family) kernelName(h, v int) string {
	return fmt.Sprintf("%s_%dx%d", f.name, h, v*f.lanes())
}

func (f family) generate() {
	regs := 16
	if f.zmm {
		regs = 32
	}
	// Accumulators, nv B vectors and one broadcast register must fit.
	if f.mr*f.nv+f.nv+1 > regs {
		panic(fmt.Sprintf("%s: %d×%d vectors do not fit in %d registers", f.name, f.mr, f.nv, regs))
	}
	for h := 1; h <= f.mr; h++ {
		for v := 1; v <= f.nv; v++ {
			f.kernel(h, v)
		}
	}
}

func (f family) vec(i int) VecPhysical {
	if f.zmm {
		return emit.Z()[i]
	}
	return []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}[i]
}

func (f family) bcast(m Mem, r VecPhysical) {
	if f.f64 {
		VBROADCASTSD(m, r)
	} else {
		VBROADCASTSS(m, r)
	}
}

func (f family) fma(a, b, acc Op) { // acc += a*b
	if f.f64 {
		VFMADD231PD(a, b, acc)
	} else {
		VFMADD231PS(a, b, acc)
	}
}

func (f family) mul(a, b, dst Op) {
	if f.f64 {
		VMULPD(a, b, dst)
	} else {
		VMULPS(a, b, dst)
	}
}

// tile is the register plan that every h×v micro-kernel of a family
// shares: the h·v accumulators first, then v registers for B's vectors of
// a k step and one for A's broadcast element.
type tile struct {
	f    family
	h, v int
}

func (t tile) acc(i, j int) VecPhysical { return t.f.vec(i*t.v + j) }
func (t tile) b(j int) VecPhysical      { return t.f.vec(t.h*t.v + j) }
func (t tile) a() VecPhysical           { return t.f.vec(t.h*t.v + t.v) }

// update emits one k step of the tile: B's v vectors loaded from bAt(j),
// then for each row i A's element broadcast from aAt(i) and multiplied
// into the row's accumulators, j in order. Every variant (packed, B in
// place, A in place) runs this same sequence, which is why they agree to
// the bit.
func (t tile) update(aAt func(i int) Mem, bAt func(j int) Mem) {
	for j := 0; j < t.v; j++ {
		VMOVUPS(bAt(j), t.b(j))
	}
	for i := 0; i < t.h; i++ {
		t.f.bcast(aAt(i), t.a())
		for j := 0; j < t.v; j++ {
			t.f.fma(t.b(j), t.a(), t.acc(i, j))
		}
	}
}

// kernel emits the variant computing h rows and v vectors of the tile.
func (f family) kernel(h, v int) {
	name := f.kernelName(h, v)
	TEXT(name, NOSPLIT, fmt.Sprintf("func(k int, a, b, c *%s, ldc int, alpha, beta %s)", f.typ(), f.typ()))
	Pragma("noescape")
	if h == f.mr && v == f.nv {
		Doc(fmt.Sprintf("%s is the %s GEMM micro-kernel: C = alpha*A·B + beta*C on a %d×%d tile",
			name, f.name, h, v*f.lanes()),
			"from packed panels (see family in the generator); beta == 0: C is not read.")
	} else {
		Doc(fmt.Sprintf("%s is the %d×%d edge variant of %s.", name, h, v*f.lanes(), f.kernelName(f.mr, f.nv)))
	}

	es, vb := f.es(), f.vb()
	astep, bstep := f.mr*es, f.nv*vb // bytes per k step in the packed panels
	t := tile{f, h, v}

	n, pa, pb, pc, ldc := RCX, RSI, RDI, RDX, R8
	emit.Params("k a b", n, pa, pb)
	f.loadC(pc, ldc)

	f.warmAndZero(t, pc, ldc)

	step := func(u int) {
		aOff, bOff := u*astep, u*bstep
		f.prefetchA(pa, aOff, astep)
		f.prefetchB(pb, bOff, bstep, h)
		t.update(func(i int) Mem { return Mem{Base: pa, Disp: aOff + i*es} },
			func(j int) Mem { return Mem{Base: pb, Disp: bOff + j*vb} })
	}

	f.kLoop(n, step, func(u int) {
		ADDQ(U32(u*astep), pa)
		ADDQ(U32(u*bstep), pb)
	})

	f.storeTile(t, pc, ldc)
}

// loadC loads the parameters c and ldc, ldc turned from elements into
// bytes.
func (f family) loadC(pc, ldc GPPhysical) {
	emit.Params("c ldc", pc, ldc)
	SHLQ(U8(map[int]int{4: 2, 8: 3}[f.es()]), ldc)
}

// prefetchA prefetches packed A f.prefA bytes ahead, once per 64 bytes:
// at the k step whose astep bytes from aOff cross a line.
func (f family) prefetchA(pa GPPhysical, aOff, astep int) {
	if f.prefA > 0 && aOff%64 < astep {
		PREFETCHT0(Mem{Base: pa, Disp: aOff + f.prefA})
	}
}

// prefetchB prefetches packed B f.prefB bytes ahead, every line of the
// k step at bOff, in the variants of at most mr/2 rows. There a k step
// has few multiply-adds per line of B, and where B streams from memory —
// a convolution's weights at batch 1, which the transposed product reads
// as B with 4 or 16 output positions as rows — the hardware prefetcher
// left the kernel waiting on it: resnet18ish's 512→512 3×3 on 2×2 maps,
// weights from memory, one thread, CPU µs: 582–681 → 329–338, about 15 →
// 28 GB/s (8 KiB ahead; the full-height kernel with it too made the
// 256→256 layer on 4×4 maps, 14 + 2 rows, 30% slower).
func (f family) prefetchB(pb GPPhysical, bOff, bstep, h int) {
	if f.prefB == 0 || 2*h > f.mr {
		return
	}
	for off := 0; off < bstep; off += 64 {
		PREFETCHT0(Mem{Base: pb, Disp: bOff + off + f.prefB})
	}
}

// warmAndZero prefetches the h rows of the C tile at pc (ldc bytes
// apart) while the k loop runs, and clears the accumulators.
func (f family) warmAndZero(t tile, pc, ldc GPPhysical) {
	h, v := t.h, t.v
	Comment("Warm the C tile while the k loop runs.")
	row := R9
	MOVQ(pc, row)
	for i := 0; i < h; i++ {
		for off := 0; off < v*f.vb(); off += 64 {
			PREFETCHT0(Mem{Base: row, Disp: off})
		}
		if i+1 < h {
			ADDQ(ldc, row)
		}
	}

	for i := 0; i < h; i++ {
		for j := 0; j < v; j++ {
			r := t.acc(i, j)
			if f.zmm {
				VPXORD(r, r, r)
			} else {
				VXORPS(r, r, r)
			}
		}
	}
}

// kLoop runs step over the n k steps, f.unroll at a time and then one by
// one; advance(u) moves the operands' pointers past u steps.
func (f family) kLoop(n GPPhysical, step func(u int), advance func(u int)) {
	U := f.unroll
	CMPQ(n, U8(U))
	JL(LabelRef("tail"))
	Label("loop")
	for u := 0; u < U; u++ {
		step(u)
	}
	advance(U)
	SUBQ(U8(U), n)
	CMPQ(n, U8(U))
	JGE(LabelRef("loop"))

	Label("tail")
	TESTQ(n, n)
	JE(LabelRef("store"))
	Label("tailloop")
	step(0)
	advance(1)
	DECQ(n)
	JNZ(LabelRef("tailloop"))
}

// storeTile is the end of a tile kernel, from the label "store" that
// kLoop jumps to: it writes the accumulators to the C tile at pc, C =
// alpha*acc + beta*C, or alpha*acc where beta is zero (C is then not
// read). The B and broadcast registers are free by then and hold alpha
// and beta.
func (f family) storeTile(t tile, pc, ldc GPPhysical) {
	Label("store")
	h, v, acc := t.h, t.v, t.acc
	valpha, vbeta := t.b(0), t.a()
	vb := f.vb()
	alpha, _ := Param("alpha").Resolve()
	beta, _ := Param("beta").Resolve()
	f.bcast(alpha.Addr, valpha)
	if f.f64 {
		MOVQ(beta.Addr, RAX)
		ADDQ(RAX, RAX) // drops the sign bit: zero iff beta is ±0
	} else {
		MOVL(beta.Addr, EAX)
		ADDL(EAX, EAX)
	}
	JE(LabelRef("store0"))

	Comment("C = alpha*acc + beta*C")
	f.bcast(beta.Addr, vbeta)
	for i := 0; i < h; i++ {
		for j := 0; j < v; j++ {
			m := Mem{Base: pc, Disp: j * vb}
			f.mul(valpha, acc(i, j), acc(i, j))
			f.fma(m, vbeta, acc(i, j))
			VMOVUPS(acc(i, j), m)
		}
		if i+1 < h {
			ADDQ(ldc, pc)
		}
	}
	VZEROUPPER()
	RET()

	Label("store0")
	Comment("beta == 0: C is write-only, so NaNs already there do not propagate.")
	for i := 0; i < h; i++ {
		for j := 0; j < v; j++ {
			f.mul(valpha, acc(i, j), acc(i, j))
			VMOVUPS(acc(i, j), Mem{Base: pc, Disp: j * vb})
		}
		if i+1 < h {
			ADDQ(ldc, pc)
		}
	}
	VZEROUPPER()
	RET()
}
