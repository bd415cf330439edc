// Command perfgen generates kernels/perf_amd64.s and its Go declarations:
// AVX-512 loops of the training-step kernels that Go cannot vectorise
// (the Adam update, the ReLU gradient, 2×2 max pooling, the direct
// convolutions, col2im with unit and stride-2 columns), of the batched
// convolution's im2col packers and of the fused convolutions' epilogue.
// Each computes exactly what its portable Go loop in package kernels computes,
// operation for operation, so results are bitwise the same with or
// without it. With -table it also writes the Go file that lists the
// convolution kernels by shape (perf_table_amd64.go), so that a new shape
// is a change here only.
//
// It lives in kernels/internal/avo, the one module of the avo generators,
// so that package kernels never depends on avo.
// Run it through `go generate ./kernels/` from the main module.
package main

import (
	"flag"
	"fmt"
	"log"

	"github.com/gopir/gopir/kernels/internal/avo/emit"
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	table := flag.String("table", "", "Go file listing the convolution kernels by shape")
	flag.Parse()

	ConstraintExpr("!purego")
	adamF32()
	reluGradF32()
	block2DF32("copy2DF32AVX512", false)
	block2DF32("add2DF32AVX512", true)
	maxPool2x2F32()
	maxPool2x2GradF32()
	col2imGatherF32()
	col2imStride2F32()
	reluF32()
	for ob := 1; ob <= convRowsMaxOB; ob++ {
		for rows := 1; rows <= convRows(ob); rows++ {
			convRowsF32(ob, rows)
		}
	}
	for ob := 1; ob <= convRowsMaxOB; ob++ {
		for rows := 1; rows <= convRows(ob); rows++ {
			convRowsEpiF32(ob, rows)
		}
	}
	for kw := 1; kw <= convFilterMaxKW; kw++ {
		for ob := 1; ob <= convFilterOB(kw); ob++ {
			convFilterF32(ob, kw)
		}
	}
	for nv := 1; nv <= 2; nv++ {
		convPackF32(nv, false)
		convPackF32(nv, true)
		convPackPairsF32(nv)
	}
	for _, res := range []bool{false, true} {
		for _, relu := range []bool{false, true} {
			epiPlanesF32(res, relu)
		}
	}
	if *table != "" {
		if err := writeTable(*table); err != nil {
			log.Fatal(err)
		}
	}
	Generate()
}

// adamF32 emits adamF32AVX512(param, grad, mom, vel *float32, n int, c *[8]float64),
// one Adam step on n elements (n a multiple of 8), in float64 as
// adamRef does. c holds β1, 1−β1, β2, 1−β2, √(1−β2^t), ε, −lr/(1−β1^t)
// and the decoupled decay factor (1 when there is none).
func adamF32() {
	emit.Func("adamF32AVX512", "func(param, grad, mom, vel *float32, n int, c *[8]float64)",
		"adamF32AVX512 is adamRef on float32 slices of length n, n%8 == 0, eight elements at a time.")
	p, g, m, v, n, c := RDI, RSI, RDX, RCX, R8, R9
	emit.Params("param grad mom vel n c", p, g, m, v, n, c)
	b1, omb1, b2, omb2, bc2, eps, step, decay := Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23
	for i, z := range []VecPhysical{b1, omb1, b2, omb2, bc2, eps, step, decay} {
		VBROADCASTSD(Mem{Base: c, Disp: 8 * i}, z)
	}
	XORQ(RAX, RAX) // element index
	SHRQ(U8(3), n)
	JE(LabelRef("done"))
	Label("loop")
	pi, gi, mi, vi, t := Z0, Z1, Z2, Z3, Z4
	VCVTPS2PD(Mem{Base: p, Index: RAX, Scale: 4}, pi)
	VCVTPS2PD(Mem{Base: g, Index: RAX, Scale: 4}, gi)
	VCVTPS2PD(Mem{Base: m, Index: RAX, Scale: 4}, mi)
	VCVTPS2PD(Mem{Base: v, Index: RAX, Scale: 4}, vi)
	VMULPD(decay, pi, pi) // p·decay
	// m = T(m·β1 + (1−β1)·g)
	VMULPD(b1, mi, mi)
	VMULPD(gi, omb1, t)
	VADDPD(t, mi, mi)
	VCVTPD2PS(mi, Y5)
	VMOVUPS(Y5, Mem{Base: m, Index: RAX, Scale: 4})
	VCVTPS2PD(Y5, mi)
	// v = T(v·β2 + ((1−β2)·g)·g)
	VMULPD(b2, vi, vi)
	VMULPD(gi, omb2, t)
	VMULPD(gi, t, t)
	VADDPD(t, vi, vi)
	VCVTPD2PS(vi, Y6)
	VMOVUPS(Y6, Mem{Base: v, Index: RAX, Scale: 4})
	VCVTPS2PD(Y6, vi)
	// p = T(p + (step·m)/(√v/bc2 + ε))
	VSQRTPD(vi, vi)
	VDIVPD(bc2, vi, vi)
	VADDPD(eps, vi, vi)
	VMULPD(mi, step, t)
	VDIVPD(vi, t, t)
	VADDPD(t, pi, pi)
	VCVTPD2PS(pi, Y7)
	VMOVUPS(Y7, Mem{Base: p, Index: RAX, Scale: 4})
	ADDQ(U8(8), RAX)
	DECQ(n)
	JNE(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

// reluGradF32 emits reluGradF32AVX512(out, y, dy *float32, n int):
// out[i] = dy[i] where y[i] > 0, else 0 (also for a NaN y), n a multiple
// of 16. out may be y or dy.
func reluGradF32() {
	emit.Func("reluGradF32AVX512", "func(out, y, dy *float32, n int)",
		"reluGradF32AVX512 sets out[i] = dy[i] if y[i] > 0, else 0, for n%16 == 0 elements.")
	out, y, dy, n := RDI, RSI, RDX, RCX
	emit.Params("out y dy n", out, y, dy, n)
	VPXORD(Z31, Z31, Z31)
	XORQ(RAX, RAX)
	SHRQ(U8(5), n)
	JE(LabelRef("tail"))
	Label("loop")
	VMOVUPS(Mem{Base: y, Index: RAX, Scale: 4}, Z0)
	VMOVUPS(Mem{Base: y, Index: RAX, Scale: 4, Disp: 64}, Z1)
	VCMPPS(U8(0x1e), Z31, Z0, K1) // y > 0, ordered (NaN false)
	VCMPPS(U8(0x1e), Z31, Z1, K2)
	VMOVUPS_Z(Mem{Base: dy, Index: RAX, Scale: 4}, K1, Z2)
	VMOVUPS_Z(Mem{Base: dy, Index: RAX, Scale: 4, Disp: 64}, K2, Z3)
	VMOVUPS(Z2, Mem{Base: out, Index: RAX, Scale: 4})
	VMOVUPS(Z3, Mem{Base: out, Index: RAX, Scale: 4, Disp: 64})
	ADDQ(U8(32), RAX)
	DECQ(n)
	JNE(LabelRef("loop"))
	Label("tail")
	// One block of 16 may remain.
	Load(Param("n"), n)
	ANDQ(U8(16), n)
	JE(LabelRef("done"))
	VMOVUPS(Mem{Base: y, Index: RAX, Scale: 4}, Z0)
	VCMPPS(U8(0x1e), Z31, Z0, K1)
	VMOVUPS_Z(Mem{Base: dy, Index: RAX, Scale: 4}, K1, Z2)
	VMOVUPS(Z2, Mem{Base: out, Index: RAX, Scale: 4})
	Label("done")
	VZEROUPPER()
	RET()
}

// block2DF32 emits name(dst, src *float32, dstStride, srcStride, rows, cols
// int), which copies (add: adds) a rows×cols block of src, rows srcStride
// elements apart, into dst, rows dstStride elements apart: 16 columns per
// instruction, the last partial group under a mask. The rows must not
// overlap. The adds are dst + src in float32, as Go's dst[k] += src[k].
func block2DF32(name string, add bool) {
	what := "copies"
	if add {
		what = "adds"
	}
	emit.Func(name, "func(dst, src *float32, dstStride, srcStride, rows, cols int)",
		name+" "+what+" a rows×cols float32 block of src (row stride srcStride) into dst (row stride dstStride).")
	dst, src, ds, ss, rows, cols := RDI, RSI, RDX, R8, R9, R10
	emit.Params("dst src dstStride srcStride rows cols", dst, src, ds, ss, rows, cols)
	SHLQ(U8(2), ds)
	SHLQ(U8(2), ss)
	TESTQ(rows, rows)
	JE(LabelRef("done"))
	// K1 masks the cols%16 columns of the last group.
	MOVQ(cols, RCX)
	ANDQ(U8(15), RCX)
	MOVL(U32(1), EAX)
	SHLL(CL, EAX)
	DECL(EAX)
	KMOVW(EAX, K1)
	SHRQ(U8(4), cols) // full groups per row
	Label("row")
	MOVQ(src, R11)
	MOVQ(dst, R12)
	MOVQ(cols, R13)
	TESTQ(R13, R13)
	JE(LabelRef("tail"))
	Label("group")
	VMOVUPS(Mem{Base: R11}, Z0)
	if add {
		VADDPS(Mem{Base: R12}, Z0, Z0)
	}
	VMOVUPS(Z0, Mem{Base: R12})
	ADDQ(U8(64), R11)
	ADDQ(U8(64), R12)
	DECQ(R13)
	JNE(LabelRef("group"))
	Label("tail")
	// No partial group (cols a multiple of 16): skip the masked moves,
	// which cost as much as a group even with an empty mask.
	TESTQ(RCX, RCX)
	JE(LabelRef("next"))
	VMOVUPS_Z(Mem{Base: R11}, K1, Z0)
	if add {
		VMOVUPS_Z(Mem{Base: R12}, K1, Z1)
		VADDPS(Z0, Z1, Z0)
	}
	VMOVUPS(Z0, K1, Mem{Base: R12})
	Label("next")
	ADDQ(ss, src)
	ADDQ(ds, dst)
	DECQ(rows)
	JNE(LabelRef("row"))
	Label("done")
	VZEROUPPER()
	RET()
}

// evenBitsMem holds evenBits's constant once emitted.
var evenBitsMem *Mem

// evenBits returns a 32-bit constant with the even bits of a 16-lane mask
// set (0x5555), PDEP's selector, emitting it on first use.
func evenBits() Mem {
	if evenBitsMem == nil {
		m := GLOBL("perfEvenBits", RODATA|NOPTR)
		DATA(0, U32(0x5555))
		evenBitsMem = &m
	}
	return *evenBitsMem
}

// loadWindows loads rows 2y (at pIn, into Z0:Z1) and 2y+1 (w floats on,
// into Z2:Z3), 32 inputs each under the masks K1 and K2, and splits them
// into the four elements of 16 windows: a, b from row 2y (even and odd
// columns), c, d from row 2y+1, in Z4..Z7. It clobbers RAX.
func loadWindows(pIn, w GPPhysical, zEven, zOdd VecPhysical) (a, b, c, d VecPhysical) {
	VMOVUPS_Z(Mem{Base: pIn}, K1, Z0)
	VMOVUPS_Z(Mem{Base: pIn, Disp: 64}, K2, Z1)
	LEAQ(Mem{Base: pIn, Index: w, Scale: 4}, RAX)
	VMOVUPS_Z(Mem{Base: RAX}, K1, Z2)
	VMOVUPS_Z(Mem{Base: RAX, Disp: 64}, K2, Z3)
	a, b, c, d = Z4, Z5, Z6, Z7
	VMOVAPS(Z0, a)
	VPERMT2PS(Z1, zEven, a)
	VMOVAPS(Z0, b)
	VPERMT2PS(Z1, zOdd, b)
	VMOVAPS(Z2, c)
	VPERMT2PS(Z3, zEven, c)
	VMOVAPS(Z2, d)
	VPERMT2PS(Z3, zOdd, d)
	return a, b, c, d
}

// maxPool2x2F32 emits maxPool2x2F32AVX512(x, out *float32, idx *int64,
// w, oh, ow int): 2×2 max pooling with stride 2 of one plane of width w
// (2·ow ≤ w, 2·oh rows), as maxPool2x2Plane: per window a, b (row 2y),
// c, d (row 2y+1) are scanned in that order, a later one taking over if it
// is NaN or greater while the best so far is not NaN. 16 outputs at a
// time: the two input rows are split into even and odd columns with
// VPERMT2PS; idx gets the in-plane flat index of each maximum.
func maxPool2x2F32() {
	even, odd := emit.EvenOddLanes("perf")

	emit.Func("maxPool2x2F32AVX512", "func(x, out *float32, idx *int64, w, oh, ow int)",
		"maxPool2x2F32AVX512 is maxPool2x2Plane on one float32 plane, 16 outputs at a time.")
	x, out, ix, w, oh, ow := RSI, RDI, RDX, R8, R9, R10
	emit.Params("x out idx w oh ow", x, out, ix, w, oh, ow)
	zEven, zOdd, zW, zW1, zOne := Z16, Z17, Z18, Z19, Z20
	VMOVDQU32(even, zEven)
	VMOVDQU32(odd, zOdd)
	MOVQ(U64(1), RAX)
	VPBROADCASTD(EAX, zOne)
	VPBROADCASTD(R8L, zW)
	VPADDD(zOne, zW, zW1)
	// BX: flat index of the row pair's first element (2y·w).
	XORQ(RBX, RBX)
	TESTQ(oh, oh)
	JE(LabelRef("done"))
	TESTQ(ow, ow)
	JE(LabelRef("done"))
	Label("row")
	pIn, pOut, pIdx, rem, base := R11, R12, R13, RCX, RBX
	MOVQ(x, pIn)
	MOVQ(out, pOut)
	MOVQ(ix, pIdx)
	MOVQ(ow, rem)
	PUSHQ(base)
	Label("chunk")
	// cnt = min(16, rem) outputs; masks for 2·cnt inputs and cnt outputs.
	MOVQ(rem, RAX)
	CMPQ(RAX, U8(16))
	JLE(LabelRef("small"))
	MOVQ(U32(16), RAX)
	Label("small")
	PUSHQ(rem)
	MOVQ(RAX, RCX)
	MOVQ(U32(1), R14)
	SHLQ(CL, R14)
	DECQ(R14) // (1<<cnt)-1
	KMOVW(R14L, K3)
	KMOVW(R14L, K4)
	SHRQ(U8(8), R14)
	KMOVW(R14L, K5)
	ADDQ(RCX, RCX) // 2·cnt
	MOVQ(U32(1), R14)
	SHLQ(CL, R14)
	DECQ(R14)
	KMOVW(R14L, K1)
	SHRQ(U8(16), R14)
	KMOVW(R14L, K2)
	POPQ(rem)
	// Rows 2y (Z0:Z1) and 2y+1 (Z2:Z3), 32 inputs each.
	a, b, c, d := loadWindows(pIn, w, zEven, zOdd)
	// Candidate indices: a at base + 2j.
	ia, best, ib := Z8, Z9, Z10
	VPBROADCASTD(EBX, ia)
	VPADDD(zEven, ia, ia)
	VMOVAPS(a, best)
	VMOVDQA32(ia, ib)
	VCMPPS(U8(7), best, best, K6) // best is not NaN
	for _, cand := range []struct {
		v     VecPhysical
		delta VecPhysical
	}{{b, zOne}, {c, zW}, {d, zW1}} {
		VCMPPS(U8(3), cand.v, cand.v, K1)  // v is NaN
		VCMPPS(U8(0x1e), best, cand.v, K2) // v > best
		KORW(K1, K2, K7)
		KANDW(K6, K7, K7)
		VMOVAPS(cand.v, K7, best)
		VPADDD(cand.delta, ia, Z11)
		VMOVDQA32(Z11, K7, ib)
		VCMPPS(U8(7), best, best, K6)
	}
	VMOVUPS(best, K3, Mem{Base: pOut})
	VPMOVSXDQ(ib.AsY(), Z12)
	VMOVDQU64(Z12, K4, Mem{Base: pIdx})
	VEXTRACTI32X8(U8(1), ib, Y13)
	VPMOVSXDQ(Y13, Z13)
	VMOVDQU64(Z13, K5, Mem{Base: pIdx, Disp: 64})
	ADDQ(U32(128), pIn)
	ADDQ(U8(64), pOut)
	ADDQ(U32(128), pIdx)
	ADDQ(U8(32), base)
	SUBQ(U8(16), rem)
	JG(LabelRef("chunk"))
	POPQ(base)
	// Next row pair.
	LEAQ(Mem{Base: x, Index: w, Scale: 8}, x)
	LEAQ(Mem{Base: out, Index: ow, Scale: 4}, out)
	LEAQ(Mem{Base: ix, Index: ow, Scale: 8}, ix)
	LEAQ(Mem{Base: base, Index: w, Scale: 2}, base)
	DECQ(oh)
	JNE(LabelRef("row"))
	Label("done")
	VZEROUPPER()
	RET()
}

// reluF32 emits reluF32AVX512(out, x *float32, n int): out[i] = max(x[i],
// 0) bit for bit as Go's max computes it on amd64 (−min(−x, −0) by MINSS
// both ways, OR'ed): a NaN comes back with its sign bit cleared, −0 and
// negatives give +0. So: x with the sign cleared where x > 0 or x is NaN
// (predicate NLE_UQ), else +0, with a zero-masking AND; n a multiple of 16.
func reluF32() {
	emit.Func("reluF32AVX512", "func(out, x *float32, n int)",
		"reluF32AVX512 sets out[i] = max(x[i], 0) for n%16 == 0 elements; out may be x.")
	out, x, n := RDI, RSI, RCX
	emit.Params("out x n", out, x, n)
	VPXORD(Z31, Z31, Z31)
	MOVL(U32(0x7fffffff), EAX)
	VPBROADCASTD(EAX, Z30)
	XORQ(RAX, RAX)
	SHRQ(U8(4), n)
	JE(LabelRef("done"))
	Label("loop")
	VMOVUPS(Mem{Base: x, Index: RAX, Scale: 4}, Z0)
	VCMPPS(U8(6), Z31, Z0, K1) // !(x <= 0): x > 0 or NaN
	VPANDD_Z(Z30, Z0, K1, Z0)
	VMOVUPS(Z0, Mem{Base: out, Index: RAX, Scale: 4})
	ADDQ(U8(16), RAX)
	DECQ(n)
	JNE(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

// convRowsMaxOB is the most output channels of a direct-convolution
// kernel.
const convRowsMaxOB = 16

// convRows returns how many output rows the direct-convolution kernel for
// ob output channels handles per call: enough independent accumulator
// chains (rows × ob ≤ 28 registers) to keep both FMA pipes busy, at most 6.
func convRows(ob int) int { return min(6, 28/ob) }

// convRowsF32 emits convRowsF32_<ob>x<rows>(in *float32, at int, offs
// *int64, w *float32, nsteps int, out *float32, ostride, mask, rs, ors
// int), the inner loop of the direct convolutions: for rows r < rows and
// ob output channels o, 16 lanes l,
//
//	out[r·ors + o·ostride + l] = Σ_s w[s·ob + o] · in[at + r·rs + offs[s] + l]   (lanes in mask)
//
// one fused multiply-add per step, s = 0, 1, … in order, from 0. Lanes
// outside mask are not stored; the loads read all 16 lanes.
func convRowsF32(ob, rows int) {
	name := fmt.Sprintf("convRowsF32_%dx%d", ob, rows)
	emit.Func(name, "func(in *float32, at int, offs *int64, w *float32, nsteps int, out *float32, ostride, mask, rs, ors int)",
		fmt.Sprintf("%s computes %d rows of %d output channels of 16 lanes of a direct convolution (see convRows).", name, rows, ob))
	in, offs, w, n, out, os, rs := RSI, RDX, RBX, RCX, RDI, R8, R9
	emit.Params("in offs w nsteps out ostride rs at mask", in, offs, w, n, out, os, rs, R12, RAX)
	KMOVW(EAX, K1)
	z := emit.Z()
	acc := func(r, o int) VecPhysical { return z[r*ob+o] }
	convRowsSteps(ob, rows, in, offs, w, n, rs, z)
	SHLQ(U8(2), os)
	Load(Param("ors"), R10)
	SHLQ(U8(2), R10)
	for r := 0; r < rows; r++ {
		MOVQ(out, R11)
		for o := 0; o < ob; o++ {
			VMOVUPS(acc(r, o), K1, Mem{Base: R11})
			if o+1 < ob {
				ADDQ(os, R11)
			}
		}
		if r+1 < rows {
			ADDQ(R10, out)
		}
	}
	VZEROUPPER()
	RET()
}

// convRowsSteps emits the k loop that convRowsF32 and convRowsEpiF32
// share: it clears the rows·ob accumulators z[r·ob+o], then for each of
// the n steps (offsets at offs, R12 added; weights at w) loads each row's
// 16 lanes into a temporary register and multiply-adds it with the step's
// ob weights; it ends at the label "store". With more than one row, the
// first convWeightRegs(ob, rows) weights are broadcast into registers once
// per step and reused by every row (a step then loads ob + rows values for
// rows·ob multiply-adds, not rows + rows·ob); the others, and all with one
// row, are broadcast from memory by each multiply-add. Either way each
// accumulator gets one fused multiply-add per step, in step order, with
// the same operands, so the bits do not depend on which. The registers
// past the accumulators (z[rows·ob:]) are clobbered.
func convRowsSteps(ob, rows int, in, offs, w, n, rs GPPhysical, z []VecPhysical) {
	acc := func(r, o int) VecPhysical { return z[r*ob+o] }
	k := convWeightRegs(ob, rows)
	wr := z[rows*ob : rows*ob+k]
	temps := z[rows*ob+k:]
	temps = temps[:min(4, len(temps))]
	for i := 0; i < rows*ob; i++ {
		VPXORD(z[i], z[i], z[i])
	}
	TESTQ(n, n)
	JE(LabelRef("store"))
	Label("step")
	MOVQ(Mem{Base: offs}, RAX)
	ADDQ(R12, RAX)
	for o := 0; o < k; o++ {
		VBROADCASTSS(Mem{Base: w, Disp: 4 * o}, wr[o])
	}
	for r := 0; r < rows; r++ {
		t := temps[r%len(temps)]
		VMOVUPS(Mem{Base: in, Index: RAX, Scale: 4}, t)
		if r+1 < rows {
			ADDQ(rs, RAX)
		}
		for o := 0; o < ob; o++ {
			if o < k {
				VFMADD231PS(wr[o], t, acc(r, o))
			} else {
				VFMADD231PS_BCST(Mem{Base: w, Disp: 4 * o}, t, acc(r, o))
			}
		}
	}
	ADDQ(U8(8), offs)
	ADDQ(U32(4*ob), w)
	DECQ(n)
	JNE(LabelRef("step"))
	Label("store")
}

// convWeightRegs is how many of a step's ob weights convRowsSteps keeps in
// registers for rows rows: none for one row (no reuse), else as many as
// fit beside the rows·ob accumulators and two input registers.
func convWeightRegs(ob, rows int) int {
	if rows == 1 {
		return 0
	}
	return max(0, min(ob, 32-rows*ob-2))
}

// convRowsEpiF32 emits convRowsEpiF32_<ob>x<rows>(in *float32, at int,
// offs *int64, w *float32, nsteps int, out *float32, ostride, mask, rs,
// ors int, bias *float32, flags, reps int): reps calls of
// convRowsF32_<ob>x<rows> down the map (the k-th at at + k·rows·rs,
// storing at out + k·rows·ors), each output vector finished before its
// store by, as flags say: with convRowsAdd the value already in out added
// as the GEMM's micro-kernel adds a later slice of the depth onto C (one
// fused multiply-add, acc + 1·out, its operands in that kernel's order);
// with convRowsBias a fused convolution's epilogue, v + bias[o] (the sum
// as first operand), then with convRowsRelu ReLU as
// epiPlanesF32AVX512Relu computes it (v kept where !(v <= 0), sign bit
// cleared; else +0). So the stored bits are those of the plain kernel
// (or the GEMM's slices) followed by epiPlanes' one-pass epilogue,
// without a second pass over the output, and the loop over a block's rows
// runs here instead of a Go call per row. With rows even, convRowsPool
// stores the rows' 2×2 max pool instead (convRowsPool2x2), out, ostride
// and ors then addressing the pooled planes.
func convRowsEpiF32(ob, rows int) {
	name := fmt.Sprintf("convRowsEpiF32_%dx%d", ob, rows)
	emit.Func(name, "func(in *float32, at int, offs *int64, w *float32, nsteps int, out *float32, ostride, mask, rs, ors int, bias *float32, flags, reps int)",
		fmt.Sprintf("%s computes reps×%d rows of %d output channels of 16 lanes of a direct convolution, adding them to out's values, its bias and ReLU as flags say (see convRowsEpi).", name, rows, ob))
	in, offs, w, n, out, os, rs, ors, bias, reps := RSI, RDX, RBX, RCX, RDI, R8, R9, R10, R11, R13
	emit.Params("in out ostride", in, out, os)
	SHLQ(U8(2), os)
	emit.Params("rs ors", rs, ors)
	SHLQ(U8(2), ors)
	emit.Params("at bias reps mask", R12, bias, reps, RAX)
	KMOVW(EAX, K1)
	z := emit.Z()
	acc := func(r, o int) VecPhysical { return z[r*ob+o] }
	TESTQ(reps, reps)
	JE(LabelRef("done"))
	Label("rep")
	emit.Params("offs w nsteps", offs, w, n)
	convRowsSteps(ob, rows, in, offs, w, n, rs, z)
	// The steps may have used Z30 and Z31: they are set here, once per rep.
	Load(Param("flags"), RAX)
	TESTQ(U32(convRowsAdd), RAX)
	JE(LabelRef("bias"))
	MOVL(U32(0x3f800000), EAX) // 1.0
	VPBROADCASTD(EAX, Z31)
	for r := 0; r < rows; r++ {
		MOVQ(out, RAX)
		for range r {
			ADDQ(ors, RAX)
		}
		for o := 0; o < ob; o++ {
			VMOVUPS_Z(Mem{Base: RAX}, K1, Z30)
			VFMADD231PS(Z30, Z31, acc(r, o)) // acc + 1·out, as the GEMM's acc + beta·C
			if o+1 < ob {
				ADDQ(os, RAX)
			}
		}
	}
	Label("bias")
	Load(Param("flags"), RAX)
	TESTQ(U32(convRowsBias), RAX)
	JE(LabelRef("relu"))
	for r := 0; r < rows; r++ {
		for o := 0; o < ob; o++ {
			VADDPS_BCST(Mem{Base: bias, Disp: 4 * o}, acc(r, o), acc(r, o))
		}
	}
	Label("relu")
	Load(Param("flags"), RAX)
	TESTQ(U32(convRowsRelu), RAX)
	JE(LabelRef("put"))
	VPXORD(Z31, Z31, Z31)
	MOVL(U32(0x7fffffff), EAX)
	VPBROADCASTD(EAX, Z30)
	for r := 0; r < rows; r++ {
		for o := 0; o < ob; o++ {
			VCMPPS(U8(6), Z31, acc(r, o), K2) // !(v <= 0): v > 0 or NaN
			VPANDD_Z(Z30, acc(r, o), K2, acc(r, o))
		}
	}
	Label("put")
	if rows%2 == 0 {
		Load(Param("flags"), RAX)
		TESTQ(U32(convRowsPool), RAX)
		JNE(LabelRef("pool"))
	}
	for r := 0; r < rows; r++ {
		MOVQ(out, RAX)
		for o := 0; o < ob; o++ {
			VMOVUPS(acc(r, o), K1, Mem{Base: RAX})
			if o+1 < ob {
				ADDQ(os, RAX)
			}
		}
		ADDQ(ors, out)
		ADDQ(rs, R12)
	}
	if rows%2 == 0 {
		JMP(LabelRef("next"))
		convRowsPool2x2(ob, rows, out, os, ors, rs, acc)
	}
	Label("next")
	DECQ(reps)
	JNE(LabelRef("rep"))
	Label("done")
	VZEROUPPER()
	RET()
}

// The flags of convRowsEpiF32, written into package kernels with its
// table (writeTable).
const (
	convRowsRelu = 1 << iota
	convRowsBias
	convRowsAdd
	convRowsPool
)

// convFilterMaxKW is the widest kernel the filter-gradient kernels take.
const convFilterMaxKW = 7

// convFilterOB is the most output channels of a filter-gradient kernel
// for kernel width kw: at most 25 accumulators (ob·kw), beside the ob
// output-gradient vectors (Z25–Z29) and the input (Z30).
func convFilterOB(kw int) int { return min(5, 25/kw) }

// convFilterF32 emits convFilterF32_<ob>x<kw>(dy, x *float32, tab *int64,
// nt int, out *float32, ostride, dystride, dw int), the inner loop of the
// direct filter gradient: for ob output channels o and kw kernel columns j,
//
//	out[o·ostride + j] = Σ_lanes Σ_t dy[tab[3t] + o·dystride + l] · x[tab[3t+1] + j·dw + l]
//
// over the lanes l in the mask tab[3t+2] of each of the nt row pairs,
// accumulated per lane with one fused multiply-add per row pair in order
// (merge-masked, so the lanes outside the mask never see the x values
// there), then summed across lanes by a fixed halving tree. dy is read
// under the mask, x in full (its buffer has 16 elements of slack).
func convFilterF32(ob, kw int) {
	name := fmt.Sprintf("convFilterF32_%dx%d", ob, kw)
	emit.Func(name, "func(dy, x *float32, tab *int64, nt int, out *float32, ostride, dystride, dw int)",
		fmt.Sprintf("%s accumulates %d×%d filter-gradient sums of a direct convolution (see convFilter).", name, ob, kw))
	dy, x, tab, n, ds, dw := RSI, RDI, RDX, RCX, R8, R9
	emit.Params("dy x tab nt dystride dw", dy, x, tab, n, ds, dw)
	SHLQ(U8(2), ds)
	SHLQ(U8(2), dw)
	z := emit.Z()
	acc := func(o, j int) VecPhysical { return z[o*kw+j] }
	dyv := z[25 : 25+ob]
	xv := z[30]
	for i := 0; i < ob*kw; i++ {
		VPXORD(z[i], z[i], z[i])
	}
	TESTQ(n, n)
	JE(LabelRef("reduce"))
	Label("pair")
	MOVQ(Mem{Base: tab, Disp: 16}, RAX)
	KMOVW(EAX, K1)
	MOVQ(Mem{Base: tab}, RAX)
	LEAQ(Mem{Base: dy, Index: RAX, Scale: 4}, R10)
	for o := 0; o < ob; o++ {
		VMOVUPS_Z(Mem{Base: R10}, K1, dyv[o])
		if o+1 < ob {
			ADDQ(ds, R10)
		}
	}
	MOVQ(Mem{Base: tab, Disp: 8}, RAX)
	LEAQ(Mem{Base: x, Index: RAX, Scale: 4}, R11)
	for j := 0; j < kw; j++ {
		VMOVUPS(Mem{Base: R11}, xv)
		if j+1 < kw {
			ADDQ(dw, R11)
		}
		for o := 0; o < ob; o++ {
			VFMADD231PS(dyv[o], xv, K1, acc(o, j))
		}
	}
	ADDQ(U8(24), tab)
	DECQ(n)
	JNE(LabelRef("pair"))
	Label("reduce")
	emit.Params("out ostride", R12, R13)
	SHLQ(U8(2), R13)
	for o := 0; o < ob; o++ {
		for j := 0; j < kw; j++ {
			a := acc(o, j)
			VEXTRACTF64X4(U8(1), a, Y31)
			VADDPS(Y31, a.AsY(), Y31)
			VEXTRACTF32X4(U8(1), Y31, X30)
			VADDPS(X30, X31, X31)
			VPERMILPS(U8(0x4e), X31, X30) // swap the 64-bit halves
			VADDPS(X30, X31, X31)
			VPERMILPS(U8(0xb1), X31, X30) // swap neighbours
			VADDSS(X30, X31, X31)
			VMOVSS(X31, Mem{Base: R12, Disp: 4 * j})
		}
		if o+1 < ob {
			ADDQ(R13, R12)
		}
	}
	VZEROUPPER()
	RET()
}

// maxPool2x2GradF32 emits maxPool2x2GradF32AVX512(x, dy, dx *float32, w,
// oh, ow int): the gradient of 2×2 stride-2 max pooling of one plane from
// its input, as maxPool2x2GradPlane: each window's maximum is found as
// maxPool2x2F32 finds it and gets 0 + dy (so −0 becomes +0, as adding
// into a cleared plane gives); the other three elements get 0. Rows 2y and
// 2y+1 are written over their first 2·ow columns; the caller clears any
// odd last column or row.
func maxPool2x2GradF32() {
	even, odd := emit.EvenOddLanes("perf")
	// Interleaving e (lanes 0..15) and o (16..31): lo = e0 o0 e1 o1 … e7 o7,
	// hi = e8 o8 … e15 o15.
	ilo := GLOBL("perfInterleaveLo", RODATA|NOPTR)
	for i := 0; i < 16; i++ {
		DATA(4*i, U32(i/2+16*(i%2)))
	}
	ihi := GLOBL("perfInterleaveHi", RODATA|NOPTR)
	for i := 0; i < 16; i++ {
		DATA(4*i, U32(8+i/2+16*(i%2)))
	}

	emit.Func("maxPool2x2GradF32AVX512", "func(x, dy, dx *float32, w, oh, ow int)",
		"maxPool2x2GradF32AVX512 is maxPool2x2GradPlane on one float32 plane, 16 windows at a time.")
	x, dy, dx, w, oh, ow := RSI, RDX, RDI, R8, R9, R10
	emit.Params("x dy dx w oh ow", x, dy, dx, w, oh, ow)
	zEven, zOdd, zLo, zHi, zZero := Z16, Z17, Z18, Z19, Z20
	VMOVDQU32(even, zEven)
	VMOVDQU32(odd, zOdd)
	VMOVDQU32(ilo, zLo)
	VMOVDQU32(ihi, zHi)
	VPXORD(zZero, zZero, zZero)
	TESTQ(oh, oh)
	JE(LabelRef("done"))
	TESTQ(ow, ow)
	JE(LabelRef("done"))
	Label("row")
	pIn, pOut, pDy, rem := R11, R12, R13, RBX
	MOVQ(x, pIn)
	MOVQ(dx, pOut)
	MOVQ(dy, pDy)
	MOVQ(ow, rem)
	Label("chunk")
	MOVQ(rem, RAX)
	CMPQ(RAX, U8(16))
	JLE(LabelRef("small"))
	MOVQ(U32(16), RAX)
	Label("small")
	MOVQ(RAX, RCX)
	MOVQ(U32(1), R14)
	SHLQ(CL, R14)
	DECQ(R14) // (1<<cnt)-1
	KMOVW(R14L, K3)
	ADDQ(RCX, RCX) // 2·cnt
	MOVQ(U32(1), R14)
	SHLQ(CL, R14)
	DECQ(R14)
	KMOVW(R14L, K1)
	SHRQ(U8(16), R14)
	KMOVW(R14L, K2)
	a, b, c, d := loadWindows(pIn, w, zEven, zOdd)
	// The scan: K4, K5, K6 say whether b, c, d took over; the winner is
	// the last that did (a if none).
	best := Z9
	VMOVAPS(a, best)
	VCMPPS(U8(7), best, best, K7) // best is not NaN
	for i, cand := range []VecPhysical{b, c, d} {
		k := []OpmaskPhysical{K4, K5, K6}[i]
		VCMPPS(U8(3), cand, cand, K0)   // cand is NaN
		VCMPPS(U8(0x1e), best, cand, k) // cand > best
		KORW(K0, k, k)
		KANDW(K7, k, k)
		VMOVAPS(cand, k, best)
		VCMPPS(U8(7), best, best, K7)
	}
	// Exclusive winners: d if K6; c if K5 and not K6; b if K4 and neither;
	// a (K7) if none took over.
	KNOTW(K6, K7)
	KANDW(K7, K5, K5) // c wins
	KORW(K6, K5, K0)  // c or d wins
	KNOTW(K0, K0)
	KANDW(K0, K4, K4) // b wins
	KORW(K5, K4, K0)
	KORW(K6, K0, K0)
	KNOTW(K0, K7) // a wins
	// 0 + dy for the cnt windows.
	VMOVUPS_Z(Mem{Base: pDy}, K3, Z10)
	VADDPS(zZero, Z10, Z10)
	VMOVAPS_Z(Z10, K7, Z11) // a: even of row 2y
	VMOVAPS_Z(Z10, K4, Z12) // b: odd of row 2y
	VMOVAPS_Z(Z10, K5, Z13) // c: even of row 2y+1
	VMOVAPS_Z(Z10, K6, Z14) // d: odd of row 2y+1
	// Row 2y: interleave a and b.
	VMOVAPS(Z11, Z0)
	VPERMT2PS(Z12, zLo, Z0)
	VMOVAPS(Z11, Z1)
	VPERMT2PS(Z12, zHi, Z1)
	VMOVUPS(Z0, K1, Mem{Base: pOut})
	VMOVUPS(Z1, K2, Mem{Base: pOut, Disp: 64})
	LEAQ(Mem{Base: pOut, Index: w, Scale: 4}, RAX)
	VMOVAPS(Z13, Z2)
	VPERMT2PS(Z14, zLo, Z2)
	VMOVAPS(Z13, Z3)
	VPERMT2PS(Z14, zHi, Z3)
	VMOVUPS(Z2, K1, Mem{Base: RAX})
	VMOVUPS(Z3, K2, Mem{Base: RAX, Disp: 64})
	ADDQ(U32(128), pIn)
	ADDQ(U32(128), pOut)
	ADDQ(U8(64), pDy)
	SUBQ(U8(16), rem)
	JG(LabelRef("chunk"))
	LEAQ(Mem{Base: x, Index: w, Scale: 8}, x)
	LEAQ(Mem{Base: dx, Index: w, Scale: 8}, dx)
	LEAQ(Mem{Base: dy, Index: ow, Scale: 4}, dy)
	DECQ(oh)
	JNE(LabelRef("row"))
	Label("done")
	VZEROUPPER()
	RET()
}

// convPackF32 emits convPackF32_<nv>(d, x *float32, ktab *int32, kb int,
// cols *int32, s, w, mask, h, wd int) and, with rows,
// convPackRowsF32_<nv> with the same arguments: the implicit-im2col
// packers of the convolution GEMM (convPackGo in package kernels). For kb
// rows k of the im2col matrix and nv vectors of 16 columns r,
//
//	d[k·w + r] = x[base[r] + kOff_k]  if iy[r]+di_k < h and ix[r]+dj_k < wd (unsigned), else 0
//
// where ktab holds kOff, di, dj, 0 per row and cols the arrays base, iy,
// ix, s elements apart. convPackF32 gathers each vector (VGATHERDPS);
// convPackRowsF32 is for vectors whose lanes are consecutive input
// elements (base[r] = base[r0] + r − r0 in every lane the mask can admit),
// which it loads with one zero-masked move. The last vector is stored
// under mask (w may be less than 16·nv).
func convPackF32(nv int, rows bool) {
	name := fmt.Sprintf("convPackF32_%d", nv)
	how := "gathers"
	if rows {
		name = fmt.Sprintf("convPackRowsF32_%d", nv)
		how = "loads runs of"
	}
	emit.Func(name, "func(d, x *float32, ktab *int32, kb int, cols *int32, s, w, mask, h, wd int)",
		fmt.Sprintf("%s %s kb rows of %d columns of an implicit im2col matrix (see convPackF32 in the generator).", name, how, 16*nv))
	d, x, ktab, kb, cols, s := RDI, RSI, RDX, RCX, R8, R9
	emit.Params("d x ktab kb cols s", d, x, ktab, kb, cols, s)
	SHLQ(U8(2), s)
	base := []VecPhysical{Z0, Z1}
	base0 := []GPPhysical{R11, R12} // rows: lane 0's base per vector
	iy := []VecPhysical{Z2, Z3}
	ix := []VecPhysical{Z4, Z5}
	out := []VecPhysical{Z6, Z7}
	zh, zw := Z30, Z31
	for v := 0; v < nv; v++ {
		if rows {
			MOVLQSX(Mem{Base: cols, Disp: 64 * v}, base0[v])
		} else {
			VMOVDQU32(Mem{Base: cols, Disp: 64 * v}, base[v])
		}
		VMOVDQU32(Mem{Base: cols, Index: s, Scale: 1, Disp: 64 * v}, iy[v])
		VMOVDQU32(Mem{Base: cols, Index: s, Scale: 2, Disp: 64 * v}, ix[v])
	}
	Load(Param("h"), RAX)
	VPBROADCASTD(EAX, zh)
	Load(Param("wd"), RAX)
	VPBROADCASTD(EAX, zw)
	Load(Param("mask"), RAX)
	KMOVW(EAX, K3)
	Load(Param("w"), R10)
	SHLQ(U8(2), R10)
	TESTQ(kb, kb)
	JE(LabelRef("done"))
	Label("row")
	if rows {
		MOVLQSX(Mem{Base: ktab}, RBX) // kOff
	}
	for v := 0; v < nv; v++ {
		t := []VecPhysical{Z8, Z9, Z10}
		VPADDD_BCST(Mem{Base: ktab, Disp: 4}, iy[v], t[0])
		VPCMPUD(U8(1), zh, t[0], K1) // iy + di < h
		VPADDD_BCST(Mem{Base: ktab, Disp: 8}, ix[v], t[1])
		VPCMPUD(U8(1), zw, t[1], K1, K2) // and ix + dj < wd
		if rows {
			LEAQ(Mem{Base: RBX, Index: base0[v], Scale: 1}, RAX)
			VMOVUPS_Z(Mem{Base: x, Index: RAX, Scale: 4}, K2, out[v])
			continue
		}
		VPADDD_BCST(Mem{Base: ktab}, base[v], t[2])
		VPXORD(out[v], out[v], out[v])
		VGATHERDPS(Mem{Base: x, Index: t[2], Scale: 4}, K2, out[v])
	}
	for v := 0; v < nv; v++ {
		if v+1 < nv {
			VMOVUPS(out[v], Mem{Base: d, Disp: 64 * v})
		} else {
			VMOVUPS(out[v], K3, Mem{Base: d, Disp: 64 * v})
		}
	}
	ADDQ(R10, d)
	ADDQ(U8(16), ktab)
	DECQ(kb)
	JNE(LabelRef("row"))
	Label("done")
	VZEROUPPER()
	RET()
}

// convPackPairsF32 emits convPackPairsF32_<nv>(d, x *float32, ktab *int32,
// kb int, cols *int32, s, w, mask, h, wd int, idx *int32): convPackF32
// for vectors each of whose halves reads every other input element
// (base[r] = base[h] + 2(r − h) for the lanes r of the half that starts
// at lane h, in every lane the mask can admit: a convolution with column
// stride 2, within one output row or, on a map 8 wide or ending in 8
// columns, in two). Each vector is two zero-masked moves of 16
// consecutive elements from lane 0's and lane 8's bases, under masks that
// admit the even elements of the admitted lanes (PDEP spreads the lane
// mask over them; BMI2), and a two-table permute by idx (0, 2, …, 30)
// that keeps the even ones: the values the gather reads, without
// gathering. (Within one row, lane 8's base is lane 0's plus 16.)
func convPackPairsF32(nv int) {
	name := fmt.Sprintf("convPackPairsF32_%d", nv)
	emit.Func(name, "func(d, x *float32, ktab *int32, kb int, cols *int32, s, w, mask, h, wd int, idx *int32)",
		fmt.Sprintf("%s loads every other element of kb rows of %d columns of an implicit im2col matrix (see convPackPairsF32 in the generator).", name, 16*nv))
	d, x, ktab, kb, cols, s := RDI, RSI, RDX, RCX, R8, R9
	emit.Params("d x ktab kb cols s", d, x, ktab, kb, cols, s)
	SHLQ(U8(2), s)
	base0 := []GPPhysical{R11, R12} // lane 0's base per vector
	base8 := []GPPhysical{R13, R14} // lane 8's
	iy := []VecPhysical{Z2, Z3}
	ix := []VecPhysical{Z4, Z5}
	out := []VecPhysical{Z6, Z7}
	hi := []VecPhysical{Z11, Z12}
	zh, zw, zidx := Z30, Z31, Z0
	for v := 0; v < nv; v++ {
		MOVLQSX(Mem{Base: cols, Disp: 64 * v}, base0[v])
		MOVLQSX(Mem{Base: cols, Disp: 64*v + 32}, base8[v])
		VMOVDQU32(Mem{Base: cols, Index: s, Scale: 1, Disp: 64 * v}, iy[v])
		VMOVDQU32(Mem{Base: cols, Index: s, Scale: 2, Disp: 64 * v}, ix[v])
	}
	Load(Param("idx"), RAX)
	VMOVDQU32(Mem{Base: RAX}, zidx)
	Load(Param("h"), RAX)
	VPBROADCASTD(EAX, zh)
	Load(Param("wd"), RAX)
	VPBROADCASTD(EAX, zw)
	Load(Param("mask"), RAX)
	KMOVW(EAX, K3)
	Load(Param("w"), R10)
	SHLQ(U8(2), R10)
	even := evenBits()
	TESTQ(kb, kb)
	JE(LabelRef("done"))
	Label("row")
	MOVLQSX(Mem{Base: ktab}, RBX) // kOff
	for v := 0; v < nv; v++ {
		t := []VecPhysical{Z8, Z9}
		VPADDD_BCST(Mem{Base: ktab, Disp: 4}, iy[v], t[0])
		VPCMPUD(U8(1), zh, t[0], K1) // iy + di < h
		VPADDD_BCST(Mem{Base: ktab, Disp: 8}, ix[v], t[1])
		VPCMPUD(U8(1), zw, t[1], K1, K2) // and ix + dj < wd
		KMOVW(K2, EAX)
		PDEPL(even, EAX, R9L) // lanes 0–7 to the even elements of the first 16 (s is no longer needed)
		SHRL(U8(8), EAX)
		PDEPL(even, EAX, EAX) // lanes 8–15 to those of the next 16
		KMOVW(R9L, K4)
		KMOVW(EAX, K5)
		LEAQ(Mem{Base: RBX, Index: base0[v], Scale: 1}, R8)
		VMOVUPS_Z(Mem{Base: x, Index: R8, Scale: 4}, K4, out[v])
		LEAQ(Mem{Base: RBX, Index: base8[v], Scale: 1}, R8)
		VMOVUPS_Z(Mem{Base: x, Index: R8, Scale: 4}, K5, hi[v])
		VPERMT2PS(hi[v], zidx, out[v])
	}
	for v := 0; v < nv; v++ {
		if v+1 < nv {
			VMOVUPS(out[v], Mem{Base: d, Disp: 64 * v})
		} else {
			VMOVUPS(out[v], K3, Mem{Base: d, Disp: 64 * v})
		}
	}
	ADDQ(R10, d)
	ADDQ(U8(16), ktab)
	DECQ(kb)
	JNE(LabelRef("row"))
	Label("done")
	VZEROUPPER()
	RET()
}
